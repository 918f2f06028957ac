"""The `neon` kernel set: aarch64 NEON kernels, templates in sdk/templates/neon/ (and the
shared SIMD driver sdk/templates/simd/); declarations.py declares them, rules.py decides
which portable calls they take."""
from . import declarations, rules  # noqa: F401
