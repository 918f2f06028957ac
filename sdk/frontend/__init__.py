"""ONNX -> IR: load and check the model, refuse hostile or unsupported input, fix shapes."""
from .loader import load_model, parse_input_shapes

__all__ = ["load_model", "parse_input_shapes"]
