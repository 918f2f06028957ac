"""The fp16 build's graph and lowering (sdk/quant/half.py), without a toolchain: which layers run
their f16 kernels and which are computed in fp32 between conversions, the arena at 2 bytes per
activation, weights rounded to half, and a constant beyond the fp16 range refused."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.lowering import lower_graph
from cuvil_sdk.compiler import frontend_and_passes
from cuvil_sdk.kernels.options import CodegenOptions
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.errors import ModelError
from cuvil_sdk.planner import plan_arena
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.half import FLOAT_LAYER_REASON, to_half


def conv_softmax_model(path: Path, weight: float = 0.5) -> Path:
    """Conv (an f16 kernel) -> Softmax -> Softmax (no f16 kernel: fp32) -> Relu (f16 again)."""
    w = numpy_helper.from_array(np.full((8, 3, 3, 3), weight, np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Softmax", ["c"], ["s1"], axis=1, name="soft1"),
             helper.make_node("Softmax", ["s1"], ["s2"], axis=1, name="soft2"),
             helper.make_node("Relu", ["s2"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def half_graph(model: Path):
    req = CompileRequest(model=model, board=get_board("rpi5"), profile=get_profile("standard"), precision="fp16")
    g = frontend_and_passes(req)
    return g, to_half(g)


def test_layers_without_an_f16_kernel_run_in_fp32_between_one_pair_of_conversions(tmp_path):
    g, float_layers = half_graph(conv_softmax_model(tmp_path / "m.onnx"))
    assert float_layers == ["soft1", "soft2"]
    ops = [n.op for n in g.nodes]
    # the two fp32 layers hand their float tensor to each other: one _ToFloat, one _ToHalf
    assert ops.count("_ToFloat") == 1 and ops.count("_ToHalf") == 1, ops
    assert ops.index("_ToFloat") < ops.index("Softmax") and ops.index("_ToHalf") > len(ops) - 1 - ops[::-1].index("Softmax")
    for node in g.nodes:
        dtypes = {g.tensors[t].dtype for t in node.inputs + node.outputs if t and not g.tensors[t].is_const}
        want = {"Softmax": {"float32"}, "_ToFloat": {"float16", "float32"}, "_ToHalf": {"float16", "float32"}}
        assert dtypes == want.get(node.op, {"float16"}), (node.name, dtypes)


def test_arena_is_two_bytes_per_activation_and_weights_are_half(tmp_path):
    model = conv_softmax_model(tmp_path / "m.onnx")
    req = CompileRequest(model=model, board=get_board("rpi5"), profile=get_profile("standard"), precision="fp32")
    g32 = frontend_and_passes(req)
    g16, _ = half_graph(model)
    assert g16.tensors[g16.inputs[0]].nbytes * 2 == g32.tensors[g32.inputs[0]].nbytes
    low16 = lower_graph(g16, plan_arena(g16), ["neon"], CodegenOptions(precision="fp16"), "m")
    low32 = lower_graph(g32, plan_arena(g32), ["neon"], CodegenOptions(precision="fp32"), "m")
    w16 = next(w for w in low16.weights if w.ctype == "cuvil_f16")
    assert w16.values.dtype == np.float16 and np.all(w16.values[w16.values != 0] == np.float16(0.5))
    conv16 = next(c for c in low16.calls if c.kernel.startswith("conv2d"))
    assert conv16.kernel == "conv2d_f16_neon"
    # 216 conv weights as fp16 against fp32 (the float32 bias and the padding alike in both)
    assert sum(w.nbytes for w in low32.weights) - sum(w.nbytes for w in low16.weights) == 8 * 27 * 2
    reasons = {(f.layer, f.reason) for f in low16.fallbacks}
    assert {("soft1", FLOAT_LAYER_REASON), ("soft2", FLOAT_LAYER_REASON)} <= reasons


def test_a_weight_beyond_the_fp16_range_is_refused(tmp_path):
    g, _ = half_graph(conv_softmax_model(tmp_path / "m.onnx", weight=1e5))
    with pytest.raises(ModelError, match=r"node 'conv' \(Conv\): a constant is beyond the fp16 range"):
        lower_graph(g, plan_arena(g), ["neon"], CodegenOptions(precision="fp16"), "m")
