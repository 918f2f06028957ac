"""Every kernel header of every set (portable, cortex_m_dsp, helium, avx2, neon, cuda) against its
declaration in sdk/kernels/<set>/declarations.py: the same parameters, in the same order, with the
same names, kinds and C types. No toolchain needed: the headers are read as text.

A header whose prototype drifts from its declaration (a parameter added, removed,
reordered or retyped on one side only) fails here, with the kernel and the parameter named,
instead of as a wrong argument list in generated C."""
from __future__ import annotations

import pytest

from cuvil_sdk.kernels.contract import DECLARATIONS, KernelInterfaceError, declarations, kernel
from cuvil_sdk.kernels.contract import Buf, I, In, Out, W, Weight, declare
from cuvil_sdk.codegen.kernel_files import kernel_source, kernels_with_sources
from cuvil_sdk.codegen.prototypes import mismatches, parse_function, parse_prototype

SETS = {"portable": ".h", "cortex_m_dsp": ".h", "helium": ".h", "avx2": ".h", "neon": ".h", "cuda": ".cuh"}


def kernel_files(kernel_set: str) -> dict[str, str]:
    """kernel name -> the C source that defines it: a header of its own, or its family
    template rendered for its variant (shared helper headers cuvil_* excluded)."""
    return {name: kernel_source(kernel_set, name) for name in kernels_with_sources(kernel_set)}


CASES = [(s, k) for s in SETS for k in sorted(set(kernel_files(s)) | set(declarations(s)))]


@pytest.mark.parametrize("kernel_set, name", CASES, ids=[f"{s}/{k}" for s, k in CASES])
def test_header_matches_declaration(kernel_set, name):
    files = kernel_files(kernel_set)
    assert name in files, f"{kernel_set}/{name} is declared but has no header"
    assert name in declarations(kernel_set), f"{kernel_set}/{name}{SETS[kernel_set]} has no declaration"
    parsed = parse_function(files[name], name)
    assert parsed is not None, f"{kernel_set}/{name}{SETS[kernel_set]} does not define {name}()"
    returns, params = parsed
    problems = mismatches(declarations(kernel_set)[name], params)
    assert not problems, f"{kernel_set}/{name}: " + "; ".join(problems)
    # a kernel that checks run-time indices returns its verdict; the others return nothing
    assert returns == declarations(kernel_set)[name].returns, f"{kernel_set}/{name} returns {returns}"


def test_every_set_is_checked():
    assert set(declarations("portable")) and set(SETS) == set(DECLARATIONS)
    assert len(CASES) >= 80


def test_a_drifted_header_is_caught():
    """The check itself can fail: one parameter added to a header only."""
    name = "conv2d_s8"
    source = kernel_files("portable")[name].replace("int32_t lo, int32_t hi)", "int32_t lo, int32_t hi, int extra)", 1)
    problems = mismatches(declarations("portable")[name], parse_prototype(source, name))
    assert problems and "27 C parameters, 26 declared" in problems[0]


def test_calls_are_checked_by_keyword():
    fc = kernel("portable", "fc_s8")
    good = dict(in_=Buf("x", const=True), out=Buf("y"), w=Weight("w", [1], "int8_t"), bias=Weight("b", [0], "int32_t"),
                mult=Weight("m", [1], "int32_t"), shift=Weight("s", [1], "int32_t"), rows=1, k=1, n=1, zx=0, zy=0,
                lo=-128, hi=127)
    assert fc(**good).ordered()[7] == 1
    with pytest.raises(KernelInterfaceError, match="fc_s8: missing zy"):
        fc(**{k: v for k, v in good.items() if k != "zy"})
    with pytest.raises(KernelInterfaceError, match="no parameter extra"):
        fc(**good, extra=1)
    with pytest.raises(KernelInterfaceError, match="bias must be a int32_t array"):
        fc(**dict(good, bias=Weight("b", [0], "int64_t")))
    with pytest.raises(KernelInterfaceError, match="out must be a writable arena buffer"):
        fc(**dict(good, out=Buf("y", const=True)))
    with pytest.raises(KernelInterfaceError, match="k must be an integer"):
        fc(**dict(good, k=1.5))


def test_declaring_twice_is_refused():
    with pytest.raises(KernelInterfaceError, match="declared twice"):
        declare("portable", "fc_s8", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), *I("n"))
