"""The `avx2` kernel set: x86-64 AVX2 kernels, templates in sdk/templates/avx2/ (and the
shared SIMD driver sdk/templates/simd/); declarations.py declares them, rules.py decides
which portable calls they take."""
from . import declarations, rules  # noqa: F401
