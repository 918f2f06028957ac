"""The overlap rules' distances (kernels/overlap.py) against a byte-level simulation of the
loop orders they describe: one memory holds the output and, `distance` bytes above it, the
input; the simulated kernel reads and writes in its order. At the rule's gap (and anywhere
above it) the outputs equal those computed from an untouched input; closer, they do not (the
gap is the least safe distance, up to the rule's stated margin). The real kernels run with
these overlaps in board_tests (the MLPerf Tiny models on cortex-m7, bit for bit)."""
from __future__ import annotations

import numpy as np
import pytest

from cuvil_sdk.kernels.overlap import raster_gap, row_gap


def window_sum(img: np.ndarray, oy: int, ox: int, k: int, s: int, pt: int, pl: int, o: int) -> int:
    """A stand-in for a convolution's output channel o at (oy, ox): any function of the window."""
    h, w, c = img.shape
    total = 0
    for ky in range(k):
        for kx in range(k):
            y, x = oy * s - pt + ky, ox * s - pl + kx
            if 0 <= y < h and 0 <= x < w:
                total += int(img[y, x].astype(np.int64) @ (np.arange(c) * 3 + o + 1 + ky * 7 + kx * 5))
    return total % 251


def simulate_raster(h, w, c, oc, k, s, pt, pl, distance, seed=0) -> bool:
    """Pixel after pixel: the window read (channel after channel of the output, re-reading it,
    as the K-tiled path does per block), then the pixel's bytes written."""
    oh, ow = (h + 2 * pt - k) // s + 1, (w + 2 * pl - k) // s + 1
    x = np.random.default_rng(seed).integers(0, 256, (h, w, c)).astype(np.uint8)
    want = [[window_sum(x, oy, ox, k, s, pt, pl, o) for o in range(oc)] for oy in range(oh) for ox in range(ow)]
    base = max(0, -distance)
    mem = np.zeros(base + max(oh * ow * oc, distance + h * w * c) + 8, np.uint8)
    mem[base + distance:base + distance + x.size] = x.reshape(-1)
    for p in range(oh * ow):
        oy, ox = divmod(p, ow)
        for o in range(oc):
            view = mem[base + distance:base + distance + x.size].reshape(h, w, c)
            mem[base + p * oc + o] = window_sum(view, oy, ox, k, s, pt, pl, o)
    return list(mem[base:base + oh * ow * oc]) == [v for row in want for v in row]


def simulate_rows(h, w, c, k, s, pt, pl, distance, chunk, seed=0) -> bool:
    """A depthwise row ring: per chunk of channels, per output row, the input rows it needs
    copied into the ring first, then the row computed and written."""
    oh, ow = (h + 2 * pt - k) // s + 1, (w + 2 * pl - k) // s + 1
    x = np.random.default_rng(seed).integers(0, 256, (h, w, c)).astype(np.uint8)

    def dw(img, oy, ox, ch):
        return window_sum(img[:, :, ch:ch + 1], oy, ox, k, s, pt, pl, ch)

    want = np.array([[[dw(x, oy, ox, ch) for ch in range(c)] for ox in range(ow)] for oy in range(oh)], np.uint8)
    mem = np.zeros(max(oh * ow * c, distance + x.size) + 8, np.uint8)
    mem[distance:distance + x.size] = x.reshape(-1)
    for c0 in range(0, c, chunk):
        ring = np.zeros_like(x)
        for oy in range(oh):
            for iy in range(max(0, oy * s - pt), min(h, oy * s - pt + k)):
                ring[iy, :, c0:c0 + chunk] = mem[distance:distance + x.size].reshape(h, w, c)[iy, :, c0:c0 + chunk]
            for ox in range(ow):
                for ch in range(c0, min(c, c0 + chunk)):
                    mem[(oy * ow + ox) * c + ch] = dw(ring, oy, ox, ch)
    return np.array_equal(mem[:oh * ow * c].reshape(oh, ow, c), want)


RASTER = [  # h, w, c, oc, k, s, pt, pl
    (6, 5, 3, 4, 3, 1, 1, 1),     # a stem: more output than input bytes per pixel
    (6, 6, 4, 2, 3, 2, 0, 0),     # stride 2, no top padding: fewer output bytes
    (5, 7, 2, 6, 1, 1, 0, 0),     # pointwise, expanding
    (6, 4, 3, 3, 3, 1, 2, 2),     # padding wider than the stride: the first two rows read row 0
]


@pytest.mark.parametrize("case", RASTER)
def test_raster_gap_is_safe_and_nearly_tight(case):
    h, w, c, oc, k, s, pt, pl = case
    oh, ow = (h + 2 * pt - k) // s + 1, (w + 2 * pl - k) // s + 1
    gap = raster_gap(h, w, c, oh, ow, oc, s, s, pt, pl)
    for distance in (gap, gap + 1, gap + 7, oh * ow * oc):
        assert simulate_raster(h, w, c, oc, k, s, pt, pl, distance), distance
    # closer than the gap less one pixel's bytes (the margin for kernels that re-read a pixel's
    # window between writes of its channels), the input is written over before it is read
    assert not simulate_raster(h, w, c, oc, k, s, pt, pl, gap - oc - 1)


ROWS = [  # h, w, c, k, s, pt, pl
    (6, 5, 4, 3, 1, 1, 1),    # same size: one row apart
    (8, 6, 4, 3, 2, 0, 0),    # stride 2 without top padding: the very same start
    (7, 5, 4, 3, 2, 1, 1),    # stride 2 with padding
]


@pytest.mark.parametrize("case", ROWS)
def test_row_gap_is_safe_and_tight_for_one_chunk(case):
    h, w, c, k, s, pt, pl = case
    oh, ow = (h + 2 * pt - k) // s + 1, (w + 2 * pl - k) // s + 1
    gap = row_gap(h, w, c, oh, ow, s, pt)
    for distance in {max(0, gap), max(0, gap) + 1, oh * ow * c}:
        assert simulate_rows(h, w, c, k, s, pt, pl, distance, chunk=c), distance
    if gap > 0:
        assert not simulate_rows(h, w, c, k, s, pt, pl, gap - 1, chunk=c)


def test_row_gap_in_chunks_needs_whole_pixels():
    """Channels in chunks over the whole image: at the gap rounded up to whole pixels the
    output is right; at a distance between whole pixels, a chunk writes over the next chunk's
    input channels before they are read."""
    h, w, c, k, s, pt, pl = 6, 5, 4, 3, 1, 1, 1
    gap = row_gap(h, w, c, h, w, s, pt)
    whole = -(-gap // c) * c
    assert simulate_rows(h, w, c, k, s, pt, pl, whole, chunk=2)
    assert not simulate_rows(h, w, c, k, s, pt, pl, whole + 1, chunk=2)
