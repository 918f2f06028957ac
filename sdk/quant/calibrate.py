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
from ..reference.interpreter import run_float_checked

METHODS = ("minmax", "percentile", "mse")
PERCENTILE = 99.99
SAMPLES_PER_TENSOR = 1 << 18  # values kept per tensor for the percentile method


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

    def observe(self, name: str, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.float32)
        if value.ndim:
            rows = value.reshape(-1, value.shape[-1]).astype(np.float64)
            self.sums[name] = self.sums.get(name, 0.0) + rows.sum(axis=0)
            self.counts[name] = self.counts.get(name, 0) + rows.shape[0]
        flat = value.reshape(-1)
        self.low[name] = min(self.low.get(name, np.inf), float(flat.min()))
        self.high[name] = max(self.high.get(name, -np.inf), float(flat.max()))
        if self.method in ("percentile", "mse"):
            if flat.size > 4096:
                flat = self.rng.choice(flat, 4096, replace=False)
            self.kept.setdefault(name, []).append(flat)

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


def calibrate(g: Graph, samples: Iterable[dict[str, np.ndarray]], count: int, method: str = "minmax",
              progress: bool = False) -> RangeObserver:
    observer = RangeObserver(method)
    for i, feeds in enumerate(samples):
        for name, value in run_float_checked(g, feeds).items():
            if name in g.tensors and not g.tensors[name].is_const:
                observer.observe(name, value)
        if progress:
            print(f"\rcalibrating {i + 1}/{count}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return observer
