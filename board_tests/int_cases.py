"""One model of the integer and bool ops (ops/cast.py, compare.py, index.py, gather.py, integer.py),
for the board tests: many portable integer kernels in one build (the casts, comparisons and
logic, Where on a run-time mask, integer arithmetic that wraps, reductions, ArgMax and TopK,
Gather/GatherElements/GatherND/ScatterElements with run-time indices, OneHot, data movement of
int64 tensors), fed by an int64, a float and a bool input. Used by test_integer_models.py
(bit-exact on every board) and test_pedantic_c.py (ISO C99 and C++11).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = (2, 6)
I64, F32, BOOL = TensorProto.INT64, TensorProto.FLOAT, TensorProto.BOOL


def model() -> onnx.ModelProto:
    inits = {"k3": np.array([3], np.int64), "one": np.array(1, np.int64), "seven": np.array([[7], [-3]], np.int64),
             "lo": np.array(-2, np.int64), "hi": np.array(3, np.int64), "axis1": np.array([1], np.int64),
             "table": (np.arange(48, dtype=np.float32).reshape(12, 4) - 20) / 8,
             "depth": np.array(5, np.int64), "onoff": np.array([-1.0, 2.0], np.float32),
             "half": np.array(0.5, np.float32), "pads": np.array([0, 1, 0, 2], np.int64),
             "perm_shape": np.array([3, 4], np.int64), "cols": np.array([[0, 5], [3, 1]], np.int64),
             "upd": np.array([[10, 20], [30, 40]], np.int64)}
    n = helper.make_node
    nodes = [
        n("Cast", ["x"], ["x_i32"], to=TensorProto.INT32), n("Cast", ["x_i32"], ["x_trunc"], to=F32),
        n("Cast", ["ids"], ["ids_i8"], to=TensorProto.INT8), n("Cast", ["ids_i8"], ["ids_back"], to=I64),
        n("Cast", ["mask"], ["mask_i64"], to=I64), n("Cast", ["ids"], ["ids_f"], to=F32),
        n("Greater", ["x", "half"], ["x_big"]), n("Less", ["ids", "one"], ["ids_small"]),
        n("Equal", ["ids", "seven"], ["ids_eq"]), n("And", ["x_big", "mask"], ["both"]),
        n("Or", ["ids_small", "ids_eq"], ["either"]), n("Xor", ["both", "either"], ["one_of"]),
        n("Not", ["one_of"], ["none_of"]),
        n("Where", ["mask", "ids", "seven"], ["picked"]), n("Where", ["x_big", "x", "ids_f"], ["mixed"]),
        n("Add", ["ids", "seven"], ["s_add"]), n("Sub", ["s_add", "ids_back"], ["s_sub"]),
        n("Mul", ["s_sub", "ids"], ["s_mul"]), n("Div", ["s_mul", "seven"], ["s_div"]),
        n("Mod", ["s_mul", "seven"], ["s_mod"]), n("Mod", ["s_mul", "seven"], ["s_fmod"], fmod=1),
        n("Min", ["s_div", "s_mod"], ["s_min"]), n("Max", ["s_div", "s_fmod"], ["s_max"]),
        n("Pow", ["ids", "mask_i64"], ["s_pow"]), n("Neg", ["s_min"], ["s_neg"]), n("Abs", ["s_neg"], ["s_abs"]),
        n("Clip", ["s_max", "lo", "hi"], ["s_clip"]),
        n("ReduceSum", ["s_abs", "axis1"], ["r_sum"], keepdims=0), n("ReduceMax", ["s_clip", "axis1"], ["r_max"]),
        n("ArgMax", ["picked"], ["am"], axis=1, keepdims=0), n("ArgMin", ["x"], ["an"], axis=1, select_last_index=1),
        n("TopK", ["s_add", "k3"], ["top_v", "top_i"], axis=1),
        n("Abs", ["ids"], ["ids_abs"]), n("Gather", ["table", "ids_abs"], ["emb"]),
        n("GatherElements", ["x", "top_i"], ["ge"], axis=1), n("Unsqueeze", ["am", "axis1"], ["am1"]),
        n("GatherND", ["x", "am1"], ["gnd"], batch_dims=1),
        n("ScatterElements", ["s_add", "cols", "upd"], ["sc"], axis=1, reduction="add"),
        n("OneHot", ["am", "depth", "onoff"], ["oh"], axis=-1),
        n("Concat", ["ids", "s_clip"], ["cat"], axis=0), n("Transpose", ["cat"], ["cat_t"], perm=[1, 0]),
        n("Reshape", ["s_pow", "perm_shape"], ["pow_r"]), n("Pad", ["s_min", "pads"], ["padded"], mode="edge"),
        n("Slice", ["padded", "axis1", "k3", "axis1"], ["sliced"]),
    ]
    outputs = {"x_trunc": F32, "none_of": BOOL, "picked": I64, "mixed": F32, "r_sum": I64, "r_max": I64,
               "an": I64, "top_v": I64, "top_i": I64, "emb": F32, "ge": F32, "gnd": F32, "sc": I64, "oh": F32,
               "cat_t": I64, "pow_r": I64, "sliced": I64}
    graph = helper.make_graph(
        nodes, "int_ops",
        [helper.make_tensor_value_info("ids", I64, list(SHAPE)), helper.make_tensor_value_info("x", F32, list(SHAPE)),
         helper.make_tensor_value_info("mask", BOOL, list(SHAPE))],
        [helper.make_tensor_value_info(name, t, None) for name, t in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def save(folder: Path) -> Path:
    path = Path(folder) / "int_ops.onnx"
    onnx.save(model(), str(path))
    return path


def samples(count: int, seed: int) -> dict[str, np.ndarray]:
    """`count` samples on a batch axis of their own: ids in [-6, 6) (negative ids count from the
    end of the 12-row table), floats in [-3, 3), masks at random."""
    rng = np.random.default_rng(seed)
    return {"ids": rng.integers(-6, 6, (count, *SHAPE)).astype(np.int64),
            "x": rng.uniform(-3, 3, (count, *SHAPE)).astype(np.float32),
            "mask": rng.random((count, *SHAPE)) < 0.5}
