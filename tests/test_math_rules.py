"""The int8 rules of the math, reduction, softmax and normalization ops on edge values, in
numpy (the C kernels equal these bit for bit: board_tests/test_math_kernels.py). Each test
builds a one-node IR graph with chosen quantization parameters, runs the op's `quantize` and
`run_int`, and compares with the real-valued result of the dequantized codes."""
from __future__ import annotations

import numpy as np
import pytest

from cuvil_sdk.errors import ModelError
from cuvil_sdk.ir import Graph, Node, Tensor
from cuvil_sdk.ops import get_op
from cuvil_sdk.ops.common import per_tensor
from cuvil_sdk.kernels.requant import dequantize

CODES = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
# every pair of codes: a varies along axis 0, b along axis 1
PAIR_A, PAIR_B = np.meshgrid(CODES, CODES, indexing="ij")


def graph(op: str, inputs: dict[str, tuple], out_q: tuple[float, int] | None, attrs=None,
          consts: dict[str, np.ndarray] | None = None) -> tuple[Graph, Node]:
    """inputs: name -> (shape, scale, zero point); consts: name -> data; output `y`."""
    g = Graph("rule")
    for name, (shape, scale, zp) in inputs.items():
        g.tensors[name] = Tensor(name, tuple(shape), "int8", q=per_tensor(scale, zp))
        g.inputs.append(name)
    for name, data in (consts or {}).items():
        g.tensors[name] = Tensor(name, data.shape, str(data.dtype), data)
    node = Node(op, f"{op.lower()}0", list(inputs) + list(consts or {}), ["y"], dict(attrs or {}))
    g.nodes.append(node)
    opdef = get_op(op)
    shape = opdef.infer(node, g)[0]
    fixed = opdef.fixed_qparams(node, g)
    g.tensors["y"] = Tensor("y", tuple(shape), "int8", q=fixed if fixed is not None else per_tensor(*out_q))
    g.outputs = ["y"]
    opdef.quantize(node, g)
    return g, node


def run(g: Graph, node: Node, *xs: np.ndarray) -> np.ndarray:
    extra = [g.tensors[i].data for i in node.inputs[len(xs):]]
    return get_op(node.op).run_int(node, g, list(xs) + extra)[0]


