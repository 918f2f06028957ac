"""The `cortex_m_dsp` kernel set: Armv7E-M DSP-extension kernels, templates in
sdk/templates/cortex_m_dsp/; declarations.py declares them, rules.py decides which
portable calls they take."""
from . import declarations, rules  # noqa: F401
