"""The range-split rule (quant/range_split.py): an output joined by a Concat from ranges far apart
keeps one int8 scale per input. The fixture is a YOLOv8-style head (scripts/make_fixture_yolo_head.py):
boxes in 0..320 and sigmoid scores concatenated on the channel axis, reshaped and transposed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import cuvil_sdk
from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels.segments import dequantize_segmented
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model
from cuvil_sdk.request import CompileRequest

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "yolo_head"
MODEL, CALIB = FIXTURE / "yolo_head.onnx", FIXTURE / "calib.npy"
THRESHOLD, NMS_IOU, MATCH_IOU = 0.25, 0.5, 0.7  # YOLOv8 defaults: confidence 0.25, NMS IoU


def ort_run(model: Path | bytes, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort
    s = ort.InferenceSession(model if isinstance(model, bytes) else str(model))
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def reference(model: Path, calib, board: str = "host", **options):
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile("standard"), calib=calib, **options)
    g = frontend_and_passes(req)
    return g, quantize(g, req)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes a (n, 4) with b (m, 4), both cx, cy, w, h."""
    def corners(x):
        return np.stack([x[:, 0] - x[:, 2] / 2, x[:, 1] - x[:, 3] / 2, x[:, 0] + x[:, 2] / 2, x[:, 1] + x[:, 3] / 2], 1)
    a, b = corners(a)[:, None], corners(b)[None]
    w = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    h = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = w * h
    area = lambda c: (c[..., 2] - c[..., 0]) * (c[..., 3] - c[..., 1])  # noqa: E731
    return inter / (area(a) + area(b) - inter + 1e-9)


