"""The arena planner (planner/arena.py) on the bundled models, without a toolchain: no two
buffers alive at the same step overlap, except an output over the input its kernel's overlap
rule lets it cover, at exactly the planned distance; a graph input's buffer is free after its
last reader (the C API copied it in), and on a microcontroller an input that only feeds a
Transpose has no buffer of its own (the copy-in writes the Transpose's output); whole-tensor
planning reaches its lower bound, the largest sum of bytes alive at one step, and the overlaps
take the MLPerf Tiny models below it."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.emit import select_for_plan
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels.options import CodegenOptions
from cuvil_sdk.planner import Sharing, plan_arena
from cuvil_sdk.planner.arena import align
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest

ROOT = Path(__file__).resolve().parents[1]
MODELS = {name: ROOT / "sdk" / "examples" / f"{name}.onnx" for name in ("digits_cnn", "resnet8_fp32", "ad_fp32")}
MODELS["vww"] = ROOT / "benchmarks" / "models" / "mobilenet_v1_025_vww_trained.onnx"  # the MLPerf Tiny VWW, trained
MODELS["kws"] = ROOT / "benchmarks" / "models" / "ds_cnn_kws_trained.onnx"  # the MLPerf Tiny DS-CNN, trained
TFLM_ARENA = {"resnet8_fp32": 55008, "kws": 22832, "vww": 100720, "ad_fp32": 3024}  # issue 28, TFLM's greedy planner


def selected(model: str, board: str = "cortex-m7"):
    req = CompileRequest(model=MODELS[model], board=get_board(board), profile=get_profile("lite"), calib="random")
    g = frontend_and_passes(req)
    quantize(g, req)
    _, sharing = select_for_plan(g, req.board, CodegenOptions(precision="int8"))
    return g, sharing


def planned(model: str, board: str = "cortex-m7"):
    g, sharing = selected(model, board)
    return g, plan_arena(g, sharing)


def whole_tensors(sharing: Sharing) -> Sharing:
    """The same kernels' sharing without the overlaps: every buffer whole and apart."""
    return Sharing(sharing.in_place, {}, sharing.copied_in)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_buffers_alive_together_overlap_only_as_their_kernels_allow(model):
    g, plan = planned(model)
    allowed = {(o["output"], o["input"]): o["distance"] for o in plan.overlaps}
    bufs = plan.buffers
    for i, a in enumerate(bufs):
        for b in bufs[i + 1:]:
            alive_together = not (a["last"] < b["first"] or b["last"] < a["first"])
            apart = a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
            if apart or not alive_together:
                continue
            distance = {allowed.get((a["tensor"], b["tensor"])): b["offset"] - a["offset"],
                        allowed.get((b["tensor"], a["tensor"])): a["offset"] - b["offset"]}
            assert any(k == v for k, v in distance.items() if k is not None), (a, b)
            # the output is born where its input dies: they share exactly one step
            assert min(a["last"], b["last"]) == max(a["first"], b["first"]), (a, b)
    assert plan.size >= max(b["offset"] + b["bytes"] for b in bufs)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_whole_tensor_planning_is_the_peak_of_bytes_alive_at_one_step(model):
    """Whole-tensor planning cannot go below the bytes alive at the busiest step; the planner's
    best placement order reaches it here (largest first alone left VWW at 101,376 B against a
    peak of 82,944 B)."""
    g, sharing = selected(model)
    plan = plan_arena(g, whole_tensors(sharing))
    assert not plan.overlaps
    steps = range(min(b["first"] for b in plan.buffers), max(b["last"] for b in plan.buffers) + 1)
    peak = max(sum(b["bytes"] for b in plan.buffers if b["first"] <= s <= b["last"]) for s in steps)
    assert plan.size == align(peak)


@pytest.mark.parametrize("model", sorted(TFLM_ARENA))
def test_overlaps_take_the_mlperf_tiny_models_below_whole_tensors_and_tflm(model):
    """Depthwise convs in place, convs over the input rows they have read, the input written in
    the first layer's layout: below whole-tensor planning (but the FC autoencoder, whose largest
    step is an FC that declares no overlap) and at most 0.8x TFLM's arena (issue 28's goal for
    the default build)."""
    g, sharing = selected(model)
    plan, whole = plan_arena(g, sharing), plan_arena(g, whole_tensors(sharing))
    assert plan.size <= 0.8 * TFLM_ARENA[model]
    if model != "ad_fp32":
        assert plan.overlaps and plan.size < whole.size


def test_a_graph_input_is_freed_after_its_last_reader():
    g, plan = planned("resnet8_fp32", "host")
    x = g.inputs[0]
    (entry,) = [b for b in plan.buffers if b["tensor"] == x]
    readers = [i for i, n in enumerate(g.nodes) if x in n.inputs]
    assert entry["last"] == max(readers) < len(g.nodes)


def test_on_a_microcontroller_an_input_feeding_a_transpose_is_copied_into_its_output():
    g, plan = planned("vww")
    x = g.inputs[0]
    (transpose,) = [n for n in g.nodes if x in n.inputs]
    assert transpose.op == "Transpose" and plan.copied_in == {x: transpose.outputs[0]}
    assert x not in {b["tensor"] for b in plan.buffers}
    assert plan.offsets[x] == plan.offsets[transpose.outputs[0]]
    (target,) = [b for b in plan.buffers if b["tensor"] == transpose.outputs[0]]
    assert target["first"] == -1  # written by the copy-in, before the first layer
