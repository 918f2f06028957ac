"""Models with integer tensors at run time, as PyTorch exports them (board_tests/fixtures/ints, from
scripts/make_fixtures_ints.py): a segmentation head ending in ArgMax over channels, a text
classifier taking int64 token ids (Gather embedding -> mean -> Gemm), and a detector head with
TopK + GatherND. fp32 builds (host, rpi5) give ONNX Runtime's outputs (integer outputs exactly);
int8 builds give the same outputs, bit for bit, on host (avx2), rpi5 (neon under qemu-aarch64) and
cortex-m7 (cortex_m_dsp under QEMU), and the numpy integer reference's. An ArgMax grid checks the
fast kernel sets' ArgMax / ArgMin (ties, select_last_index, channel planes and channels-last rows,
tails) against the reference on the same three boards, and that each set runs its own kernel.
"""
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import cuvil_sdk
import int_cases
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.boards import get_board
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model
from cuvil_sdk.request import CompileRequest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ints"
MODELS = ("seg_argmax", "text_classifier", "detector_head")
BOARDS_INT8 = ("host", "rpi5", "cortex-m7")
FAST_ARGMAX = {"host": "argmax_s8_avx2", "rpi5": "argmax_s8_neon", "cortex-m7": "argmax_s8_dsp"}
pytestmark = pytest.mark.slow  # builds for three boards, two of them under QEMU


def inputs(model: str, count: int, seed: int) -> np.ndarray:
    """`count` samples of the model's one input, on its batch axis (token ids in [0, 100): the
    embedding's rows)."""
    rng = np.random.default_rng(seed)
    if model == "text_classifier":
        return rng.integers(0, 100, (count, 12)).astype(np.int64)
    shape = {"seg_argmax": (3, 16, 16), "detector_head": (8, 6, 6)}[model]
    return rng.standard_normal((count, *shape)).astype(np.float32)


