"""What `validate` says of each output and of each Concat segment of an output, so that one big
output cannot hide a small one: a YOLOv8-style head `Concat(boxes in 0..320, scores in 0..1)`
has cosine 0.9999 over the whole tensor while every score rounds to 0.

Per output and per segment (the slices of an output that its Concat's inputs fill, found in the
float model: quant/range_split.concat_layout): cosine, relative L2, MAE, RMSE, the reference's
range, the int8 step the build gives the values there, and two flags:
- "coarse": fewer than COARSE_STEPS int8 steps span the reference's range there;
- "collapsed": our values there take fewer than COLLAPSE_VALUES distinct values where the
  reference's take at least MANY_VALUES.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .quant.range_split import concat_layout

COARSE_STEPS = 16
COLLAPSE_VALUES = 4
MANY_VALUES = 16


def metrics(ours: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """Per sample (the leading axis), then averaged: cosine; over everything: the rest. top-1 is the
    argmax of each sample's flattened values (a classifier's class; see --metric for others)."""
    a = ours.reshape(len(ours), -1).astype(np.float64)
    b = ref.reshape(len(ref), -1).astype(np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)
    diff = a - b
    return {"cosine": float(cos.mean()), "cosine_min": float(cos.min()),
            "rel_l2": float(np.linalg.norm(diff) / (np.linalg.norm(b) + 1e-30)),
            "mae": float(np.abs(diff).mean()), "rmse": float(np.sqrt((diff ** 2).mean())),
            "top1_agreement": float((a.argmax(1) == b.argmax(1)).mean())}


@dataclass
class Part:
    """A segment of an output: [start, stop) along `axis` of one sample, and its int8 step."""
    name: str
    axis: int
    start: int
    stop: int
    step: float | None


def segment_parts(g_float, entry: dict, int8: bool) -> list[Part]:
    """The Concat segments of an output (none when no Concat makes it), each with the step the
    build gives it: its own scale in a range-split output, else the output's one scale."""
    layout = concat_layout(g_float, entry["name"])
    if layout is None:
        return []
    own = {s["start"]: s["scale"] for s in entry.get("segments", [])}
    return [Part(layout.source(g_float, name), layout.axis, start, stop,
                 (own.get(start, entry["scale"]) if int8 else None)) for start, stop, name in layout.bounds]


def values_flags(ours: np.ndarray, ref: np.ndarray, step: float | None) -> dict:
    """The reference's range, our step and distinct values, and the flags they raise."""
    low, high = float(ref.min()), float(ref.max())
    distinct_ours, distinct_ref = len(np.unique(ours)), len(np.unique(ref))
    flags = []
    if step is not None and step > 0 and (high - low) / step < COARSE_STEPS:
        flags.append("coarse")
    if distinct_ours < COLLAPSE_VALUES and distinct_ref >= MANY_VALUES:
        flags.append("collapsed")
    return {"range": [low, high], "step": step, "values": distinct_ours, "reference_values": distinct_ref,
            "flags": flags}


def output_statistics(ours: np.ndarray, ref: np.ndarray, entry: dict, parts: list[Part], int8: bool) -> dict:
    """An output's metrics and flags, with one entry per segment under "segments"."""
    stats = metrics(ours, ref)
    step = entry["scale"] if int8 and not entry.get("segments") else None
    stats.update(values_flags(ours, ref, step))
    stats["range_split"] = bool(entry.get("segments"))
    if parts:
        stats["segments"] = []
        for part in parts:
            where = [slice(None)] * ours.ndim
            where[part.axis + 1] = slice(part.start, part.stop)  # axis 0: the samples
            a, b = ours[tuple(where)], ref[tuple(where)]
            stats["segments"].append({"name": part.name, "axis": part.axis, "start": part.start, "stop": part.stop,
                                      **metrics(a, b), **values_flags(a, b, part.step)})
    return stats


def flag_lines(name: str, stats: dict) -> list[str]:
    """One line per flagged output or segment: what it is, what is wrong, what to do."""
    rows = [(f"output '{name}'", stats)] + [
        (f"output '{name}' segment '{s['name']}' ([{s['start']}:{s['stop']}] along axis {s['axis']})", s)
        for s in stats.get("segments", [])]
    lines = []
    for what, s in rows:
        if not s["flags"]:
            continue
        low, high = s["range"]
        why = []
        if "coarse" in s["flags"]:
            why.append(f"its int8 step {s['step']:.4g} is coarse against its range {low:.4g}..{high:.4g} "
                       f"({(high - low) / s['step']:.1f} steps)")
        if "collapsed" in s["flags"]:
            why.append(f"its values collapse to {s['values']} distinct (the reference has {s['reference_values']})")
        hint = "" if stats.get("range_split") else (" (one int8 scale covers the whole output: the range split, "
                                                    "unless --no-range-split, keeps one per Concat input)")
        lines.append(f"{what}: {'; '.join(why)}: the whole output's cosine does not show it{hint}")
    return lines
