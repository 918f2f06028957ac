"""The golden model: a numpy interpreter of the IR, in float and in exact integers."""
from .interpreter import dequantize_tensor, run_float, run_int, run_quantized_model

__all__ = ["dequantize_tensor", "run_float", "run_int", "run_quantized_model"]
