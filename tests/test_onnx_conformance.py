"""The ONNX backend node tests of every op in the registry, fp32 on host (scripts/conformance.py).

Every in-scope case is compiled, built and run once per session (batched: a few gcc calls);
each case's result must be the one docs/conformance.md records (a newly failing case fails
here; a documented failure is an xfail with its reason), the document must be what the
generator writes today, and at least 95% of the applicable cases must pass.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cuvil_conformance", ROOT / "scripts" / "conformance.py")
conformance = importlib.util.module_from_spec(_spec)
sys.modules["cuvil_conformance"] = conformance
_spec.loader.exec_module(conformance)

CASES = conformance.selected_cases()
MIN_PASS_RATE = 0.95  # issue 14's bar


def documented() -> dict[str, tuple[str, str]]:
    """{case: (status, reason)} from docs/conformance.md."""
    rows = {}
    for line in conformance.DOC.read_text().splitlines():
        m = re.fullmatch(r"\| (test_\S+) \| [^|]* \| (pass|fail|n/a) \| (.*) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).replace("\\|", "|"))
    return rows


@pytest.fixture(scope="module")
def results() -> dict[str, conformance.Case]:
    conformance.run_cases(CASES)
    return {c.name: c for c in CASES}


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_backend_case(results, name):
    case = results[name]
    doc = documented().get(name)
    assert doc is not None, f"{name} is not in docs/conformance.md: run scripts/conformance.py"
    assert (case.status, case.reason) == doc, f"{name}: {case.status} ({case.reason}), documented {doc}"
    if case.status == "fail":
        pytest.xfail(case.reason)


@pytest.mark.slow
def test_conformance_md_is_up_to_date(results):
    # the cases are the installed onnx package's: another onnx version has other cases
    written_with = re.search(r"^onnx (\S+)\.", conformance.DOC.read_text(), re.M)
    assert written_with and written_with.group(1) == conformance.onnx.__version__, \
        f"docs/conformance.md is of onnx {written_with and written_with.group(1)}, this is onnx " \
        f"{conformance.onnx.__version__}: run scripts/conformance.py"
    assert conformance.DOC.read_text() == conformance.render(CASES), "run scripts/conformance.py"


@pytest.mark.slow
def test_pass_rate(results):
    s = conformance.summary(CASES)
    assert s["applicable"] > 0
    assert s["pass"] / s["applicable"] >= MIN_PASS_RATE, s


def test_scope_follows_the_registry():
    # a case is in scope exactly when every op of its model is registered
    names = {c.name for c in CASES}
    assert "test_conv_with_strides_padding" in names and "test_relu" in names
    every = conformance.collect_cases()
    ops = set(conformance.supported_ops())
    outside = [c for c in every if not conformance.in_scope(c, ops)]
    assert outside and all(c.name not in names for c in outside)
    assert all(set(c.ops) <= ops for c in CASES)


def test_not_applicable_reasons():
    by_name = {c.name: c for c in CASES}
    assert conformance.not_applicable(by_name["test_relu"]) == ""
    # integer and bool tensors are computed at run time: their cases apply; other types do not
    assert conformance.not_applicable(by_name["test_and2d"]) == ""
    assert conformance.not_applicable(by_name["test_add_int8"]) == ""
    assert conformance.not_applicable(by_name["test_add_uint16"]) == \
        "runtime input is uint16, not a run-time type (float32, integers, bool)"
    # a Dropout that drops at random trains; one of ratio 0 keeps every value and applies
    assert conformance.not_applicable(by_name["test_training_dropout"]) == "training mode"
    assert conformance.not_applicable(by_name["test_training_dropout_zero_ratio"]) == ""
    assert conformance.not_applicable(by_name["test_batchnorm_example_training_mode"]) == "training mode"