def detections(y: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """One sample's (anchors, 4 + classes) -> [(box, class)] after threshold and per-class NMS."""
    boxes, scores = y[:, :4], y[:, 4:]
    cls, best = scores.argmax(1), scores.max(1)
    found = []
    for c in np.unique(cls[best > THRESHOLD]):
        idx = np.flatnonzero((cls == c) & (best > THRESHOLD))
        idx = idx[np.argsort(-best[idx], kind="stable")]
        while len(idx):
            found.append((boxes[idx[0]], int(c)))
            idx = idx[1:][iou(boxes[idx[:1]], boxes[idx[1:]])[0] < NMS_IOU]
    return found


def same_detections(ours: np.ndarray, ref: np.ndarray) -> bool:
    """Every sample's detections matched one to one by class and IoU >= MATCH_IOU."""
    for a, b in zip(ours, ref):
        da, db = detections(a), detections(b)
        if len(da) != len(db):
            return False
        for box, c in db:
            if not any(c == c2 and iou(box[None], b2[None])[0, 0] >= MATCH_IOU for b2, c2 in da):
                return False
    return True


@pytest.fixture(scope="module")
def test_x() -> np.ndarray:
    return np.load(FIXTURE / "test.npz")["x"]


@pytest.fixture(scope="module")
def float_y(test_x) -> np.ndarray:
    return ort_run(MODEL, test_x)


def test_fixture_scores_need_their_own_scale(float_y):
    assert float_y[..., :4].max() > 200 and float_y[..., 4:].max() <= 1.0
    assert all(len(detections(y)) > 0 for y in float_y)


def test_rule_splits_the_head_and_names_itself():
    g, chosen = reference(MODEL, str(CALIB))
    (split,) = chosen["range_splits"]
    assert split["rule"] == "range-split" and split["output"] == "output0" and split["concat"] == "head_concat"
    assert split["segment_axis"] == 2 and split["ratio"] > 100
    assert [(s["start"], s["stop"], s["source"]) for s in split["segments"]] == [(0, 4, "boxes"), (4, 7, "scores")]
    assert split["segments"][1]["scale"] < 0.005  # the scores' step, not 1.25


def quantized_outputs(g, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    raw, out = zip(*(run_quantized_model(g, {"x": x[i:i + 1]}) for i in range(len(x))))
    return np.concatenate([r["output0"] for r in raw]), np.concatenate([o["output0"] for o in out])


def test_int8_detections_equal_floats(test_x, float_y):
    g, _ = reference(MODEL, str(CALIB))
    _, y = quantized_outputs(g, test_x)
    assert np.abs(y[..., 4:] - float_y[..., 4:]).max() < 0.05
    assert same_detections(y, float_y)


def test_old_way_collapses_the_scores(test_x, float_y):
    g, chosen = reference(MODEL, str(CALIB), range_split=0.0)
    assert "range_splits" not in chosen and g.tensors["output0"].segments is None
    _, y = quantized_outputs(g, test_x)
    assert len(np.unique(y[..., 4:])) <= 3  # 0 or 1.25: one step of the boxes' scale
    assert not same_detections(y, float_y)


def test_factor_above_the_ratio_keeps_one_scale():
    _, chosen = reference(MODEL, str(CALIB), range_split=1000.0)
    assert "range_splits" not in chosen


def test_host_library_matches_the_reference_bit_for_bit(tmp_path, test_x):
    g, _ = reference(MODEL, str(CALIB))
    raw, y = quantized_outputs(g, test_x)
    b = cuvil_sdk.build(MODEL, board="host", profile="standard", calib=str(CALIB), out_dir=tmp_path / "b")
    entry = b.info["outputs"][0]
    assert entry["segment_axis"] == 2 and len(entry["segments"]) == 2
    with b.load() as model:
        ours = model.run(test_x)["output0"].reshape(y.shape)  # (N, 1, 64, 7): the samples stacked
        codes = {"output0": model.run_int8({"x": quantize_input(g, test_x)})["output0"].reshape(raw.shape)}
    assert np.array_equal(ours, y)  # the C API's float output: each segment dequantized with its own scale
    assert np.array_equal(codes["output0"], raw)
    assert np.array_equal(dequantize_segmented(codes["output0"], entry["shape"], entry["segments"], 2), y)
    header = (tmp_path / "b" / "src" / "yolo_head.h").read_text()
    assert "YOLO_HEAD_OUTPUT_0_SEGMENT_1_SCALE" in header and "YOLO_HEAD_OUTPUT_0_SCALE" not in header


def quantize_input(g, x: np.ndarray) -> np.ndarray:
    from cuvil_sdk.kernels.requant import quantize_float
    return quantize_float(x, *g.tensors["x"].q.scalar())


def test_build_output_and_report_name_the_rule(tmp_path):
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "build", "--board", "host", "--profile", "standard",
                        "--model", str(MODEL), "--calib", str(CALIB), "-o", str(tmp_path / "b"), "--json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "range split: output 'output0'" in r.stderr and "--no-range-split" in r.stderr
    report = json.loads(Path(json.loads(r.stdout)["artifacts"]["report_json"]).read_text())
    assert report["range_splits"][0]["output"] == "output0"


# --- the rule on other shapes: any axis, movement chains, what it leaves alone ------------------
def two_branch_model(axis: int, tail: list[tuple[str, dict]], out_shape: list[int]) -> bytes:
    """x (1, 2, 4, 4) -> a: x * 100, b: Sigmoid(x) -> Concat(axis) -> tail ops -> y."""
    inits = [numpy_helper.from_array(np.array(100.0, np.float32), "k")]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["c"], axis=axis)]
    name = "c"
    for i, (op, attrs) in enumerate(tail):
        ins = [name]
        if op == "Reshape":
            inits.append(numpy_helper.from_array(np.array(attrs.pop("shape"), np.int64), f"s{i}"))
            ins.append(f"s{i}")
        nodes.append(helper.make_node(op, ins, [f"t{i}"], **attrs))
        name = f"t{i}"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


