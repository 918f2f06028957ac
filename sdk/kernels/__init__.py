"""The kernel contract, on the ground floor of the SDK: what a C kernel takes (contract.py:
declarations, checked calls, Buf/Weight arguments), every kernel set's declarations and
selection rules (one folder per set: portable, avx2, neon, cortex_m_dsp, helium, cuda), the build
options the rules read (options.py) and the integer arithmetic that ops, rules and the
numpy reference share (requant.py).

It imports nothing of the stages above it (ops, quant, codegen, plugins...), only ir and
errors, so that ops can build kernel calls and code generation can select and render them
without either reaching into the other (tests/test_imports.py holds that). Importing the
package declares every set and registers its rules.
"""
from . import avx2, cortex_m_dsp, cuda, helium, neon, portable  # noqa: F401
