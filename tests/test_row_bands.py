"""Row bands (passes/row_bands.py) and the arena budget (planner/budget.py), without a toolchain:
which rows each band computes, the band graph's views, and the MLPerf Tiny models planned within
half of TFLite Micro's arena on cortex-m7 (board_tests/test_arena_budget.py runs them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.emit import select_for_plan
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.errors import BudgetError
from cuvil_sdk.kernels.options import CodegenOptions
from cuvil_sdk.passes.row_bands import Region, band_limits, band_rows, closed_regions, region_macs, split_rows
from cuvil_sdk.planner import plan_arena
from cuvil_sdk.planner.budget import fit_budget
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"resnet8": ROOT / "sdk" / "examples" / "resnet8_fp32.onnx", "ad": ROOT / "sdk" / "examples" / "ad_fp32.onnx",
          "kws": ROOT / "benchmarks" / "models" / "ds_cnn_kws_trained.onnx",
          "vww": ROOT / "benchmarks" / "models" / "mobilenet_v1_025_vww_trained.onnx"}
HALF_TFLM = {"resnet8": 27504, "kws": 11416, "vww": 50360, "ad": 1512}  # issue 28's budgets


def quantized(model: str):
    req = CompileRequest(model=MODELS[model], board=get_board("cortex-m7"), profile=get_profile("lite"), calib="random")
    g = frontend_and_passes(req)
    quantize(g, req)
    return g, req


def planner(req):
    def plan(graph, search=0):
        return plan_arena(graph, select_for_plan(graph, req.board, CodegenOptions(precision="int8"))[1], search)
    return plan


def test_band_limits_cover_the_rows_once():
    assert band_limits(32, 10) == [(0, 4), (4, 8), (8, 11), (11, 14), (14, 17), (17, 20), (20, 23), (23, 26),
                                   (26, 29), (29, 32)]
    assert band_limits(5, 5) == [(i, i + 1) for i in range(5)]


def test_each_band_computes_the_rows_the_windows_after_it_read():
    """ResNet-8's first block: stem 3x3 -> conv 3x3 -> conv 3x3, + the stem's output. A band of
    rows [8, 12) of the block's output needs rows [7, 13) of the middle conv's output and
    [6, 14) of the stem's (read by the middle conv's windows and the Add); the input's [5, 15)."""
    g, _ = quantized("resnet8")
    region = [r for r in closed_regions(g) if r.end - r.start == 4][0]
    nodes = region.nodes(g)
    assert [n.op for n in nodes] == ["Conv", "Conv", "Conv", "Add"]
    need = band_rows(g, region, (8, 12))
    stem, middle = nodes[0].outputs[0], nodes[1].outputs[0]
    assert need[middle] == (7, 13) and need[stem] == (6, 14) and need[nodes[0].inputs[0]] == (5, 15)
    assert band_rows(g, region, (0, 4))[stem] == (0, 6)  # the image's top: its padding, no row above
    banded, whole = region_macs(g, region, 8)
    assert banded > whole


def test_the_band_graph_reads_and_writes_views_of_the_whole_tensors():
    g, _ = quantized("resnet8")
    region = [r for r in closed_regions(g) if r.end - r.start == 4][0]
    out = region.nodes(g)[-1].outputs[0]
    banded = split_rows(g, region, 4)
    assert len(banded.nodes) == len(g.nodes) + 3 * 4
    writers = [n for n in banded.nodes if n.outputs[0].startswith(out + "@b")]
    row = g.tensors[out].nbytes // 32
    assert [banded.tensors[n.outputs[0]].view for n in writers] == [(out, b * 8 * row) for b in range(4)]
    first_conv = banded.nodes[region.start]
    assert first_conv.attrs["pads"][0] == 1 and banded.nodes[region.start + 4].attrs["pads"][0] == 0
    assert banded.tensors[first_conv.inputs[0]].view is not None  # rows of the whole input


@pytest.mark.parametrize("model", sorted(HALF_TFLM))
def test_the_mlperf_tiny_models_plan_within_half_of_tflms_arena(model):
    g, req = quantized(model)
    built, plan, tiling = fit_budget(g, HALF_TFLM[model], planner(req))
    assert plan.size <= HALF_TFLM[model]
    assert (tiling is not None) == (model == "resnet8")  # the others fit whole, with overlaps
    if tiling:
        assert tiling.macs > tiling.whole_macs and built is not g


def test_an_unreachable_budget_names_the_smallest_arena_found():
    g, req = quantized("resnet8")
    with pytest.raises(BudgetError, match=r"within the budget of 2048 B: the smallest arena found is (\d+) B "):
        fit_budget(g, 2048, planner(req))


def test_a_region_is_closed_and_row_local():
    g, _ = quantized("vww")
    for region in closed_regions(g)[:20]:
        inner = {t for n in region.nodes(g)[:-1] for t in n.outputs}
        later = [n for n in g.nodes[region.end:] if inner & set(n.inputs)]
        assert not later and all(n.op in ("Conv", "Add") for n in region.nodes(g))
    assert Region(0, 1).nodes(g) == g.nodes[:1]
