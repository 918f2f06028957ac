"""Generate board_tests/fixtures/shape_head.onnx (checked in; CI never runs this script):
a tiny detector + segmenter as exporters write them, with random weights (seed 0), built
with onnx.helper.

    x (1, 3, 16, 16)
    c1 = Relu(Conv 3->8, 3x3, stride 2)                                  (1, 8, 8, 8)
    segmenter: Concat(Resize linear x2 (c1), x, DepthToSpace(Slice(c1, channels ::2)))
               -> Conv 1x1 -> "seg"                                       (1, 4, 16, 16)
    YOLO-style head: Conv 1x1 -> Reshape (1, 2, 7, -1) whose shape comes from
               Shape -> Gather -> Unsqueeze -> Concat (folded at compile time)
               -> Transpose -> Sigmoid -> Split [2, 2, 3]
               -> xy*2 + grid, (wh*wh)*anchors, Gather (class order)
               -> Concat -> Reshape (1, 128, 7) -> "det"

Run: /work/torchenv/bin/python scripts/make_fixtures_shape.py (any Python with onnx).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "board_tests" / "fixtures" / "shape_head.onnx"
RNG = np.random.default_rng(0)
NODES: list[onnx.NodeProto] = []
INITS: list[onnx.TensorProto] = []


def const(name: str, value, dtype=np.float32) -> str:
    INITS.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
    return name


def op(op_type: str, inputs: list[str], out: str, **attrs) -> str:
    NODES.append(helper.make_node(op_type, inputs, [out], name=f"/{out}/{op_type}", **attrs))
    return out


def conv(x: str, cin: int, cout: int, k: int, out: str, **attrs) -> str:
    w = const(f"{out}.weight", RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k))
    b = const(f"{out}.bias", RNG.standard_normal(cout) * 0.1)
    return op("Conv", [x, w, b], out, kernel_shape=[k, k], **attrs)


def build() -> onnx.ModelProto:
    c1 = op("Relu", [conv("x", 3, 8, 3, "c1conv", strides=[2, 2], pads=[1, 1, 1, 1])], "c1")
    # segmenter
    up = op("Resize", [c1, "", const("up_scales", [1, 1, 2, 2])], "up", mode="linear",
            coordinate_transformation_mode="half_pixel")
    every2 = op("Slice", [c1, const("s_start", [0], np.int64), const("s_end", [8], np.int64),
                          const("s_axes", [1], np.int64), const("s_steps", [2], np.int64)], "every2")
    d2s = op("DepthToSpace", [every2], "d2s", blocksize=2)
    cat = op("Concat", [up, "x", d2s], "cat", axis=1)
    conv(cat, 12, 4, 1, "seg")
    # detection head
    h = conv(c1, 8, 14, 1, "head")
    n = op("Unsqueeze", [op("Gather", [op("Shape", [h], "hshape"), const("zero", 0, np.int64)], "n", axis=0),
                         const("axes0", [0], np.int64)], "n1")
    shape = op("Concat", [n, const("rest", [2, 7, -1], np.int64)], "rshape", axis=0)
    t = op("Transpose", [op("Reshape", [h, shape], "r")], "t", perm=[0, 1, 3, 2])
    s = op("Sigmoid", [t], "s")
    NODES.append(helper.make_node("Split", [s, const("split", [2, 2, 3], np.int64)], ["xy", "wh", "cls"],
                                  name="/split/Split", axis=3))
    gy, gx = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    grid = np.stack([gx, gy], -1).reshape(1, 1, 64, 2)
    xy = op("Add", [op("Mul", ["xy", const("two", 2.0)], "xy2"), const("grid", grid)], "xyg")
    wh = op("Mul", [op("Mul", ["wh", "wh"], "wh2"), const("anchors", [[[[1.5, 2.0]], [[3.0, 1.0]]]])], "wha")
    cls = op("Gather", ["cls", const("order", [2, 0, 1], np.int64)], "cls_order", axis=3)
    det = op("Concat", [xy, wh, cls], "det7", axis=3)
    op("Reshape", [det, const("det_shape", [1, -1, 7], np.int64)], "det")
    graph = helper.make_graph(NODES, "shape_head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("det", TensorProto.FLOAT, [1, 128, 7]),
                               helper.make_tensor_value_info("seg", TensorProto.FLOAT, [1, 4, 16, 16])], INITS)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="scripts/make_fixtures_shape.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    onnx.save(build(), str(OUT))
    print(f"wrote {OUT}")
