"""An arena budget: when the plan is larger, run the first layers in row bands.

`fit_budget(g, budget, plan)` plans the graph (`plan`: graph -> ArenaPlan, the caller's
kernel selection and planner) and, when the arena is over the budget, tries regions of
row-local layers from the first one on (passes/row_bands.py) split into bands, cheapest
first: the cost is the multiply-adds the bands compute again (the halo rows each band
recomputes), plus a call's fixed work for every extra kernel call. The first that fits is
kept; when none does, BudgetError (exit 4) names the smallest arena the search reached.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import BudgetError
from ..ir import Graph
from ..passes.row_bands import Region, band_limits, closed_regions, region_macs, split_rows
from .arena import ArenaPlan

BAND_COUNTS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
CALL_COST = 400  # MAC-equivalents of one kernel call's fixed work (set-up, pointers, requantization tables)
MAX_TRIES = 48   # plans made at most before giving up (each selects kernels and plans the arena)
NEAR, SEARCH = 1.15, 600  # a plan within 15% of the budget is searched again with 600 order swaps


@dataclass
class Tiling:
    """What the budget made of the graph: for the build information and the report."""
    region: list[str]  # the layers run in bands, in order
    bands: int
    band_rows: list[list[int]]  # the region output's rows of each band, [first, end)
    macs: int  # the region's multiply-adds in bands
    whole_macs: int  # ... run whole
    untiled_arena: int
    budget: int

    def as_dict(self) -> dict:
        extra = self.macs - self.whole_macs
        return {"region": self.region, "bands": self.bands, "band_rows": self.band_rows,
                "region_macs": self.whole_macs, "recompute_macs": extra,
                "recompute_share": round(extra / self.whole_macs, 4) if self.whole_macs else 0.0,
                "untiled_arena_bytes": self.untiled_arena, "budget": self.budget}


def first_stage_regions(g: Graph) -> list[Region]:
    """The closed regions that start at the first row-local layer: the high-resolution start
    of the network, where the largest tensors are."""
    regions = closed_regions(g)
    starts = sorted({r.start for r in regions})
    return [r for r in regions if starts and r.start == starts[0]]


def candidates(g: Graph) -> list[tuple[float, int, Region]]:
    """(cost, bands, region) for every first-stage region and band count, cheapest first."""
    found = []
    for region in first_stage_regions(g):
        rows = g.tensors[region.nodes(g)[-1].outputs[0]].shape[1]
        for bands in (b for b in BAND_COUNTS if b <= rows):
            banded, whole = region_macs(g, region, bands)
            calls = (bands - 1) * (region.end - region.start)
            found.append((banded - whole + CALL_COST * calls, bands, region))
    return sorted(found, key=lambda c: (c[0], c[1], c[2].end))


def tried(found: list[tuple[float, int, Region]]) -> list[tuple[float, int, Region]]:
    """The candidates planned, at most MAX_TRIES: the cheapest three quarters of them, then the
    most bands of each region (the least memory, for the error's smallest arena), cheapest first."""
    cheap = found[:MAX_TRIES * 3 // 4]
    rest = sorted(found[len(cheap):], key=lambda c: (-c[1], c[0]))[:MAX_TRIES - len(cheap)]
    return cheap + sorted(rest, key=lambda c: c[0])


def fit_budget(g: Graph, budget: int | None, plan: Callable[..., ArenaPlan],
               note: Callable[[str], None] = lambda _: None, board: str | None = None
               ) -> tuple[Graph, ArenaPlan, Tiling | None]:
    """The graph to build and its plan: g itself when its arena fits `budget` (or there is none),
    else g with its first layers in row bands, the cheapest split that fits. `plan(graph,
    search=0)`: the caller's kernel selection and planner (search: planner.plan_arena's).
    `board`: the board whose RAM the budget is (no --arena-budget given), for the error."""
    whole = plan(g)
    if budget is None or whole.size <= budget:
        return g, whole, None
    note(f"the arena ({whole.size} B) is over the budget of {budget} B: running the first layers in row bands")
    smallest, how = whole.size, "without bands"
    for _cost, bands, region in tried(candidates(g)):
        banded = split_rows(g, region, bands)
        p = plan(banded)
        if budget < p.size <= budget * NEAR:  # close: a longer search of placement orders may fit it
            p = plan(banded, search=SEARCH)
        if p.size < smallest:
            smallest, how = p.size, f"layers {region.start}-{region.end - 1} in {bands} bands"
        if p.size <= budget:
            names = [n.name for n in region.nodes(g)]
            rows = g.tensors[region.nodes(g)[-1].outputs[0]].shape[1]
            macs, whole_macs = region_macs(g, region, bands)
            tiling = Tiling(names, bands, [list(r) for r in band_limits(rows, bands)], macs, whole_macs,
                            whole.size, budget)
            return banded, p, tiling
    raise over_budget(budget, smallest, how, board)


def over_budget(budget: int, smallest: int, how: str, board: str | None) -> BudgetError:
    """The error when no split fits: a budget the user gave can be raised; a board's RAM cannot."""
    if board is None:
        return BudgetError(f"the arena cannot be brought within the budget of {budget} B: the smallest arena found "
                           f"is {smallest} B ({how}); give --arena-budget {smallest} or more")
    return BudgetError(f"the model does not fit board '{board}': its arena needs {smallest} B at the least ({how}), "
                       f"the board's RAM leaves {budget} B for it (its size less the stack); choose a board with "
                       f"more RAM or place the arena in a larger region (--arena-region)")
