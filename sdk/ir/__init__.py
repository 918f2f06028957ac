"""The intermediate representation: a static-shape dataflow graph of ONNX-like ops."""
from .graph import Graph, Node, QParams, Tensor

__all__ = ["Graph", "Node", "QParams", "Tensor"]
