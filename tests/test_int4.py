"""int4 weights on the host, without a toolchain: the packing of kernels/int4.py, the int4 rule
of the quantizer, the Cortex-M DSP nibble streams decoded as the assembly decodes them, the
choice of `--weight-bits auto`, and the options' refusals (exit 2, one line). Builds and runs on
the boards are board_tests/test_int4_boards.py's and the kernel grids'."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.cli import main
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels import int4
from cuvil_sdk.kernels.cortex_m_dsp import rules as dsp
from cuvil_sdk.ops.conv import int4_clip_scales, symmetric_per_channel
from cuvil_sdk.request import new_request

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
DIGITS, CALIB = EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy"
RNG = np.random.default_rng(28)


# --- packing -----------------------------------------------------------------------------------
def test_pack_two_per_byte_low_nibble_first_and_back():
    values = RNG.integers(-8, 8, 37)  # odd: the last byte's high nibble is 0
    packed = int4.pack(values)
    assert packed.dtype == np.uint8 and len(packed) == 19
    assert packed[0] == (values[0] & 15) | ((values[1] & 15) << 4) and packed[-1] == values[-1] & 15
    assert np.array_equal(int4.unpack(packed, 37), values)
    with pytest.raises(ValueError):
        int4.pack(np.array([8]))


def test_simd_groups_unpack_as_the_kernels_do():
    """pack_groups: per 16 weights 8 bytes; the low nibbles then the high ones, sign-extended
    (templates/simd/int4.j2: masks and a table, or shifts), give the 16 weights back in order."""
    stream = RNG.integers(-8, 8, 64)
    packed = int4.pack_groups(stream).view(np.uint8).reshape(-1, 8).astype(np.int64)
    nibbles = np.concatenate([packed & 15, packed >> 4], axis=1)
    assert np.array_equal(((nibbles ^ 8) - 8).reshape(-1), stream)


def test_int4_rule_is_symmetric_per_channel_within_7():
    """int4 weights are symmetric per channel in [-7, 7], scale max|w| / 7 (each channel reaches
    +/-7); the clipped scales (int4_clip_scales, kept per layer where the model measures better)
    are c max|w| / 7, c in [0.5, 1], of least squared error, never worse than max|w| / 7."""
    w = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)
    w[2] *= 1e-3
    q, scale = symmetric_per_channel(w, 0, bits=4)
    rows, amax = w.reshape(6, -1).astype(np.float64), np.abs(w.reshape(6, -1)).max(axis=1)
    assert q.dtype == np.int8 and np.all(np.abs(q.reshape(6, -1)).max(axis=1) == 7)
    assert np.allclose(scale, amax / 7, rtol=1e-6)
    clipped = int4_clip_scales(w, 0)
    assert np.all(clipped <= amax / 7 * (1 + 1e-6)) and np.all(clipped >= amax / 14 * (1 - 1e-6))
    qc, sc = symmetric_per_channel(w, 0, bits=4, scale=clipped)
    assert int(np.abs(qc).max()) <= 7 and np.array_equal(sc, clipped)
    error = ((qc.reshape(6, -1) * clipped.reshape(-1, 1) - rows) ** 2).sum(axis=1)
    assert np.all(error <= ((q.reshape(6, -1) * scale.reshape(-1, 1) - rows) ** 2).sum(axis=1) * (1 + 1e-6))
    wide = RNG.standard_normal((8, 576)).astype(np.float32)  # 576 Gaussian weights a channel: the tails clipped
    assert np.all(int4_clip_scales(wide, 0) < np.abs(wide).max(axis=1) / 7 * 0.95)
    q8, scale8 = symmetric_per_channel(w, 0)
    assert np.allclose(scale8, amax / 127, rtol=1e-6) and int(np.abs(q8).max()) == 127


# --- the Cortex-M DSP nibble streams, decoded as the assembly does ---------------------------------
def sxtb16(word: int, ror8: bool) -> tuple[int, int]:
    """SXTB16 (ROR 8): bytes 0 and 2 (1 and 3) of a 32-bit word, sign-extended."""
    b = [(word >> (8 * i)) & 255 for i in range(4)]
    pick = (b[1], b[3]) if ror8 else (b[0], b[2])
    return tuple(v - 256 if v >= 128 else v for v in pick)


def test_tile_stream_nibbles_give_16_w_per_step():
    """tile_streams(w4): per channel pair [16 b0, 16 b1], then per two value pairs one word whose
    AND 0xF0F0F0F0 (step s) and (LSL 4) AND 0xF0F0F0F0 (step s + 1) give, by SXTB16 and SXTB16 ROR 8,
    16 x the weights of channel 2j and 2j + 1 at values 2s, 2s + 1 (conv2d_s8_dsp.h.j2)."""
    oc, kp = 3, 12
    wk = RNG.integers(-8, 8, (oc, kp))
    bias = RNG.integers(-1000, 1000, oc)
    q = np.zeros((oc, 3), dtype=np.int32)
    stream = dsp.tile_streams(wk, bias, q, True, w4=True).view("<u2").astype(np.int64)
    words = stream[0::2] | (stream[1::2] << 16)
    per_pair = 2 + kp // 4 + 6
    w = np.vstack([wk, np.zeros((1, kp), dtype=np.int64)])  # the odd count's zero channel
    for j in range(2):
        block = words[j * per_pair:(j + 1) * per_pair]
        assert [int(v) if v < 2**31 else int(v) - 2**32 for v in block[:2]] == [16 * int(v) for v in
                                                                              np.append(bias, 0)[2 * j:2 * j + 2]]
        for t in range(kp // 4):
            word = int(block[2 + t])
            for step, masked in ((2 * t, word & 0xF0F0F0F0), (2 * t + 1, (word << 4) & 0xF0F0F0F0)):
                for channel, ror in ((2 * j, False), (2 * j + 1, True)):
                    assert sxtb16(masked, ror) == (16 * w[channel, 2 * step], 16 * w[channel, 2 * step + 1])


def test_fc_nibbles_are_the_int8_pair_lanes_times_16():
    """pair_nibbles: the masked words are pair_lanes' words of 16 x the weights: lanes
    16 (256 wA + wB + 8) = 256 (16 wA) + (16 wB + 128), so the int8 K4 block and its fix
    (B = T - 256 A - 128 sum(x)) run unchanged on 16 x the sums."""
    wk = RNG.integers(-8, 8, (8, 16))
    nib = dsp.pair_nibbles(wk).view("<u2").astype(np.int64)
    words = (nib[:, 0::2] | (nib[:, 1::2] << 16)).reshape(-1)
    masked = np.concatenate([[w & 0xF0F0F0F0, (w << 4) & 0xF0F0F0F0] for w in words])
    lanes = dsp.pair_lanes(wk).view("<u2").astype(np.int64)  # int8 lanes 256 wA + wB + 128
    int8_words = (lanes[:, 0::2] | (lanes[:, 1::2] << 16)).reshape(-1)
    for m, v in zip(masked, int8_words):
        for half in (0, 1):
            lane_w4 = (int(m) >> (16 * half)) & 0xFFFF
            hi, lo = (lane_w4 >> 8) & 255, lane_w4 & 255
            v_lane = (int(v) >> (16 * half)) & 0xFFFF
            wa, wb = ((v_lane >> 8) & 255) - (256 if (v_lane >> 8) & 128 else 0), (v_lane & 255) - 128
            assert (hi - (256 if hi & 128 else 0), lo) == (16 * wa, 16 * wb + 128)


def test_x16_fits_and_its_limits():
    """The int4 blocks accumulate 16 x the sums: a channel's |bias| + 255 sum|w| must stay within
    2^27 and its shift within 58; otherwise the layer keeps int8 bytes (with that reason)."""
    class Arg:
        def __init__(self, data):
            self.data = data
    w = np.full((2, 9), 7, dtype=np.int8)
    ok = {"w": Arg(w), "bias": Arg(np.array([1000, -1000])), "shift": Arg(np.array([40, 58]))}
    assert dsp.x16_fits(ok) == ""
    assert "2^27" in dsp.x16_fits({**ok, "bias": Arg(np.array([dsp.X16_LIMIT, 0]))})
    assert "58" in dsp.x16_fits({**ok, "shift": Arg(np.array([40, 59]))})


# --- --weight-bits auto --------------------------------------------------------------------------
def test_auto_keeps_the_cosine_target(capsys):
    """auto with --accuracy-target: the chosen int4 layers keep the model's cosine to the float
    model at or above the target (as measured on the calibration data); a target the int8 model
    itself barely reaches leaves fewer int4 layers than a loose one."""
    loose = new_request(DIGITS, board="cortex-m7", profile="lite", calib=str(CALIB), weight_bits="auto",
                        accuracy_target=0.95)
    g = frontend_and_passes(loose)
    chosen = quantize(g, loose)
    said = capsys.readouterr().err
    assert "weight bits auto:" in said and "(target 0.95000)" in said
    reached = float(said.split(" layer(s) reach ")[1].split()[0])
    assert reached >= 0.95 and len(chosen["int4_layers"]) == 5, said
    for node in (n for n in g.nodes if n.weight_bits == 4):  # max|w| / 7, or the clipped scales that measured better
        assert node.int4_scale is None or len(node.int4_scale) == len(node.q["mult"])
    tight = new_request(DIGITS, board="cortex-m7", profile="lite", calib=str(CALIB), weight_bits="auto",
                        accuracy_target=0.9999)
    g = frontend_and_passes(tight)
    few = quantize(g, tight)
    said = capsys.readouterr().err
    assert len(few["int4_layers"]) < 5 and all(n.weight_bits == (4 if n.name in few["int4_layers"] else 8)
                                               for n in g.nodes if n.op in ("Conv", "Gemm")), said


# --- refusals: exit 2, one line --------------------------------------------------------------------
def refused(args: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("cuvil-sdk: error: "), err.getvalue()
    return lines[0][len("cuvil-sdk: error: "):]


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_weight_bits_on_a_float_build_is_refused(tmp_path, precision):
    msg = refused(["compile", str(DIGITS), "--board", "rpi5", "--profile", "standard", "--precision", precision,
                   "--weight-bits", "4", "-o", str(tmp_path / "out")])
    assert msg == f"--weight-bits applies to int8 builds, not --precision {precision}"
    assert not (tmp_path / "out").exists()


def test_int4_layers_and_weight_bits_together_are_refused(tmp_path):
    msg = refused(["compile", str(DIGITS), "--board", "host", "--profile", "standard", "--calib", str(CALIB),
                   "--weight-bits", "auto", "--int4-layers", "/f/f.0/Conv", "-o", str(tmp_path / "out")])
    assert msg == "--int4-layers names the int4 layers itself: not with --weight-bits auto"


@pytest.mark.parametrize("layer, says", [("nope", "--int4-layers names no layer: nope (layers that can be int4: "
                                                    "/f/f.0/Conv, /f/f.3/Conv, /f/f.6/Conv, /f/f.10/Conv, /f/f.14/Gemm)"),
                                         ("/f/f.9/MaxPool", "layer '/f/f.9/MaxPool' (MaxPool) cannot have int4 weights: "
                                                            "MaxPool has no weights")])
def test_int4_layers_names_layers_that_can_have_them(tmp_path, layer, says):
    assert refused(["compile", str(DIGITS), "--board", "host", "--profile", "standard", "--calib", str(CALIB),
                    "--int4-layers", layer, "-o", str(tmp_path / "out")]) == says


def test_weight_bits_in_cuvil_toml(tmp_path):
    """weight-bits = 4 (an integer) or "auto" in cuvil.toml; any other value is refused by name."""
    (tmp_path / "cuvil.toml").write_text(f'board = "host"\nprofile = "standard"\nweight-bits = 3\n'
                                         f'[[models]]\nmodel = "{DIGITS}"\ncalib = "{CALIB}"\n')
    assert refused(["build", "--config", str(tmp_path / "cuvil.toml"),
                    "-o", str(tmp_path / "out")]) == "weight bits '3': expected 4, 8 or auto"


def test_auto_needs_calibration_data(tmp_path):
    msg = refused(["compile", str(EXAMPLES / "resnet8_qdq.onnx"), "--board", "host", "--profile", "standard",
                   "--weight-bits", "auto", "-o", str(tmp_path / "out")])
    assert msg == "--weight-bits auto needs calibration data (--calib) to measure each layer's sensitivity on"


def test_helium_declines_int4_layers_in_the_fallbacks(tmp_path):
    """cortex-m55: the Helium set has no int4 kernels; each int4 layer runs the DSP set's int4
    kernel and says so (build output and fallbacks), never silently."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["compile", str(DIGITS), "--board", "cortex-m55", "--profile", "lite", "--calib", str(CALIB),
                     "--weight-bits", "4", "-o", str(tmp_path / "out")])
    assert code == 0, err.getvalue()
    said = [line for line in err.getvalue().splitlines() if "helium: no Helium kernel for int4 weights" in line]
    assert len(said) == 5 and all("runs the fallback kernel conv2d_s8_dsp" in line or
                                  "runs the fallback kernel fc_s8_dsp" in line for line in said), said
