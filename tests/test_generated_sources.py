"""The generated sources stay byte-identical to those recorded before the library-core
restructuring (tests/generated_sources.py says how they were recorded and what counts):
every example model for every board, float precisions and the options that change the C. The
example models on cortex-m7, host and rpi5 also have no fallbacks: every layer runs a kernel of
the board's fast set (what `compile --json` and `build` report)."""
from __future__ import annotations

import json

import pytest

from generated_sources import FIXTURE, cases, compile_case

RECORDED = json.loads(FIXTURE.read_text())


def test_every_case_is_recorded():
    assert sorted(cases()) == sorted(RECORDED)


FAST_SETS = ("cortex-m7", "host", "rpi5")  # issue 12's bar: every layer of every example model on a fast kernel


@pytest.mark.parametrize("case", sorted(cases()))
def test_compile_writes_the_recorded_sources(case, tmp_path):
    got = compile_case(cases()[case], tmp_path / "out")
    want = RECORDED[case]
    assert sorted(got) == sorted(want), f"{case}: files differ"
    changed = [path for path in want if got[path] != want[path]]
    assert not changed, f"{case}: these files changed: {changed}"
    if case.count("/") == 1 and case.split("/")[1] in FAST_SETS:  # an example model, default options
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert manifest["fallbacks"] == [], (case, manifest["fallbacks"])
