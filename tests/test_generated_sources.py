"""The generated sources stay byte-identical to those recorded before the library-core
restructuring (tests/generated_sources.py says how they were recorded and what counts):
every example model for every board, float precisions and the options that change the C."""
from __future__ import annotations

import json

import pytest

from generated_sources import FIXTURE, cases, compile_case

RECORDED = json.loads(FIXTURE.read_text())


def test_every_case_is_recorded():
    assert sorted(cases()) == sorted(RECORDED)


@pytest.mark.parametrize("case", sorted(cases()))
def test_compile_writes_the_recorded_sources(case, tmp_path):
    got = compile_case(cases()[case], tmp_path / "out")
    want = RECORDED[case]
    assert sorted(got) == sorted(want), f"{case}: files differ"
    changed = [path for path in want if got[path] != want[path]]
    assert not changed, f"{case}: these files changed: {changed}"
