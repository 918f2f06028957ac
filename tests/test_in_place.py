"""In-place outputs (KernelDecl.in_place, planner/arena.py merge_in_place), without a toolchain:
the planner writes a node's output over one of its inputs only where the chosen kernel's
overlap rule says it may, the input has the output's bytes and nothing later reads it; graph
outputs are never written over (a graph input's arena copy is, after its last reader), and a
kernel without the rule (the portable add) keeps its own buffer."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.emit import select_for_plan
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels.contract import I, In, KernelInterfaceError, Out, declare, kernel
from cuvil_sdk.kernels.options import CodegenOptions
from cuvil_sdk.planner import Sharing, plan_arena
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest


def residual_model(path: Path, later: bool = False) -> Path:
    """x -> conv a -> conv b -> Add(b, a) -> y; with `later`, a is also read after the Add
    (y2 = Add(y, a)), so only b may be written over by the first Add."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), n)
             for n in ("w1", "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Conv", ["a", "w2"], ["b"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Add", ["b", "a"], ["y"], name="add1")]
    out = "y"
    if later:
        nodes.append(helper.make_node("Add", ["y", "a"], ["y2"], name="add2"))
        out = "y2"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 8, 6, 6])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def input_add_model(path: Path) -> Path:
    """Add(x, conv(x)): the Add is x's last reader, so it may write over x's arena copy."""
    w = numpy_helper.from_array(np.full((8, 8, 1, 1), 0.1, np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def planned(model: Path, board: str):
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile("lite"), calib="random")
    g = frontend_and_passes(req)
    quantize(g, req)
    _, sharing = select_for_plan(g, req.board, CodegenOptions(precision="int8"))
    # `separate`: the same plan but for the in-place outputs (an input copied in stays copied in)
    return g, plan_arena(g, sharing), plan_arena(g, Sharing(copied_in=sharing.copied_in)), sharing.in_place


def producer_output(g, op: str, index: int = 0) -> str:
    return [n for n in g.nodes if n.op == op][index].outputs[0]


def test_residual_add_writes_over_the_operand_that_dies(tmp_path):
    g, plan, separate, in_place = planned(residual_model(tmp_path / "m.onnx"), "cortex-m7")
    add = [n for n in g.nodes if n.op == "Add"][0]
    assert in_place[add.outputs[0]] == list(add.inputs)  # add_s8_dsp declares out over a or b
    y = add.outputs[0]
    assert plan.offsets[y] in (plan.offsets[add.inputs[0]], plan.offsets[add.inputs[1]])
    assert plan.size < separate.size, (plan.size, separate.size)
    assert len(plan.buffers) == len(separate.buffers) - 1


def test_an_operand_read_later_keeps_its_buffer(tmp_path):
    g, plan, _, _ = planned(residual_model(tmp_path / "m.onnx", later=True), "cortex-m7")
    first, second = [n for n in g.nodes if n.op == "Add"]
    a = producer_output(g, "Conv", 0)
    b = producer_output(g, "Conv", 1)
    assert first.inputs[1] == a and first.inputs[0] == b
    assert plan.offsets[first.outputs[0]] == plan.offsets[b] != plan.offsets[a]  # a is read by the second Add
    # the second Add: its output is a graph output, written over y (which dies there) or a
    assert plan.offsets[second.outputs[0]] in (plan.offsets[first.outputs[0]], plan.offsets[a])


def test_a_graph_inputs_arena_copy_is_written_over_after_its_last_reader(tmp_path):
    """The C API copies each input into the arena before the first layer: that copy is an
    ordinary buffer, free once its last reader ran (here the Add, which may then write over it)."""
    g, plan, _, in_place = planned(input_add_model(tmp_path / "m.onnx"), "cortex-m7")
    add = [n for n in g.nodes if n.op == "Add"][0]
    x = g.inputs[0]
    assert add.inputs[0] == x and in_place[add.outputs[0]] == [x, add.inputs[1]]  # x read in NCHW
    assert plan.offsets[add.outputs[0]] == plan.offsets[x]
    assert plan.offsets[add.outputs[0]] != plan.offsets[add.inputs[1]]


def test_a_kernel_without_an_overlap_rule_keeps_its_own_buffer(tmp_path):
    g, plan, separate, in_place = planned(residual_model(tmp_path / "m.onnx"), "cortex-m7-portable")
    assert in_place == {} and plan.offsets == separate.offsets
    add = [n for n in g.nodes if n.op == "Add"][0]
    assert plan.offsets[add.outputs[0]] not in (plan.offsets[t] for t in add.inputs)


def test_add_s8_dsp_declares_its_overlap_rule_and_declare_checks_it():
    assert kernel("cortex_m_dsp", "add_s8_dsp").in_place == (("out", "a"), ("out", "b"))
    assert kernel("portable", "add_s8").in_place == ()
    with pytest.raises(KernelInterfaceError, match="in_place"):
        declare("test_in_place", "k", In("x", "int8_t"), Out("y", "int8_t"), *I("n"), in_place=[("x", "y")])
