"""The rounding rule and the quantizer's math."""
import numpy as np
import pytest

from cuvil_sdk.quant.quantize import asymmetric
from cuvil_sdk.kernels.requant import (add_multipliers, add_rule, dequantize, quantize_float, quantize_multiplier,
                                     requant)
from cuvil_sdk.ops.conv import symmetric_per_channel


@pytest.mark.parametrize("real", [1e-9, 3.1e-5, 0.0123, 0.5, 0.999999, 1.0, 1.7, 300.0])
def test_multiplier_and_shift_represent_the_factor(real):
    m, s = quantize_multiplier(real)
    assert 1 <= s <= 62
    assert m < 2**31
    if real > 1e-8:
        assert 2**30 <= m and abs(m / 2**s - real) <= real * 2**-30


def test_requant_rounds_half_up_and_matches_exact_division():
    acc = np.arange(-5000, 5000, dtype=np.int64)
    m, s = quantize_multiplier(0.25)  # exact power of two: y = round_half_up(acc / 4)
    assert np.array_equal(requant(acc, m, s), np.floor(acc / 4 + 0.5).astype(np.int64))
    assert requant(np.array([2]), m, s)[0] == 1 and requant(np.array([-2]), m, s)[0] == 0


def test_requant_close_to_real_product_for_large_accumulators():
    rng = np.random.default_rng(0)
    acc = rng.integers(-2**31, 2**31 - 1, 1000)
    m, s = quantize_multiplier(0.000731)
    assert np.abs(requant(acc, m, s) - acc * 0.000731).max() <= 1.0


def test_boundary_quantization_is_float32_exact_and_handles_nan():
    x = np.array([0.0, 0.5, -0.5, 1e9, -1e9, np.nan, np.inf], dtype=np.float32)
    q = quantize_float(x, 0.5, -3)
    assert q.tolist() == [-3, -2, -4, 127, -128, -128, 127]  # x/s = -1 exactly: stays -1
    assert dequantize(q, 0.5, -3)[0] == 0.0


def test_asymmetric_params_keep_zero_exact():
    qp = asymmetric(0.2, 3.0)  # range widened to include 0
    s, z = qp.scalar()
    assert z == -128 and s == pytest.approx(3.0 / 255, rel=1e-6)
    s, z = asymmetric(-1.0, 1.0).scalar()
    assert dequantize(np.array([z], np.int8), s, z)[0] == 0.0


def test_symmetric_per_channel_weights():
    w = np.array([[1.0, -2.0], [0.0, 0.0], [0.5, 0.25]], dtype=np.float32)
    q, scale = symmetric_per_channel(w, axis=0)
    assert q.dtype == np.int8 and np.abs(q).max() <= 127
    assert q[0].tolist() == [64, -127] and q[1].tolist() == [0, 0] and q[2].tolist() == [127, 64]
    assert scale[0] == pytest.approx(2.0 / 127)


def test_add_rule_stays_in_int32_and_is_accurate():
    ma, mb, s = add_multipliers(0.8, 1.3)
    assert max(ma, mb) < 2**21 and 1 <= s <= 30
    a = np.arange(-128, 128, dtype=np.int8)
    y = add_rule(a, a[::-1], 3, -7, ma, mb, s)
    want = (a.astype(np.float64) - 3) * 0.8 + (a[::-1].astype(np.float64) + 7) * 1.3
    assert np.abs(y - want).max() <= 0.5 + 1e-3