def ideal(real: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """The real value's nearest code (float64), saturated."""
    return np.clip(np.floor(real / scale + 0.5) + zp, -128, 127)


@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_max_pick_the_requantized_operand(op):
    """On every pair of codes, within one step of the real min/max (the requantization of
    one operand, rounded once)."""
    sa, za, sb, zb, sy, zy = 0.05, 3, 0.11, -20, 0.08, 5
    g, node = graph(op, {"a": ((256, 256), sa, za), "b": ((256, 256), sb, zb)}, (sy, zy))
    got = run(g, node, PAIR_A, PAIR_B).astype(np.int64)
    ra, rb = dequantize(PAIR_A, sa, za).astype(np.float64), dequantize(PAIR_B, sb, zb).astype(np.float64)
    want = ideal(np.minimum(ra, rb) if op == "Min" else np.maximum(ra, rb), sy, zy)
    assert np.abs(got - want).max() <= 1


def test_sub_is_add_with_the_second_operand_negated():
    sa, za, sb, zb, sy, zy = 0.05, 3, 0.11, -20, 0.12, -7
    g, node = graph("Sub", {"a": ((256, 256), sa, za), "b": ((256, 256), sb, zb)}, (sy, zy))
    assert node.q["mb"] < 0 < node.q["ma"]
    got = run(g, node, PAIR_A, PAIR_B).astype(np.int64)
    real = dequantize(PAIR_A, sa, za).astype(np.float64) - dequantize(PAIR_B, sb, zb).astype(np.float64)
    assert np.abs(got - ideal(real, sy, zy)).max() <= 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_div_of_activations_saturates_at_zero_divisor():
    sa, za, sb, zb, sy, zy = 0.05, 3, 0.02, -20, 0.25, 0
    g, node = graph("Div", {"a": ((256, 256), sa, za), "b": ((256, 256), sb, zb)}, (sy, zy))
    got = run(g, node, PAIR_A, PAIR_B).astype(np.int64)
    num = PAIR_A.astype(np.int64) - za
    zero = PAIR_B == zb
    assert (got[zero & (num > 0)] == 127).all() and (got[zero & (num < 0)] == -128).all()
    assert (got[zero & (num == 0)] == -128).all()  # 0 / 0: NaN, which quantizes to -128
    real = (dequantize(PAIR_A, sa, za).astype(np.float64) / dequantize(PAIR_B, sb, zb).astype(np.float64))[~zero]
    assert np.abs(got[~zero] - ideal(real, sy, zy)).max() <= 1


def test_div_by_a_constant_tensor_is_mul_by_its_reciprocal():
    divisor = np.array([0.5, 2.0, -4.0, 8.0], np.float32)
    g, node = graph("Div", {"a": ((256, 4), 0.05, 3)}, (0.4, 0), consts={"d": divisor})
    assert "mult" in node.q and "scale" not in node.q
    x = np.repeat(CODES[:, None], 4, axis=1)
    got = run(g, node, x).astype(np.int64)
    real = dequantize(x, 0.05, 3).astype(np.float64) / divisor
    assert np.abs(got - ideal(real, 0.4, 0)).max() <= 1


def test_constant_scalar_operand_makes_a_table():
    """Pow(x, 2) and Sub(1.5, x): a lookup table of the activation, exact per code."""
    g, node = graph("Pow", {"a": ((256,), 0.02, 0)}, (0.03, -128), consts={"e": np.array(2.0, np.float32)})
    assert node.q["table"].shape == (256,)
    real = dequantize(CODES, 0.02, 0).astype(np.float64) ** 2
    assert np.array_equal(run(g, node, CODES).astype(np.int64), ideal(real, 0.03, -128))
    g = Graph("rule")
    g.tensors["c"] = Tensor("c", (), "float32", np.array(1.5, np.float32))
    g.tensors["a"] = Tensor("a", (256,), "int8", q=per_tensor(0.02, 0))
    g.tensors["y"] = Tensor("y", (256,), "int8", q=per_tensor(0.03, 0))
    node = Node("Sub", "sub0", ["c", "a"], ["y"])
    get_op("Sub").quantize(node, g)
    got = get_op("Sub").run_int(node, g, [g.tensors["c"].data, CODES])[0].astype(np.int64)
    assert np.array_equal(got, ideal(1.5 - dequantize(CODES, 0.02, 0).astype(np.float64), 0.03, 0))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pow_of_two_activations_is_a_full_table():
    g, node = graph("Pow", {"a": ((256, 256), 0.01, -128), "b": ((256, 256), 0.02, 0)}, (0.05, -128))
    assert node.q["table2"].shape == (65536,)
    got = run(g, node, PAIR_A, PAIR_B).astype(np.int64)
    real = dequantize(PAIR_A, 0.01, -128).astype(np.float64) ** dequantize(PAIR_B, 0.02, 0).astype(np.float64)
    finite = np.isfinite(real)
    assert np.abs(got[finite] - ideal(real[finite], 0.05, -128)).max() <= 1


def test_prelu_rule_per_channel():
    slope = np.array([0.25, -0.5, 1.5], np.float32).reshape(3, 1)
    g, node = graph("PRelu", {"x": ((3, 256), 0.05, 7)}, (0.06, -3), consts={"s": slope})
    x = np.tile(CODES, (3, 1))
    got = run(g, node, x).astype(np.int64)
    rx = dequantize(x, 0.05, 7).astype(np.float64)
    real = np.where(rx >= 0, rx, rx * slope)
    assert np.abs(got - ideal(real, 0.06, -3)).max() <= 1


def test_logsoftmax_within_one_step_of_float():
    rng = np.random.default_rng(0)
    rows = rng.integers(-128, 128, (64, 10)).astype(np.int8)
    rows[0] = 5  # every value equal: L = round(ln 10 / sy)
    rows[1] = -128
    rows[1, 3] = 127  # one dominant value: exp of the others underflows the table to 0
    sx = 0.06
    g, node = graph("LogSoftmax", {"x": ((64, 10), sx, -2)}, None, {"axis": -1})
    assert g.tensors["y"].q.scalar() == (np.float32(16 / 256), 127)
    got = run(g, node, rows).astype(np.int64)
    x = dequantize(rows, sx, -2).astype(np.float64)
    shifted = x - x.max(axis=1, keepdims=True)
    real = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    assert np.abs(got - ideal(real, 16 / 256, 127)).max() <= 1
    assert got[0, 0] == 127 - round(np.log(10) / (16 / 256)) and got[1, 3] == 127


def test_softmax_along_a_middle_axis_sums_to_one():
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (2, 7, 3)).astype(np.int8)
    g, node = graph("Softmax", {"x": ((2, 7, 3), 0.1, 0)}, None, {"axis": 1})
    got = dequantize(run(g, node, x), 1 / 256, -128).astype(np.float64)
    assert np.abs(got.sum(axis=1) - 1.0).max() < 7 / 256


