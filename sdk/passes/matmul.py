"""MatMul with a constant B of any rank, on the 2-D fully connected kernels.

- A 1-D B (K,) is the 2-D weight (K, 1); a B whose batch dimensions are all 1 is (K, N); a
  Reshape after the MatMul gives the output its ONNX shape.
- A batched B (..., K, N) becomes one block-diagonal weight: A is laid out as (M, Ba*K) (its
  Ba batches side by side: a Transpose and Reshapes), multiplied by the (Ba*K, Bo*N) weight
  whose block (a, o) is B's matrix for output batch o when o reads A's batch a (zero
  otherwise), and laid back as the (..., M, N) output. Broadcasting on either side is only a
  choice of blocks. The weight is Ba*Bo times larger than B, so this suits the small batches
  exporters write (per-head or per-group constants), not large ones.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .reshape import reshape

Shape = tuple[int, ...]


def matmul_to_2d(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op == "MatMul"]:
        b = g.const(node.inputs[1])
        if b is None or b.ndim == 2:
            continue
        if b.ndim == 1 or all(d == 1 for d in b.shape[:-2]):
            steps = single_weight(g, node, b)
        else:
            steps = block_diagonal(g, node, b)
        at = g.nodes.index(node)
        g.nodes[at:at + 1] = chain(g, node, steps)


def single_weight(g: Graph, node: Node, b: np.ndarray) -> list[tuple]:
    """A @ w2 with a 2-D w2, reshaped to the output's shape."""
    a_shape = g.tensors[node.inputs[0]].shape
    w2 = b.reshape(-1, 1) if b.ndim == 1 else b.reshape(b.shape[-2], b.shape[-1])
    product = tuple(a_shape[:-1]) + (w2.shape[1],)
    return [("MatMul", w2, product)]


def block_diagonal(g: Graph, node: Node, b: np.ndarray) -> list[tuple]:
    a_shape = g.tensors[node.inputs[0]].shape
    a2 = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    m, k, n = a2[-2], a2[-1], b.shape[-1]
    batch_out = tuple(np.broadcast_shapes(a2[:-2], b.shape[:-2]))
    ba, bo = int(np.prod(a2[:-2], dtype=np.int64)), int(np.prod(batch_out, dtype=np.int64))
    a_of = np.broadcast_to(np.arange(ba).reshape(a2[:-2]), batch_out).reshape(-1)
    b_of = np.broadcast_to(np.arange(int(np.prod(b.shape[:-2]))).reshape(b.shape[:-2]), batch_out).reshape(-1)
    mats = b.reshape(-1, k, n)
    w = np.zeros((ba * k, bo * n), dtype=b.dtype)
    for o in range(bo):
        w[a_of[o] * k:(a_of[o] + 1) * k, o * n:(o + 1) * n] = mats[b_of[o]]
    steps: list[tuple] = [("Reshape", (ba, m, k))]
    if m > 1 and ba > 1:
        steps.append(("Transpose", [1, 0, 2], (m, ba, k)))
    steps += [("Reshape", (m, ba * k)), ("MatMul", w, (m, bo * n)), ("Reshape", (m, bo, n))]
    if m > 1 and bo > 1:
        steps.append(("Transpose", [1, 0, 2], (bo, m, n)))
    return steps


def chain(g: Graph, node: Node, steps: list[tuple]) -> list[Node]:
    """Nodes for `steps` from the MatMul's input, then a Reshape into its output."""
    nodes, src, out = [], node.inputs[0], node.outputs[0]
    for k, (op, *args) in enumerate(steps):
        name = f"{node.name}_{op.lower()}{k}"
        dst = g.add_tensor(name, args[-1])
        if op == "Reshape":
            nodes.append(reshape(g, name, src, dst))
        elif op == "Transpose":
            nodes.append(Node("Transpose", name, [src], [dst], {"perm": list(args[0])}))
        else:  # the MatMul itself, keeping its name and fused activation
            w = g.add_const(f"{node.name}_w2d", args[0])
            node.inputs, node.outputs = [src, w], [dst]
            nodes.append(node)
        src = dst
    nodes.append(reshape(g, f"{node.name}_reshape_out", src, out))
    return nodes