def onnxruntime_outputs(path: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    runs = [session.run(None, {name: x[i:i + 1]}) for i in range(len(x))]
    return {o.name: np.stack([r[k] for r in runs]) for k, o in enumerate(session.get_outputs())}


def build(path: Path, board: str, precision: str, tmp: Path, calib: np.ndarray | None = None):
    profile = "lite" if precision == "int8" else "standard"  # one profile for every board's int8 build
    return cuvil_sdk.build(str(path), board=board, profile=profile, precision=precision, calib=calib,
                           out_dir=str(tmp / f"{path.stem}-{board}-{precision}"))


@pytest.mark.parametrize("board", ["host", "rpi5"])
@pytest.mark.parametrize("model", MODELS)
def test_fp32_equals_onnxruntime(tmp_path, model, board):
    path = FIXTURES / f"{model}.onnx"
    x = inputs(model, 3, seed=1)
    got = build(path, board, "fp32", tmp_path).run(x)
    want = onnxruntime_outputs(path, x)
    for name, w in want.items():
        y = got[name].reshape(w.shape)
        if w.dtype.kind in "iub":
            assert y.dtype == w.dtype
            np.testing.assert_array_equal(y, w, err_msg=name)
        else:
            np.testing.assert_allclose(y, w, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_int8_same_outputs_on_every_board(tmp_path, model):
    path = FIXTURES / f"{model}.onnx"
    x, calib = inputs(model, 3, seed=2), inputs(model, 16, seed=3)
    req = CompileRequest(model=path, board=get_board("host"), profile=get_profile("lite"), precision="int8",
                         calib=calib)
    g = frontend_and_passes(req)
    quantize(g, req)
    reference = [run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[1] for i in range(len(x))]
    want = {name: np.stack([r[name] for r in reference]) for name in g.outputs}
    for board in BOARDS_INT8:
        b = build(path, board, "int8", tmp_path, calib)
        got = b.run(x)
        for name, w in want.items():
            assert got[name].dtype == w.dtype, (board, name)
            np.testing.assert_array_equal(got[name].reshape(w.shape), w, err_msg=f"{board}: {name}")
        if model == "seg_argmax":  # the head runs per pixel on the board's own kernel set
            kernels = {layer["op"]: layer["kernel"] for layer in b.info["layers"]}
            assert kernels["ArgMax"] == FAST_ARGMAX[board]
    if model == "seg_argmax":  # an int64 class per pixel: against the float model, most pixels agree
        agree = (want["classes"] == onnxruntime_outputs(path, x)["classes"]).mean()
        assert agree > 0.9, agree


# --- the fast sets' ArgMax / ArgMin ------------------------------------------------------------------
# (name, input shape, attributes): channel planes (positions beyond 4 / 16 / 32 one by one) and
# channels-last rows (the values of a position in a row: beyond 4 / 16 / 32, a scalar tail)
GRID = [("planes", (1, 5, 6, 7), {"axis": 1, "keepdims": 0}),
        ("planes_last", (1, 9, 5, 8), {"axis": 1, "select_last_index": 1}),
        ("planes_min", (1, 37, 9), {"axis": 1}),
        ("planes_min_last", (1, 6, 35), {"axis": 1, "select_last_index": 1}),
        ("rows", (1, 6, 7, 40), {"axis": -1}),
        ("rows_last", (1, 2, 300), {"axis": 2, "select_last_index": 1}),
        ("rows_min", (1, 3, 19), {"axis": -1}),
        ("rows_min_last", (1, 4, 33), {"axis": 2, "select_last_index": 1}),
        ("planes_too_many", (1, 300, 3), {"axis": 1})]  # byte-wide indices: declined, portable


def grid_model() -> onnx.ModelProto:
    nodes, ins, outs = [], [], []
    for name, shape, attrs in GRID:
        op = "ArgMin" if "min" in name else "ArgMax"
        nodes.append(helper.make_node(op, [name], [f"{name}_y"], name=f"{name}_arg", **attrs))
        ins.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        out = list(shape)
        axis = attrs["axis"] % len(shape)
        if attrs.get("keepdims", 1):
            out[axis] = 1
        else:
            del out[axis]
        outs.append(helper.make_tensor_value_info(f"{name}_y", TensorProto.INT64, out))
    return helper.make_model(helper.make_graph(nodes, "argmax_grid", ins, outs),
                             opset_imports=[helper.make_opsetid("", 13)])


def grid_samples(count: int, seed: int) -> dict[str, np.ndarray]:
    """Values on a coarse grid (halves in [-2, 2]): many ties, also after quantization. Every input
    has a batch of 1: `count` samples on that axis."""
    rng = np.random.default_rng(seed)
    return {name: (rng.integers(-4, 5, (count, *shape[1:])) / 2).astype(np.float32) for name, shape, _ in GRID}


def test_argmax_kernels_bit_exact(tmp_path):
    path = tmp_path / "argmax_grid.onnx"
    onnx.save(grid_model(), str(path))
    x, calib = grid_samples(2, seed=4), grid_samples(8, seed=5)
    req = CompileRequest(model=path, board=get_board("host"), profile=get_profile("lite"), precision="int8",
                         calib=calib)
    g = frontend_and_passes(req)
    quantize(g, req)
    reference = [run_quantized_model(g, {n: v[i:i + 1] for n, v in x.items()})[0] for i in range(2)]
    for board in BOARDS_INT8:
        b = build(path, board, "int8", tmp_path, calib)
        got = b.run(x)
        for name in g.outputs:
            want = np.stack([r[name] for r in reference])
            np.testing.assert_array_equal(got[name].reshape(want.shape), want, err_msg=f"{board}: {name}")
        kernels = {layer["name"]: layer["kernel"] for layer in b.info["layers"]}
        for name, _, _ in GRID:
            expected = "argmax_s8" if name == "planes_too_many" else FAST_ARGMAX[board]
            assert kernels[f"{name}_arg"] == expected, (board, name, kernels[f"{name}_arg"])
        declined = [f for f in b.info["fallbacks"] if f["layer"] == "planes_too_many_arg"]
        assert declined and "byte-wide indices hold 256" in declined[0]["reason"]


# --- the portable integer kernels on every board -----------------------------------------------------
def test_integer_ops_model_on_every_board(tmp_path):
    """int_cases.py's model (casts, comparisons, logic, Where, wrapping arithmetic, reductions, ArgMax,
    TopK, the gathers, ScatterElements, OneHot, int64 data movement) in int8 on host, rpi5 and
    cortex-m7: the numpy reference bit for bit, and its integer outputs ONNX Runtime's (the layers
    of integers are the same in every build; tests/test_integer_ops.py checks each kernel's float
    build on host)."""
    path = int_cases.save(tmp_path)
    x, calib = int_cases.samples(2, seed=6), int_cases.samples(8, seed=7)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    runs = [session.run(None, {k: v[i] for k, v in x.items()}) for i in range(2)]
    want = {o.name: np.stack([r[k] for r in runs]) for k, o in enumerate(session.get_outputs())}
    req = CompileRequest(model=path, board=get_board("host"), profile=get_profile("lite"), precision="int8",
                         calib=calib)
    g = frontend_and_passes(req)
    quantize(g, req)
    reference = [run_quantized_model(g, {k: v[i] for k, v in x.items()})[1] for i in range(2)]
    exact = [name for name in g.outputs if g.tensors[name].is_integer and name not in ("an", "none_of")]
    assert len(exact) == 9  # (an, none_of: integers of quantized floats)
    for board in BOARDS_INT8:
        got = build(path, board, "int8", tmp_path, calib).run(x)
        for name in g.outputs:
            w = np.stack([r[name] for r in reference])
            np.testing.assert_array_equal(got[name].reshape(w.shape), w, err_msg=f"{board}: {name}")
        for name in exact:
            np.testing.assert_array_equal(got[name].reshape(want[name].shape), want[name], err_msg=f"{board}: {name}")
