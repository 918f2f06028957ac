"""Generate tests/fixtures/yolo_head/ (checked in; CI never runs this script): a tiny detector
whose boxes and scores share one output, as YOLOv8 exports it, built with onnx.helper and
fixed weights (seed 0), with its calibration and test images.

    x (1, 1, 32, 32): dark images holding 1 to 3 bright squares (the objects)
    f = Relu(Conv 1->8, 3x3, s2) -> Relu(Conv 8->16, 3x3, s2)                (1, 16, 8, 8)
    boxes  = Sigmoid(Conv 1x1 16->4) * gain + grid: cx, cy, w, h in pixels,
             0..320 (cells of 40 px; w, h 20..40)                               (1, 4, 8, 8)
    scores = Sigmoid(Conv 1x1 16->3): 3 classes, 0..1                         (1, 3, 8, 8)
    Concat(boxes, scores, axis=1) -> Reshape (1, 7, 64) -> Transpose (0, 2, 1) -> "output0" (1, 64, 7)

One int8 scale for "output0" would be 320 / 255 = 1.25: every score would round to 0 or 1.25.

The score convolution answers brightness (the objects) and its bias keeps the background's
scores low, so a sample's scores sit away from the test's threshold (0.25): the test images are
those whose every score is at least MARGIN from it, so float and int8 detections can be
compared exactly (tests/test_range_split.py).

Run: .venv/bin/python scripts/make_fixture_yolo_head.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "yolo_head"
RNG = np.random.default_rng(0)
SIZE = 32
CALIB_SAMPLES = 32
TEST_SAMPLES = 8
THRESHOLD = 0.25  # YOLOv8's default confidence threshold
MARGIN = 0.08  # a test image's scores are this far from THRESHOLD, at least


def conv(name: str, x: str, w: np.ndarray, b: np.ndarray, stride: int, inits: list, nodes: list) -> str:
    inits += [numpy_helper.from_array(w.astype(np.float32), f"{name}.w"),
              numpy_helper.from_array(b.astype(np.float32), f"{name}.b")]
    pad = w.shape[-1] // 2
    nodes.append(helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name], name=name,
                                  kernel_shape=list(w.shape[2:]), strides=[stride, stride], pads=[pad] * 4))
    return name


def model() -> onnx.ModelProto:
    nodes: list = []
    inits: list = []
    w1 = np.abs(RNG.normal(0, 0.3, (8, 1, 3, 3))) * np.where(np.arange(8) < 6, 1, -1)[:, None, None, None]
    c1 = conv("conv1", "x", w1, RNG.normal(0, 0.05, 8), 2, inits, nodes)
    nodes.append(helper.make_node("Relu", [c1], ["relu1"], name="relu1"))
    w2 = RNG.normal(0.05, 0.15, (16, 8, 3, 3))
    c2 = conv("conv2", "relu1", w2, RNG.normal(0, 0.05, 16), 2, inits, nodes)
    nodes.append(helper.make_node("Relu", [c2], ["feat"], name="relu2"))
    box = conv("box", "feat", RNG.normal(0, 0.3, (4, 16, 1, 1)), RNG.normal(0, 0.3, 4), 1, inits, nodes)
    nodes.append(helper.make_node("Sigmoid", [box], ["box_sig"], name="box_sigmoid"))
    # cx, cy: the cell's corner (40 px cells) + 0..40; w, h: 20..40 px (boxes of neighbours do not overlap)
    gain = np.array([40.0, 40.0, 20.0, 20.0], dtype=np.float32).reshape(1, 4, 1, 1)
    grid = np.zeros((1, 4, 8, 8), dtype=np.float32)
    grid[0, 0], grid[0, 1] = np.arange(8)[None, :] * 40.0, np.arange(8)[:, None] * 40.0
    grid[0, 2:] = 20.0
    inits += [numpy_helper.from_array(gain, "box_gain"), numpy_helper.from_array(grid, "box_grid")]
    nodes.append(helper.make_node("Mul", ["box_sig", "box_gain"], ["box_rel"], name="box_scale"))
    nodes.append(helper.make_node("Add", ["box_rel", "box_grid"], ["boxes"], name="box_offset"))
    ws = np.abs(RNG.normal(0.6, 0.2, (3, 16, 1, 1))) * RNG.choice([0.2, 1.0], (3, 16, 1, 1))
    cls = conv("cls", "feat", ws, np.full(3, -6.0), 1, inits, nodes)
    nodes.append(helper.make_node("Sigmoid", [cls], ["scores"], name="cls_sigmoid"))
    nodes.append(helper.make_node("Concat", ["boxes", "scores"], ["head"], name="head_concat", axis=1))
    inits.append(numpy_helper.from_array(np.array([1, 7, 64], dtype=np.int64), "head_shape"))
    nodes.append(helper.make_node("Reshape", ["head", "head_shape"], ["head_flat"], name="head_reshape"))
    nodes.append(helper.make_node("Transpose", ["head_flat"], ["output0"], name="head_transpose", perm=[0, 2, 1]))
    graph = helper.make_graph(nodes, "yolo_head", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                  [1, 1, SIZE, SIZE])],
                              [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 64, 7])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cuvil-sdk fixture")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def image(rng: np.random.Generator) -> np.ndarray:
    """A dark, slightly noisy image with 1 to 3 bright squares of 4 to 9 pixels."""
    x = rng.uniform(0.0, 0.1, (1, SIZE, SIZE))
    for _ in range(rng.integers(1, 4)):
        side = int(rng.integers(4, 10))
        r, c = rng.integers(0, SIZE - side, 2)
        x[0, r:r + side, c:c + side] = rng.uniform(0.7, 1.0)
    return x.astype(np.float32)


def scores_of(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort
    s = ort.InferenceSession(m.SerializeToString())
    return np.concatenate([s.run(None, {"x": x[i:i + 1]})[0] for i in range(len(x))])[..., 4:]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    m = model()
    onnx.save(m, str(OUT / "yolo_head.onnx"))
    rng = np.random.default_rng(1)
    calib = np.stack([image(rng) for _ in range(CALIB_SAMPLES)])
    np.save(OUT / "calib.npy", calib)
    kept = []
    while len(kept) < TEST_SAMPLES:  # images whose scores stay clear of the threshold
        x = image(rng)[None]
        s = scores_of(m, x)
        if np.abs(s - THRESHOLD).min() >= MARGIN and (s > THRESHOLD).any():
            kept.append(x[0])
    np.savez(OUT / "test.npz", x=np.stack(kept))
    s = scores_of(m, calib)
    print(f"calibration scores: {(s > THRESHOLD).sum()} above {THRESHOLD} of {s.size}; max {s.max():.3f}")


if __name__ == "__main__":
    main()
