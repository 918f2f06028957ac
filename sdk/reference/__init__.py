"""The golden model: a numpy interpreter of the IR, in float and in exact integers."""
from .interpreter import run_float, run_int, run_quantized_model

__all__ = ["run_float", "run_int", "run_quantized_model"]
