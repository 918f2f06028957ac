"""The arena planner (planner/arena.py) on the bundled models, without a toolchain: no two
buffers alive at the same step overlap; a graph input's buffer is free after its last reader
(the C API copied it in); and the plan reaches the lower bound of whole-tensor planning, the
largest sum of bytes alive at one step, on the MLPerf Tiny models."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.emit import select_for_plan
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels.options import CodegenOptions
from cuvil_sdk.planner import plan_arena
from cuvil_sdk.planner.arena import align
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest

ROOT = Path(__file__).resolve().parents[1]
MODELS = {name: ROOT / "sdk" / "examples" / f"{name}.onnx" for name in ("digits_cnn", "resnet8_fp32", "ad_fp32")}
MODELS["vww"] = ROOT / "benchmarks" / "models" / "mobilenet_v1_025_vww_trained.onnx"  # the MLPerf Tiny VWW, trained


def planned(model: str, board: str = "cortex-m7"):
    req = CompileRequest(model=MODELS[model], board=get_board(board), profile=get_profile("lite"),
                         calib="random")
    g = frontend_and_passes(req)
    quantize(g, req)
    _, in_place = select_for_plan(g, req.board, CodegenOptions(precision="int8"))
    return g, plan_arena(g, in_place)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_buffers_alive_together_never_overlap(model):
    _, plan = planned(model)
    bufs = plan.buffers
    for i, a in enumerate(bufs):
        for b in bufs[i + 1:]:
            alive_together = not (a["last"] < b["first"] or b["last"] < a["first"])
            apart = a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
            assert apart or not alive_together, (a, b)
    assert plan.size >= max(b["offset"] + b["bytes"] for b in bufs)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_arena_is_the_peak_of_bytes_alive_at_one_step(model):
    """Whole-tensor planning cannot go below the bytes alive at the busiest step; the planner's
    best placement order reaches it here (largest first alone left VWW at 101,376 B against a
    peak of 82,944 B)."""
    _, plan = planned(model)
    steps = range(min(b["first"] for b in plan.buffers), max(b["last"] for b in plan.buffers) + 1)
    peak = max(sum(b["bytes"] for b in plan.buffers if b["first"] <= s <= b["last"]) for s in steps)
    assert plan.size == align(peak)


def test_a_graph_input_is_freed_after_its_last_reader():
    g, plan = planned("resnet8_fp32")
    x = g.inputs[0]
    (entry,) = [b for b in plan.buffers if b["tensor"] == x]
    readers = [i for i, n in enumerate(g.nodes) if x in n.inputs]
    assert entry["last"] == max(readers) < len(g.nodes)
