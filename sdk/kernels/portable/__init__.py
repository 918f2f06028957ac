"""The `portable` kernel set: plain C99 kernels that every board can run, templates in
sdk/templates/portable/. Ops lower to its calls (contract.call); it takes every call
unchanged, so it has no rules (kernel_sets.KernelSet is the portable set itself)."""
from . import declarations  # noqa: F401
