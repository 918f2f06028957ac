"""The intermediate representation: a static-shape dataflow graph of ONNX-like ops."""
from .graph import FLOAT_DTYPES, INTEGER_DTYPES, Graph, Node, QParams, Tensor

__all__ = ["FLOAT_DTYPES", "INTEGER_DTYPES", "Graph", "Node", "QParams", "Tensor"]
