"""The Reshape node that passes put between the layers they split (an alias: no code)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node


def reshape(g: Graph, name: str, src: str, dst: str) -> Node:
    """A Reshape of `src` into `dst`, whose shape is already known."""
    shape = g.add_const(f"{name}_shape", np.array(g.tensors[dst].shape, np.int64))
    return Node("Reshape", name, [src, shape], [dst])
