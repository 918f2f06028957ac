"""Integer and bool tensors at run time (ops/cast.py, compare.py, index.py, gather.py, integer.py):
one-node models whose run-time input is an integer, bool or float tensor, through the real
frontend, against ONNX Runtime: the numpy reference exactly, and the C kernels of a host library
(every case compiled into one library: one gcc call) exactly as well. Then the int8 rules of the
mixed ops (a quantized input, an integer output), the run-time bounds checks of the indexing ops
(an out-of-range index is an error code and a ModelError, never a read outside a tensor), and
the typed C API and runtime (dtypes in the header and manifest, what model(x) takes).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import CompileRequest, compile_into
from cuvil_sdk.data import DataTypeError
from cuvil_sdk.errors import ModelError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.kernels.requant import dequantize
from cuvil_sdk.ops import REGISTRY
from cuvil_sdk.passes import optimize
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.calibrate import calibrate
from cuvil_sdk.quant.quantize import quantize_graph
from cuvil_sdk.reference import run_float, run_int, run_quantized_model

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cuvil_conformance_ints", ROOT / "scripts" / "conformance.py")
conformance = importlib.util.module_from_spec(_spec)
sys.modules["cuvil_conformance_ints"] = conformance
_spec.loader.exec_module(conformance)  # its batch build of many projects into one library

PROFILE, BOARD = get_profile("standard"), get_board("host")
ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int16): TensorProto.INT16,
              np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.bool_): TensorProto.BOOL}


def R(shape, dtype=np.float32, lo=None, hi=None):  # noqa: N802 (reads like the input it declares)
    """A run-time input: integers in [lo, hi) (default [-5, 6)), bool at random, floats standard
    normal x 3 (or uniform in [lo, hi))."""
    return ("input", tuple(shape), np.dtype(dtype), (lo, hi))


def C(value, dtype=np.int64):  # noqa: N802
    return ("const", np.asarray(value, dtype=dtype), None, None)


class Case:
    def __init__(self, op, inputs, outputs=1, opset=18, **attrs):
        self.op, self.inputs, self.outputs, self.opset, self.attrs = op, inputs, outputs, opset, attrs

    def model_and_feeds(self, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        rng = np.random.default_rng(seed)
        names, graph_inputs, inits, feeds = [], [], [], {}
        for i, (kind, value, dtype, bounds) in enumerate(self.inputs):
            name = f"in{i}"
            names.append(name)
            if kind == "const":
                inits.append(numpy_helper.from_array(value, name))
                continue
            graph_inputs.append(helper.make_tensor_value_info(name, ONNX_TYPES[dtype], list(value)))
            if dtype == np.bool_:
                feeds[name] = rng.random(value) < 0.5
            elif dtype.kind == "f":
                feeds[name] = (rng.standard_normal(value) * 3 if bounds[0] is None else
                               rng.uniform(bounds[0], bounds[1], value)).astype(dtype)
            else:
                lo, hi = (-5, 6) if bounds[0] is None else bounds
                feeds[name] = rng.integers(lo, hi, value).astype(dtype)
        outs = [f"y{k}" for k in range(self.outputs)]
        node = helper.make_node(self.op, names, outs, name=f"{self.op.lower()}0", **self.attrs)
        graph = helper.make_graph([node], "one", graph_inputs, [helper.make_value_info(o, onnx.TypeProto())
                                                                for o in outs], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        return model, feeds


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def typed_model(case: Case, expected: list[np.ndarray], seed: int = 0) -> onnx.ModelProto:
    """The case's model with each output's type and static shape (the ONNX checker wants them)."""
    model, _ = case.model_and_feeds(seed)
    del model.graph.output[:]
    for k, y in enumerate(expected):
        model.graph.output.append(helper.make_tensor_value_info(f"y{k}", ONNX_TYPES[y.dtype], list(y.shape)))
    return model


I64, I32, I8, U8, I16, BOOL, F32 = np.int64, np.int32, np.int8, np.uint8, np.int16, np.bool_, np.float32

CASES: dict[str, Case] = {
    # Cast: ONNX's rules (float to integer truncates and saturates; to bool x != 0; integers wrap)
    "cast-f32-i32": Case("Cast", [R((2, 7), F32)], to=TensorProto.INT32),
    "cast-f32-u8": Case("Cast", [R((3, 5), F32, -0.9, 255.9)], to=TensorProto.UINT8),
    "cast-f32-bool": Case("Cast", [R((4, 3), F32)], to=TensorProto.BOOL),
    "cast-i64-f32": Case("Cast", [R((2, 6), I64, -1000, 1000)], to=TensorProto.FLOAT),
    "cast-i64-i8-wraps": Case("Cast", [R((3, 4), I64, -300, 300)], to=TensorProto.INT8),
    "cast-bool-i64": Case("Cast", [R((2, 5), BOOL)], to=TensorProto.INT64),
    "cast-u8-i16": Case("Cast", [R((6,), U8, 0, 256)], to=TensorProto.INT16),
    "castlike-i32-f32": Case("CastLike", [R((2, 3), I32), C([1.0], F32)]),
    # comparisons to bool, logic
    "greater-f32-const": Case("Greater", [R((2, 3, 4), F32), C([[0.5], [-1.0], [2.0]], F32)]),
    "less-i64-bcast": Case("Less", [R((2, 3, 4), I64), C([1, -2, 3, 0], I64)]),
    "equal-i32": Case("Equal", [R((3, 4), I32, 0, 3), C(1, I32)]),
    "greaterorequal-u8": Case("GreaterOrEqual", [R((5, 2), U8, 0, 8), C([[3]], U8)]),
    "lessorequal-i16": Case("LessOrEqual", [R((4, 4), I16), C(0, I16)]),
    "equal-bool": Case("Equal", [R((3, 5), BOOL), C([True, False, True, True, False], BOOL)]),
    "and-bcast": Case("And", [R((2, 3, 4), BOOL), C([True, False, True, False], BOOL)]),
    "or": Case("Or", [R((3, 4), BOOL), C(np.eye(3, 4, dtype=bool), BOOL)]),
    "xor": Case("Xor", [R((3, 4), BOOL), C([[True], [False], [True]], BOOL)]),
    "not": Case("Not", [R((2, 3, 4), BOOL)]),
    # Where with a run-time mask
    "where-mask-f32": Case("Where", [R((2, 3, 4), BOOL), C(np.arange(24, dtype=np.float32).reshape(2, 3, 4), F32),
                                     C(-1.0, F32)]),
    "where-mask-i64": Case("Where", [R((3, 4), BOOL), C([[7], [8], [9]], I64), C(np.arange(12).reshape(3, 4), I64)]),
    # ArgMax / ArgMin (ties: small integers), TopK
    "argmax-f32-axis1": Case("ArgMax", [R((2, 5, 3), F32)], axis=1),
    "argmax-i32-ties-last": Case("ArgMax", [R((3, 7), I32, 0, 3)], axis=1, select_last_index=1, keepdims=0),
    "argmin-i64-ties": Case("ArgMin", [R((4, 6), I64, 0, 3)], axis=0),
    "argmin-u8-last": Case("ArgMin", [R((2, 3, 9), U8, 0, 4)], axis=-1, select_last_index=1),
    "topk-f32-largest": Case("TopK", [R((2, 9), F32), C([4])], outputs=2, axis=1),
    "topk-i64-smallest-ties": Case("TopK", [R((3, 8), I64, 0, 4), C([5])], outputs=2, axis=-1, largest=0),
    "topk-i32-axis0": Case("TopK", [R((7, 3), I32, 0, 5), C([3])], outputs=2, axis=0),
    # Gather and its kin with run-time indices (negative ones count from the end)
    "gather-embedding": Case("Gather", [C(np.arange(40, dtype=np.float32).reshape(10, 4) / 7, F32), R((2, 5), I64, -10, 10)]),
    "gather-i32-indices-axis1": Case("Gather", [C(np.arange(24, dtype=np.int64).reshape(2, 4, 3), I64),
                                                R((5,), I32, -4, 4)], axis=1),
    "gather-bool-table": Case("Gather", [C(np.eye(4, dtype=bool), BOOL), R((3,), I64, 0, 4)]),
    "gatherelements-axis1": Case("GatherElements", [C(np.arange(12, dtype=np.float32).reshape(3, 4), F32),
                                                    R((3, 2), I64, -4, 4)], axis=1),
    "gatherelements-i32-data": Case("GatherElements", [R((2, 3, 4), I32), C(np.array([[[0, 2, 1, 0]], [[1, 1, 2, 0]]]),
                                                                           I64)], axis=1),
    "gathernd": Case("GatherND", [C(np.arange(24, dtype=np.float32).reshape(2, 3, 4), F32), R((3, 2), I64, 0, 2)]),
    "gathernd-batch": Case("GatherND", [C(np.arange(24, dtype=np.int32).reshape(2, 3, 4), I32), R((2, 1), I64, -3, 3)],
                           batch_dims=1),
    "scatterelements-none": Case("ScatterElements", [R((3, 4), F32), C([[1, 0], [3, 2], [0, 0]], I64),
                                                     C([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], F32)], axis=1),
    "scatterelements-add-i64": Case("ScatterElements", [R((4, 3), I64), C([[1, 1, 0], [1, 2, 3]], I64),
                                                        C([[10, 20, 30], [40, 50, 60]], I64)], axis=0, reduction="add"),
    "onehot-i64": Case("OneHot", [R((2, 3), I64, -6, 6), C(5), C([0.0, 1.0], F32)], axis=-1),
    "onehot-axis0-i64-values": Case("OneHot", [R((4,), I64, -3, 5), C(4), C([-1, 7], I64)], axis=0),
    # integer arithmetic (wraps; division toward zero; Mod's two signs)
    "add-i8-wraps": Case("Add", [R((3, 4), I8, -128, 128), C([[100], [-100], [27]], I8)]),
    "sub-u8": Case("Sub", [R((2, 5), U8, 0, 256), C(7, U8)]),
    "mul-i16": Case("Mul", [R((2, 3), I16, -300, 300), C([[3, -5, 7]], I16)]),
    "div-i32-toward-zero": Case("Div", [R((3, 4), I32, -50, 50), C([[3], [-4], [7]], I32)]),
    "mod-i64": Case("Mod", [R((2, 6), I64, -20, 20), C([3, -3, 5, -5, 7, 2], I64)]),
    "mod-i32-fmod": Case("Mod", [R((2, 6), I32, -20, 20), C([3, -3, 5, -5, 7, 2], I32)], fmod=1),
    "min-i64": Case("Min", [R((3, 4), I64), C(0)]),
    "max-i8": Case("Max", [R((4,), I8, -128, 128), C([-1, 0, 1, 2], I8)]),
    "pow-i64": Case("Pow", [R((2, 4), I64, -4, 5), C([0, 1, 2, 3], I64)]),
    "neg-i32": Case("Neg", [R((2, 3), I32)]),
    "abs-i16": Case("Abs", [R((3, 3), I16, -200, 200)]),
    "clip-i8": Case("Clip", [R((4, 3), I8, -128, 128), C(-5, I8), C(9, I8)]),
    # integer data movement and reductions
    "reshape-i64": Case("Reshape", [R((2, 6), I64), C([3, 4])]),
    "transpose-bool": Case("Transpose", [R((2, 3, 4), BOOL)], perm=[2, 0, 1]),
    "slice-i32": Case("Slice", [R((4, 6), I32), C([1, 0]), C([3, 5]), C([0, 1]), C([1, 2])]),
    "concat-i64": Case("Concat", [R((2, 3), I64), C([[9, 9, 9]])], axis=0),
    "concat-i8": Case("Concat", [R((2, 3), I8, -128, 128), C([[-7, 0, 7]], I8)], axis=0),
    "pad-i32-reflect": Case("Pad", [R((2, 5), I32), C([0, 2, 1, 1])], mode="reflect"),
    "expand-u8": Case("Expand", [R((3, 1), U8, 0, 256), C([2, 3, 4])]),
    "reducesum-i64": Case("ReduceSum", [R((3, 4, 5), I64), C([1])], keepdims=0),
    "reducemax-bool": Case("ReduceMax", [R((3, 4), BOOL), C([1])], opset=20),
    "reducemin-i32": Case("ReduceMin", [R((2, 3, 4), I32), C([0, 2])]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_equals_onnxruntime(tmp_path, name):
    case = CASES[name]
    model, feeds = case.model_and_feeds()
    expected = ort_outputs(model, feeds)
    onnx.save(typed_model(case, expected), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    ours = run_float(g, feeds)
    for k, want in enumerate(expected):
        got = ours[f"y{k}"]
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert g.tensors[f"y{k}"].dtype == str(want.dtype)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def host_library(tmp_path_factory):
    """Every case compiled (fp32, host) and built into one shared library: (library, {case: project})."""
    work = tmp_path_factory.mktemp("integer-ops")
    projects, expected = {}, {}
    for name, case in CASES.items():
        model, feeds = case.model_and_feeds()
        expected[name] = (feeds, ort_outputs(model, feeds))
        path = work / f"{name}.onnx"
        onnx.save(typed_model(case, expected[name][1]), str(path))
        req = CompileRequest(model=path, board=BOARD, profile=PROFILE, precision="fp32", name=case_symbol(name))
        with contextlib.redirect_stderr(io.StringIO()):
            compile_into(req, work / name)
        projects[name] = work / name
    lib = work / "libcases.so"
    error = conformance.build(list(projects.values()), lib)
    assert not error, error
    return lib, expected


def case_symbol(name: str) -> str:
    return "c_" + name.replace("-", "_")


@pytest.mark.parametrize("name", sorted(CASES))
def test_c_kernels_equal_onnxruntime(host_library, name):
    lib, expected = host_library
    feeds, want = expected[name]
    with runtime.load(lib, name=case_symbol(name)) as model:
        got = model.run(feeds)
        for k, w in enumerate(want):
            y = got[f"y{k}"]
            assert y.dtype == w.dtype and y.shape == w.shape, (y.dtype, y.shape, w.dtype, w.shape)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(y, w, rtol=1e-6, atol=1e-6)
            else:
                np.testing.assert_array_equal(y, w)


def test_float_to_integer_cast_saturates(tmp_path):
    """Out of its range a float cast to an integer saturates (ONNX leaves it undefined; ONNX Runtime
    wraps on x86-64 and saturates on Arm), NaN gives 0: the reference and the kernels agree."""
    x = np.array([-1e10, -129.5, -128.9, -0.7, 0.7, 127.9, 128.0, 300.0, 1e10, np.nan, np.inf, -np.inf], np.float32)
    want = {TensorProto.INT8: [-128, -128, -128, 0, 0, 127, 127, 127, 127, 0, 127, -128],
            TensorProto.UINT8: [0, 0, 0, 0, 0, 127, 128, 255, 255, 0, 255, 0],
            TensorProto.INT32: [-2**31, -129, -128, 0, 0, 127, 128, 300, 2**31 - 1, 0, 2**31 - 1, -2**31]}
    nodes = [helper.make_node("Cast", ["x"], [f"y{to}"], to=to) for to in want]
    graph = helper.make_graph(nodes, "casts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [12])],
                              [helper.make_tensor_value_info(f"y{to}", to, [12]) for to in want])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    ours = run_float(g, {"x": x})
    req = CompileRequest(model=tmp_path / "m.onnx", board=BOARD, profile=PROFILE, precision="fp32", name="casts")
    with contextlib.redirect_stderr(io.StringIO()):
        compile_into(req, tmp_path / "p")
    assert not conformance.build([tmp_path / "p"], tmp_path / "libcasts.so")
    with runtime.load(tmp_path / "libcasts.so", name="casts") as lib:
        got = lib.run({"x": x})
    for to, values in want.items():
        np.testing.assert_array_equal(ours[f"y{to}"], values)
        np.testing.assert_array_equal(got[f"y{to}"], values)


def test_every_integer_op_is_covered():
    modules = ("cast", "compare", "index", "gather")
    ops = {n for n, op in REGISTRY.items() if type(op).__module__.rsplit(".", 1)[-1] in modules}
    assert ops - {c.op for c in CASES.values()} == set()


# --- bounds checks ----------------------------------------------------------------------------------
BOUNDS = {
    "gather": (Case("Gather", [C(np.ones((10, 4), np.float32), F32), R((1, 3), I64)]), "in1",
               np.array([[1, 10, 2]]), np.array([[-10, 9, 0]])),
    "gatherelements": (Case("GatherElements", [C(np.ones((3, 4), np.float32), F32), R((3, 2), I32)], axis=1), "in1",
                       np.array([[0, 1], [2, -5], [3, 0]], np.int32), np.array([[0, 1], [2, -4], [3, 0]], np.int32)),
    "gathernd": (Case("GatherND", [C(np.ones((2, 3), np.float32), F32), R((2, 2), I64)]), "in1",
                 np.array([[1, 2], [2, 0]]), np.array([[1, 2], [-2, 0]])),
    "scatterelements": (Case("ScatterElements", [C(np.zeros((2, 3), np.float32), F32), R((1, 2), I64),
                                                 C([[1.0, 2.0]], F32)], axis=1), "in1",
                        np.array([[0, 3]]), np.array([[0, -3]])),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_index_out_of_range_is_an_error_code(tmp_path, name):
    """An index outside its axis makes the run function return <NAME>_ERR_INDEX (17), which the
    runtime raises as ModelError; the same model runs on indices in range (negative ones too)."""
    case, index_input, bad, good = BOUNDS[name]
    model, feeds = case.model_and_feeds()
    feeds[index_input] = good
    expected = ort_outputs(model, feeds)
    onnx.save(typed_model(case, expected), str(tmp_path / "m.onnx"))
    req = CompileRequest(model=tmp_path / "m.onnx", board=BOARD, profile=PROFILE, precision="fp32", name="bounds")
    with contextlib.redirect_stderr(io.StringIO()):
        compile_into(req, tmp_path / "p")
    assert "#define BOUNDS_ERR_INDEX 17" in (tmp_path / "p" / "src" / "bounds.h").read_text()
    assert not conformance.build([tmp_path / "p"], tmp_path / "libbounds.so")
    with runtime.load(tmp_path / "libbounds.so", name="bounds") as lib:
        np.testing.assert_array_equal(lib.run(feeds)["y0"], expected[0])
        with pytest.raises(ModelError, match="returned error 17: an index input is out of range"):
            lib.run({**feeds, index_input: bad})
        np.testing.assert_array_equal(lib.run(feeds)["y0"], expected[0])  # and runs again afterwards


def test_constant_index_out_of_range_is_refused_at_compile_time(tmp_path):
    case = Case("GatherElements", [R((3, 4), F32), C([[0, 4]])], axis=1)
    model, _ = case.model_and_feeds()
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y0", TensorProto.FLOAT, [3, 2]))
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([[0, 4], [1, 1], [2, 2]]), "in1"))
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(ModelError, match=r"node 'gatherelements0' \(GatherElements\): index 4 is out of range "
                                         r"for a dimension of 4"):
        load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})


# --- int8 rules of the mixed ops -------------------------------------------------------------------
def quantized(case: Case, tmp_path, samples: int = 12):
    model, feeds = case.model_and_feeds()
    expected = ort_outputs(model, feeds)
    onnx.save(typed_model(case, expected), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    optimize(g)
    calib = [case.model_and_feeds(seed)[1] for seed in range(1, samples + 1)]
    quantize_graph(g, calibrate(g, calib, len(calib)))
    return g, feeds, expected


def test_int8_argmax_runs_on_the_codes(tmp_path):
    """ArgMax of an int8 tensor: the index of the largest code, the first of equal codes (values
    that quantize to one code are ties), which is the float ArgMax of the dequantized values."""
    g, feeds, _ = quantized(Case("ArgMax", [R((2, 9, 6), F32)], axis=1), tmp_path)
    x = g.inputs[0]
    assert g.tensors["y0"].dtype == "int64" and g.tensors["y0"].q is None
    codes = np.random.default_rng(3).integers(-128, 128, g.tensors[x].shape).astype(np.int8)
    codes[0, 3:, 0] = codes[0, 2, 0]  # ties: the first wins
    got = run_int(g, {x: codes})["y0"]
    np.testing.assert_array_equal(got, codes.argmax(axis=1)[:, None, :])
    s, z = g.tensors[x].q.scalar()
    np.testing.assert_array_equal(got, ((codes.astype(np.float32) - z) * s).argmax(axis=1)[:, None, :])


def test_int8_gather_of_an_embedding_table(tmp_path):
    """A constant table gathered by run-time ids: stored as int8 codes at its own range, the output
    has that scale (no calibration needed for it) and equals the float table within half a step."""
    table = np.linspace(-2, 3, 40, dtype=np.float32).reshape(10, 4)
    case = Case("Gather", [C(table, F32), R((2, 5), I64, 0, 10)])
    g, feeds, expected = quantized(case, tmp_path)
    (node,) = g.nodes
    scale = g.tensors["y0"].q.scalar()[0]
    assert np.isclose(scale, 5.0 / 255.0, rtol=1e-6)
    _, deq = run_quantized_model(g, feeds)
    assert np.abs(deq["y0"] - expected[0]).max() <= scale / 2 + 1e-6


def test_int8_cast_and_compare_tables(tmp_path):
    """Cast of an int8 tensor to int64 and its comparison with a constant are 256-entry tables of
    the dequantized codes: exactly the float ops on the dequantized values."""
    for case, fn in ((Case("Cast", [R((3, 4), F32)], to=TensorProto.INT64), lambda v: np.trunc(v).astype(np.int64)),
                     (Case("Greater", [R((3, 4), F32), C(0.5, F32)]), lambda v: v > 0.5)):
        g, feeds, _ = quantized(case, tmp_path)
        x = g.inputs[0]
        codes = np.linspace(-128, 127, 12).astype(np.int8).reshape(3, 4)
        values = dequantize(codes, *g.tensors[x].q.scalar()).astype(np.float64)
        np.testing.assert_array_equal(run_int(g, {x: codes})["y0"], fn(values))


def test_int8_integer_inputs_pass_through(tmp_path):
    """An int8 build of a model with an int64 input: the input and the integer layers are not
    quantized, and the integer outputs equal the float build's."""
    case = Case("Mul", [R((2, 3), I64), C([[2, -3, 4]])])
    model, feeds = case.model_and_feeds()
    expected = ort_outputs(model, feeds)
    onnx.save(typed_model(case, expected), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    quantize_graph(g, None)
    assert g.tensors["in0"].q is None and g.tensors["in0"].dtype == "int64"
    raw, deq = run_quantized_model(g, feeds)
    np.testing.assert_array_equal(raw["y0"], expected[0])
    np.testing.assert_array_equal(deq["y0"], expected[0])


# --- the typed C API and runtime --------------------------------------------------------------------
@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A text classifier's head: int64 ids -> Gather (embedding) -> ReduceMean -> Gemm, plus an int64
    ArgMax of the logits and a bool mask of the ids: fp32, host."""
    tmp = tmp_path_factory.mktemp("typed-api")
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((20, 8)).astype(np.float32), "table"),
             numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.array(0, np.int64), "zero")]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"]),
             helper.make_node("ReduceMean", ["e", "axes"], ["m"], keepdims=0),
             helper.make_node("MatMul", ["m", "w"], ["logits"]),
             helper.make_node("ArgMax", ["logits"], ["label"], axis=1, keepdims=0),
             helper.make_node("Greater", ["ids", "zero"], ["nonzero"])]
    graph = helper.make_graph(nodes, "cls", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3]),
                               helper.make_tensor_value_info("label", TensorProto.INT64, [1]),
                               helper.make_tensor_value_info("nonzero", TensorProto.BOOL, [1, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, str(tmp / "cls.onnx"))
    req = CompileRequest(model=tmp / "cls.onnx", board=BOARD, profile=PROFILE, precision="fp32", name="cls")
    with contextlib.redirect_stderr(io.StringIO()):
        info = compile_into(req, tmp / "p")
    assert not conformance.build([tmp / "p"], tmp / "libcls.so")
    return model, info, tmp


def test_header_and_manifest_declare_the_types(classifier):
    _, info, tmp = classifier
    header = (tmp / "p" / "src" / "cls.h").read_text()
    assert "int cls_run(const int64_t *const inputs[], void *const outputs[]);" in header
    assert ("int cls_run_batch(void *arena, int n, const int64_t *in0, float *out0, int64_t *out1, bool *out2);"
            in header)
    assert "#include <stdbool.h>" in header
    for line in ("#define CLS_INPUT_0_TYPE int64_t", "#define CLS_OUTPUT_0_TYPE float", "#define CLS_OUTPUT_1_TYPE int64_t",
                 "#define CLS_OUTPUT_2_TYPE bool"):
        assert line in header
    assert [(t["name"], t["dtype"], t["scale"]) for t in info["inputs"]] == [("ids", "int64", None)]
    assert [(t["name"], t["dtype"]) for t in info["outputs"]] == [("logits", "float32"), ("label", "int64"),
                                                                 ("nonzero", "bool")]


def test_runtime_takes_and_returns_the_declared_types(classifier):
    model, _, tmp = classifier
    ids = np.array([[3, 0, 19, 7, 7, 1]], np.int64)
    want = dict(zip(["logits", "label", "nonzero"], ort_outputs(model, {"ids": ids})))
    with runtime.load(tmp / "libcls.so", name="cls") as lib:
        assert lib.input_dtypes == [np.dtype(np.int64)]
        assert lib.output_dtypes == [np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)]
        got = lib(ids)
        assert got["label"].dtype == np.int64 and got["nonzero"].dtype == np.bool_
        np.testing.assert_array_equal(got["label"], want["label"])
        np.testing.assert_array_equal(got["nonzero"], want["nonzero"])
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-6)
        # int32 ids fit int64: taken as they are; a batch of samples on the leading axis
        batch = np.stack([ids[0], ids[0][::-1]]).astype(np.int32)
        assert lib(batch)["label"].shape == (2, 1)  # (N, *output shape): the one rule for samples
        # a float array for the int64 input is refused, saying why
        with pytest.raises(DataTypeError, match="array for 'ids' has dtype float32, expected int64: indices and "
                                                "token ids are integers"):
            lib(ids.astype(np.float32))
        with pytest.raises(DataTypeError, match=r"the value 9223372036854775813 does not fit int64"):
            lib(np.array([[2**63 + 5] * 6], np.uint64))
        # an id past the table is an index out of range, raised, not read
        with pytest.raises(ModelError, match="an index input is out of range"):
            lib(np.array([[20, 0, 0, 0, 0, 0]], np.int64))


# --- bad input: one line, exit 3 ------------------------------------------------------------------
def test_dynamic_output_shape_is_refused_naming_the_node(tmp_path):
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["idx"], name="nz")], "nz",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("idx", TensorProto.INT64, [2, None])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "nz.onnx"))
    with pytest.raises(ModelError, match=r"NonZero \(domain ai.onnx, first node 'nz': its output's shape is "
                                         r"the number of non-zero values at run time \(a dynamic output shape\)"):
        load_model(tmp_path / "nz.onnx", PROFILE, BOARD, {})


def test_cli_refuses_float_data_for_token_ids(classifier, tmp_path):
    """`run` with float data for an int64 input: exit 3 and one line, before anything is built."""
    import subprocess
    _, _, tmp = classifier
    np.save(tmp_path / "x.npy", np.zeros((2, 1, 6), np.float32))
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "run", "--board", "host", "--profile", "standard",
                        "--precision", "fp32", "--model", str(tmp / "cls.onnx"), "--input", str(tmp_path / "x.npy"),
                        "--output", str(tmp_path / "y.npz")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().splitlines() == ["cuvil-sdk: error: input data: array for 'ids' has dtype float32, "
                                             "expected int64: indices and token ids are integers "
                                             "(x.astype(np.int64) if the values are whole numbers)"]