CASES = {
    "spatial axis, flattened": (2, [("Flatten", {"axis": 1})], [1, 64], None),
    "last axis, transposed": (3, [("Transpose", {"perm": [0, 3, 1, 2]})], [1, 8, 2, 4], 1),
    "channels, reshaped": (1, [("Reshape", {"shape": [1, 4, 16]})], [1, 4, 16], 1),
    "channels, direct": (1, [], [1, 4, 4, 4], 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rule_follows_the_axis_to_the_output(tmp_path, case):
    axis, tail, shape, out_axis = CASES[case]
    model = tmp_path / "m.onnx"
    model.write_bytes(two_branch_model(axis, [(op, dict(a)) for op, a in tail], shape))
    rng = np.random.default_rng(0)
    calib = rng.uniform(-1, 1, (16, 2, 4, 4)).astype(np.float32)
    g, chosen = reference(model, calib)
    x = rng.uniform(-1, 1, (4, 2, 4, 4)).astype(np.float32)
    want = ort_run(model.read_bytes(), x)
    _, y = quantized_outputs_named(g, x, "y")
    if out_axis is None:  # Flatten merges the Concat's axis: one scale, said by no split
        assert "range_splits" not in chosen
        return
    assert chosen["range_splits"][0]["segment_axis"] == out_axis
    sigmoid = np.take(want, range(want.shape[out_axis] // 2, want.shape[out_axis]), axis=out_axis)
    ours = np.take(y, range(y.shape[out_axis] // 2, y.shape[out_axis]), axis=out_axis)
    assert np.abs(ours - sigmoid).max() < 0.01  # the sigmoid half at its own step (1/255), not 200/255


@pytest.mark.parametrize("case", ["channels, direct", "last axis, transposed", "channels, reshaped"])
def test_host_library_dequantizes_any_axis_as_the_reference(tmp_path, case):
    """The C dequantization's (i / inner) % dim, with inner > 1 and = 1, equals the reference's."""
    axis, tail, shape, _ = CASES[case]
    model = tmp_path / "m.onnx"
    model.write_bytes(two_branch_model(axis, [(op, dict(a)) for op, a in tail], shape))
    rng = np.random.default_rng(1)
    calib = rng.uniform(-1, 1, (16, 2, 4, 4)).astype(np.float32)
    x = rng.uniform(-1, 1, (4, 2, 4, 4)).astype(np.float32)
    g, _ = reference(model, calib)
    raw, want = quantized_outputs_named(g, x, "y")
    b = cuvil_sdk.build(model, board="host", profile="standard", calib=calib, out_dir=tmp_path / "b")
    with b.load() as lib:
        assert np.array_equal(lib.run(x)["y"].reshape(want.shape), want)  # the samples stacked, batch 1 each
        assert np.array_equal(lib.run_int8({"x": quantize_input(g, x)})["y"].reshape(raw.shape), raw)


def quantized_outputs_named(g, x: np.ndarray, name: str):
    raw, out = zip(*(run_quantized_model(g, {"x": x[i:i + 1]}) for i in range(len(x))))
    return np.concatenate([r[name] for r in raw]), np.concatenate([o[name] for o in out])


def test_a_concat_read_by_another_layer_keeps_one_scale(tmp_path):
    """The Concat's result also feeds a layer inside the model: its codes must stay in one scale."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1), helper.make_node("Relu", ["y"], ["z"])]
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 4, 4])],
                              [numpy_helper.from_array(np.array(100.0, np.float32), "k")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    calib = np.random.default_rng(0).uniform(-1, 1, (8, 2, 4, 4)).astype(np.float32)
    _, chosen = reference(tmp_path / "m.onnx", calib)
    assert "range_splits" not in chosen


def test_range_split_option_is_checked():
    from cuvil_sdk.errors import UsageError
    from cuvil_sdk.request import range_split_option
    assert range_split_option(None) == 8.0 and range_split_option(0) == 0.0
    for bad in (0.5, 1.0, -3, float("nan"), "8"):
        with pytest.raises(UsageError, match="--range-split"):
            range_split_option(bad)