def test_norm_rule_constant_row_and_random_rows():
    """A constant row normalizes to exactly 0, so the output is beta's code; random rows are
    within one step of the float formula."""
    gamma, beta = np.array([1.5, -0.5, 2.0], np.float32), np.array([0.25, -1.0, 0.5], np.float32)
    g, node = graph("InstanceNormalization", {"x": ((2, 3, 16), 0.05, 4)}, (0.04, 1), {"epsilon": 1e-5},
                    consts={"s": gamma, "b": beta})
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (2, 3, 16)).astype(np.int8)
    x[0, 1] = 9
    got = run(g, node, x).astype(np.int64)
    assert (got[0, 1] == ideal(np.float64(-1.0), 0.04, 1)).all()
    rx = dequantize(x, 0.05, 4).astype(np.float64)
    mean, var = rx.mean(axis=2, keepdims=True), rx.var(axis=2, keepdims=True)
    real = (rx - mean) / np.sqrt(var + 1e-5) * gamma[:, None] + beta[:, None]
    assert np.abs(got - ideal(real, 0.04, 1)).max() <= 1


@pytest.mark.parametrize("op, real", [
    ("ReduceSum", lambda x: x.sum(axis=1)), ("ReduceMean", lambda x: x.mean(axis=1)),
    ("ReduceMax", lambda x: x.max(axis=1)), ("ReduceMin", lambda x: x.min(axis=1)),
    ("ReduceL1", lambda x: np.abs(x).sum(axis=1)), ("ReduceL2", lambda x: np.sqrt((x * x).sum(axis=1))),
    ("ReduceSumSquare", lambda x: (x * x).sum(axis=1))])
def test_reductions_within_one_step(op, real):
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (6, 40)).astype(np.int8)
    x[0] = -128
    x[1] = 127
    sx, zx = 0.02, -5
    rx = dequantize(x, sx, zx).astype(np.float64)
    ry = real(rx)
    sy = float(np.abs(ry).max()) / 100
    g, node = graph(op, {"x": ((6, 40), sx, zx)}, (sy, 0), {"axes": [1], "keepdims": 0})
    got = run(g, node, x).astype(np.int64)
    assert got.shape == (6,)
    assert np.abs(got - ideal(ry, sy, 0)).max() <= 1


def test_squared_reduction_too_long_for_int32():
    with pytest.raises(ModelError, match="int8 squares of 40000 values overflow int32"):
        graph("ReduceL2", {"x": ((1, 40000), 0.02, 0)}, (0.5, 0), {"axes": [1]})


def test_float_only_reductions_refuse_int8():
    with pytest.raises(ModelError, match="ReduceLogSumExp.*has no int8 rule"):
        graph("ReduceLogSumExp", {"x": ((2, 5), 0.02, 0)}, (0.5, 0), {"axes": [1]})
