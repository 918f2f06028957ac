"""Overlap rules: where a kernel's output may lie over one of its inputs (planner/arena.py).

A kernel that reads its input in a known order and writes its output behind the reading
position lets the planner place the output over the part of the input it no longer needs:
MCUNet/TinyEngine's in-place depthwise, a pointwise conv writing over input pixels it has
read. The rule is declared with the kernel (`declare(..., overlap=[("out", "in", rule)])`),
because only the kernel's own loop order makes it true; `rule(call)` computes, from the
call's geometry, the `Overlap` it allows, or None where its order gives no guarantee (a
batch of images, groups walked one after another, a transposed walk).

`Overlap.gap`: the input's buffer may start `gap` bytes after the output's, or further (a
negative gap: before it); the output's writes then never reach an input byte that is still
to be read. `modulus`: the distance must also be a multiple of it (a kernel that walks the
channels in chunks over the whole image writes channel j only over input channel j of an
earlier pixel when the distance is a whole number of pixels).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Overlap:
    gap: int
    modulus: int = 1


def first_bytes(h: int, w: int, ic: int, oh: int, ow: int, sh: int, sw: int, pt: int, pl: int) -> np.ndarray:
    """Per output pixel (raster order), the first input byte its window reads: the top-left
    element of the window inside the image (NHWC, ic bytes a pixel)."""
    y, x = np.divmod(np.arange(oh * ow, dtype=np.int64), ow)
    rows = np.clip(y * sh - pt, 0, h)
    cols = np.clip(x * sw - pl, 0, w)  # a window wholly in the padding counts as a read: safe
    return (rows * w + cols) * ic


def raster_gap(h: int, w: int, ic: int, oh: int, ow: int, oc: int, sh: int, sw: int, pt: int, pl: int) -> int:
    """The gap of a kernel that walks output pixels in raster order and writes a pixel's oc
    bytes only after reading its window (tiles of pixels too: a tile reads its pixels'
    windows first). Writes up to the end of pixel p must stay below every byte pixels p, p+1,
    ... still read: gap = max over p of (p + 1) * oc - min(first byte of pixels p..)."""
    first = first_bytes(h, w, ic, oh, ow, sh, sw, pt, pl)
    still_read = np.minimum.accumulate(first[::-1])[::-1]
    written = (np.arange(oh * ow, dtype=np.int64) + 1) * oc
    return int((written - still_read).max())


def row_gap(h: int, w: int, c: int, oh: int, ow: int, sh: int, pt: int) -> int:
    """The gap of a kernel that walks output rows in order and writes a row only after the
    input rows it needs are read (a depthwise row ring): rows up to y written, input rows from
    (y + 1) * sh - pt on still to be read. A depthwise 3 x 3, stride 1, pads 1: one row."""
    y = np.arange(oh, dtype=np.int64)
    written = (y + 1) * ow * c
    still_read = np.clip((y + 1) * sh - pt, 0, h) * w * c
    return int((written[:-1] - still_read[:-1]).max()) if oh > 1 else -h * w * c
