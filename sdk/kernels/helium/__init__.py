"""The `helium` kernel set: Armv8.1-M MVE (Helium) kernels for the Cortex-M55, templates in
sdk/templates/helium/; declarations.py declares them, rules.py decides which portable calls
they take."""
from . import declarations, rules  # noqa: F401
