"""Post-training calibration: observe every activation's range over sample inputs.

Methods: "minmax" (the observed extremes) and "percentile" (the 0.01% / 99.99%
quantiles of the observed values, robust to outliers).
"""
from __future__ import annotations

import sys
from typing import Iterable

import numpy as np

from ..errors import UsageError
from ..ir import Graph
from ..reference.batched import NotBatchable, batch_size, batchable, batches, run_float_batched, stack
from ..reference.interpreter import run_float_checked

METHODS = ("minmax", "percentile", "mse")
PERCENTILE = 99.99
SAMPLES_PER_TENSOR = 1 << 18  # values kept per tensor for the percentile method
KEPT_PER_SAMPLE = 4096  # values of one sample's tensor kept for percentile and mse (drawn at random)


class RangeObserver:
    def __init__(self, method: str) -> None:
        if method not in METHODS:
            raise UsageError(f"unknown calibration method '{method}' (known: {', '.join(METHODS)})")
        self.method = method
        self.low: dict[str, float] = {}
        self.high: dict[str, float] = {}
        self.kept: dict[str, list[np.ndarray]] = {}
        self.sums: dict[str, np.ndarray] = {}
        self.counts: dict[str, int] = {}
        self.rng = np.random.default_rng(0)

    def observe(self, name: str, value: np.ndarray, picks: list[np.ndarray | None] | None = None) -> None:
        """One sample's value; or, with `picks` (draw_picks: one entry per sample), samples
        stacked on axis 0, observed exactly as one at a time in that order would be."""
        value = np.asarray(value, dtype=np.float32)
        stacked = picks is not None
        per_sample = value if stacked else value[None]
        if value.ndim > int(stacked):
            rows = per_sample.reshape(per_sample.shape[0], -1, value.shape[-1])
            for sums in rows.sum(axis=1, dtype=np.float64):  # per sample, then in sample order: the same sums
                self.sums[name] = self.sums.get(name, 0.0) + sums
            self.counts[name] = self.counts.get(name, 0) + rows.shape[0] * rows.shape[1]
        self.low[name] = min(self.low.get(name, np.inf), float(value.min()))
        self.high[name] = max(self.high.get(name, -np.inf), float(value.max()))
        if self.method in ("percentile", "mse"):
            for i, sample in enumerate(per_sample):
                flat = sample.reshape(-1)
                pick = picks[i] if stacked else self.pick(flat.size)
                self.kept.setdefault(name, []).append(flat if pick is None else flat[pick])

    def pick(self, size: int) -> np.ndarray | None:
        """Which values of a tensor of `size` to keep (None: all)."""
        return self.rng.choice(size, KEPT_PER_SAMPLE, replace=False) if size > KEPT_PER_SAMPLE else None

    def draw_picks(self, tensors: list[tuple[str, int]], samples: int) -> dict[str, list[np.ndarray | None]]:
        """The picks of `samples` stacked samples, drawn in the order that observing them one
        sample at a time (each sample: `tensors` in order) would draw them."""
        picks: dict[str, list[np.ndarray | None]] = {name: [] for name, _ in tensors}
        if self.method in ("percentile", "mse"):
            for _ in range(samples):
                for name, size in tensors:
                    picks[name].append(self.pick(size))
        else:
            picks = {name: [None] * samples for name, _ in tensors}
        return picks

    def channel_mean(self, name: str) -> np.ndarray | None:
        return self.sums[name] / self.counts[name] if name in self.sums else None

    def range(self, name: str) -> tuple[float, float]:
        if self.method == "percentile" and name in self.kept:
            values = np.concatenate(self.kept[name])[:SAMPLES_PER_TENSOR]
            return float(np.percentile(values, 100 - PERCENTILE)), float(np.percentile(values, PERCENTILE))
        if self.method == "mse" and name in self.kept:
            return mse_range(np.concatenate(self.kept[name])[:SAMPLES_PER_TENSOR], self.low[name], self.high[name])
        return self.low[name], self.high[name]


def mse_range(values: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """The clipping range, a shrink of [low, high], whose int8 rounding error is smallest."""
    low, high = min(0.0, low), max(0.0, high)
    best, best_err = (low, high), np.inf
    for factor in np.linspace(0.3, 1.0, 36):
        lo, hi = low * factor, high * factor
        scale = (hi - lo) / 255.0
        if scale <= 0:
            continue
        zp = np.round(-128 - lo / scale)
        q = np.clip(np.round(values / scale) + zp, -128, 127)
        err = float(np.mean(((q - zp) * scale - values) ** 2))
        if err < best_err:
            best, best_err = (lo, hi), err
    return best


def calibrate(g: Graph, samples: list[dict[str, np.ndarray]], count: int, method: str = "minmax",
              progress: bool = False) -> RangeObserver:
    """Observe every activation over the samples: batches of samples at once through the
    batched reference where the graph allows it (the same ranges), else one at a time."""
    samples = list(samples)
    if batchable(g) and samples:
        try:
            return calibrate_batched(g, samples, method, progress)
        except NotBatchable:
            pass
    return calibrate_per_sample(g, samples, count, method, progress)


def observed(g: Graph, name: str) -> bool:
    """A float activation (integer and bool tensors have no range to observe: never quantized)."""
    return name in g.tensors and not g.tensors[name].is_const and not g.tensors[name].is_integer


def calibrate_batched(g: Graph, samples: list[dict[str, np.ndarray]], method: str, progress: bool) -> RangeObserver:
    observer = RangeObserver(method)
    order = [n for n in samples[0]] + [o for node in g.nodes for o in node.outputs]
    tensors = [(n, g.tensors[n].size) for n in order if observed(g, n)]
    done = 0
    for batch in batches(samples, batch_size(g, len(samples))):
        picks = observer.draw_picks(tensors, len(batch))

        def visit(name: str, value: np.ndarray) -> None:
            if observed(g, name):
                observer.observe(name, value, picks[name])
        run_float_batched(g, stack(batch), visit)
        done += len(batch)
        show_progress(progress, done, len(samples))
    end_progress(progress)
    return observer


def calibrate_per_sample(g: Graph, samples: Iterable[dict[str, np.ndarray]], count: int, method: str,
                         progress: bool) -> RangeObserver:
    observer = RangeObserver(method)
    for i, feeds in enumerate(samples):
        for name, value in run_float_checked(g, feeds).items():
            if observed(g, name):
                observer.observe(name, value)
        show_progress(progress, i + 1, count)
    end_progress(progress)
    return observer


def show_progress(progress: bool, done: int, count: int) -> None:
    if progress:
        print(f"\rcalibrating {done}/{count}", end="", file=sys.stderr, flush=True)


def end_progress(progress: bool) -> None:
    if progress:
        print(file=sys.stderr)
