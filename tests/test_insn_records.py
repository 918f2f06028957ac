"""How the instruction-count plugin's records become counts per sample and per layer
(sdk/runners/insn_count.py): markers outside a sample (the timed repeats after the samples)
are not counted, a layer's count runs from the previous marker to its own."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuvil_sdk.errors import ToolError
from cuvil_sdk.runners.insn_count import LAYERS_START, SAMPLE_END, SAMPLE_START, per_sample, read_records


def test_samples_and_layers_from_records():
    records = [(SAMPLE_START, 100), (LAYERS_START, 130), (0, 200), (2, 260), (SAMPLE_END, 300),
               (SAMPLE_START, 1000), (LAYERS_START, 1020), (0, 1090), (2, 1150), (SAMPLE_END, 1190),
               (LAYERS_START, 5000), (0, 5070), (2, 5130)]  # a timed repeat: outside any sample
    totals, layers = per_sample(records)
    assert totals == [200, 190]
    assert layers == [{0: 70, 2: 60}, {0: 70, 2: 60}]


def test_an_unfinished_sample_is_not_counted():
    totals, layers = per_sample([(SAMPLE_START, 10), (LAYERS_START, 12), (0, 40)])
    assert totals == [] and layers == []


def test_records_file_parsed_and_missing_file_named(tmp_path: Path):
    path = tmp_path / "marks.txt"
    path.write_text("mark 65534 10\nmark 65535 12\nmark 0 40\nmark 65533 50\ntotal 77\n")
    assert read_records(path) == [(SAMPLE_START, 10), (LAYERS_START, 12), (0, 40), (SAMPLE_END, 50)]
    with pytest.raises(ToolError, match="wrote no records"):
        read_records(tmp_path / "absent.txt")
