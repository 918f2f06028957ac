"""The weight blob's layout (sdk/codegen/weights_blob.py) and the checks of --weights,
--weights-region and --arena-region against the board data (messages as the CLI prints them)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.weights_blob import WEIGHT_ALIGN, arena_region_of, choose_placement, layout
from cuvil_sdk.errors import UsageError


def test_every_array_lies_aligned_at_its_offset_in_little_endian():
    arrays = [np.arange(5, dtype=np.int8), np.array([-3, 70000], dtype=np.int32), np.array([1.5, -2.25], np.float32),
              np.array([-2, 300], dtype=">i2")]
    blob = layout(arrays)
    assert blob.offsets == [0, 16, 32, 48]
    for a, offset in zip(arrays, blob.offsets):
        little = a.astype(a.dtype.newbyteorder("<"))
        assert blob.data[offset:offset + a.nbytes] == little.tobytes()
    assert len(blob.data) % WEIGHT_ALIGN == 0 and len(blob.data) == 64
    assert blob.crc32 == zlib.crc32(blob.data)


def test_a_model_without_weights_still_has_a_blob_to_map():
    assert len(layout([]).data) == WEIGHT_ALIGN


@pytest.mark.parametrize("board, placement, region, message", [
    ("cortex-m7", "file", None, "--weights file needs a Linux board"),
    ("host", "region", None, "--weights region: board 'host' names no memory region"),
    ("cortex-m7", "region", "dtcm",
     "--weights-region dtcm: board 'cortex-m7' has no such memory region (it has: psram)"),
    ("cortex-m7", "linked", "psram", "--weights-region psram needs --weights region"),
    ("host", "rom", None, "--weights 'rom': expected one of linked, region, file"),
])
def test_placements_the_board_cannot_take_are_refused(board, placement, region, message):
    with pytest.raises(UsageError) as err:
        choose_placement(get_board(board), placement, region)
    assert message in str(err.value)


def test_placements_the_board_offers():
    m7, nucleo = get_board("cortex-m7"), get_board("nucleo-f767zi")
    assert choose_placement(m7, "region", None).section("net") == ".psram.rodata.net_weights"
    assert choose_placement(nucleo, "region", None).region == "qspi"
    assert choose_placement(get_board("rpi5"), "file", None).placement == "file"
    assert choose_placement(m7, None, None).section("net") == ".rodata.net_weights"


def test_the_arena_goes_only_to_a_writable_region():
    assert arena_region_of(get_board("cortex-m7"), "psram") == "psram"
    assert arena_region_of(get_board("cortex-m7"), "ram") == ""
    with pytest.raises(UsageError) as err:
        arena_region_of(get_board("nucleo-f767zi"), "qspi")
    assert "no writable memory region of that name (it has: ram)" in str(err.value)
