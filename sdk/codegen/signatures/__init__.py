"""Every kernel set's declarations (importing this package declares them all)."""
from . import avx2, cortex_m_dsp, cuda, neon, portable  # noqa: F401
