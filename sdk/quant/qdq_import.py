"""Import a QDQ model (QuantizeLinear/DequantizeLinear around float ops, as written by ONNX
Runtime's quantize_static or PyTorch): take its scales and int8 weights as they are, and
remove the Q/DQ nodes. uint8 tensors become int8 by moving the zero point by -128 (the
real values are unchanged).

4-bit weights (opset 21: DequantizeLinear of an INT4 or UINT4 initializer, per-axis scales, as
ONNX Runtime's 4-bit quantizer writes them) are imported with their own values and scales as
an int4 layer (Node.weight_bits = 4: the kernels store them packed, kernels/int4.py), whatever
--weight-bits says; uint4 ones move their zero point by -8 (it must then be 0: symmetric)."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..ir import Graph, Node, QParams, Tensor

WEIGHTED = {"Conv": 1, "Gemm": 1, "MatMul": 1}


def tensor(g: Graph, name: str) -> Tensor:
    """The tensor of that name, created if shape inference has not made it yet."""
    return g.tensors.setdefault(name, Tensor(name, ()))


def has_qdq(g: Graph) -> bool:
    return any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in g.nodes)


def qdq_params(g: Graph, node: Node) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    scale = g.const(node.inputs[1])
    zp = g.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if scale is None or (len(node.inputs) > 2 and node.inputs[2] and zp is None):
        raise ModelError(f"node '{node.name}' ({node.op}): scale and zero point must be constants")
    zp = np.zeros_like(scale, np.uint8) if zp is None else zp
    if scale.size == 1 and zp.size == 1:  # one value each, whatever their ranks ([1] and [] from ORT's contrib QDQ)
        scale, zp = scale.reshape(()), zp.reshape(())
    if scale.ndim > 1 or scale.shape != zp.shape or scale.size == 0:
        raise ModelError(f"node '{node.name}' ({node.op}): scale {list(scale.shape)} and zero point "
                         f"{list(zp.shape)} must be one scalar or one vector of the same length")
    return scale.astype(np.float32), zp, zp.dtype


def to_int8(q: np.ndarray, zp: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    shift = 128 if dtype == np.uint8 else 8 if np.dtype(dtype).name == "uint4" else 0
    return (q.astype(np.int32) - shift).astype(np.int8), (zp.astype(np.int32) - shift)


FOUR_BIT = ("int4", "uint4")  # the dtype names of onnx's 4-bit arrays (ml_dtypes)


def weight_bits_of(raw: np.ndarray) -> int:
    """8 for int8/uint8 codes, 4 for INT4/UINT4 ones, 0 for anything else (not imported)."""
    if raw.dtype in (np.int8, np.uint8):
        return 8
    return 4 if raw.dtype.name in FOUR_BIT else 0


def import_qdq(g: Graph) -> None:
    for dq in [n for n in g.nodes if n.op == "DequantizeLinear"]:
        if tensor(g, dq.inputs[0]).is_const:
            import_constant(g, dq)
        else:
            import_activation(g, dq)
    for q in [n for n in g.nodes if n.op == "QuantizeLinear"]:
        raise ModelError(f"node '{q.name}' (QuantizeLinear) has no matching DequantizeLinear")
    g.remove_unused()


def import_activation(g: Graph, dq: Node) -> None:
    quant = g.producer(dq.inputs[0])
    if quant is None or quant.op != "QuantizeLinear":
        raise ModelError(f"node '{dq.name}' (DequantizeLinear) does not follow a QuantizeLinear")
    scale, zp, dtype = qdq_params(g, quant)
    if scale.size != 1:
        raise ModelError(f"node '{quant.name}': per-channel activation quantization is not supported")
    _, zp8 = to_int8(np.zeros(1), zp, dtype)
    real = quant.inputs[0]
    tensor(g, real).q = QParams(scale.reshape(()), np.array(zp8.reshape(()), np.int32))
    g.nodes.remove(dq)
    g.replace_uses(dq.outputs[0], real)
    if not g.consumers(quant.outputs[0]):
        g.nodes.remove(quant)


def import_constant(g: Graph, dq: Node) -> None:
    """DQ of a constant: keep the float value in the graph, and hand the exact int8/int32
    values to the consuming op so its own rule uses them."""
    scale, zp, dtype = qdq_params(g, dq)
    raw = g.const(dq.inputs[0])
    if not (len(dq.inputs) > 2 and dq.inputs[2]):  # no zero point: 0 of the codes' own type
        dtype = raw.dtype
    axis = int(dq.attrs.get("axis", 1)) % max(raw.ndim, 1)
    shape = [1] * raw.ndim
    if scale.size > 1:
        if raw.ndim == 0 or raw.shape[axis] != scale.size:
            raise ModelError(f"node '{dq.name}' (DequantizeLinear): {scale.size} scales for axis {axis} of a "
                             f"tensor of shape {list(raw.shape)}")
        shape[axis] = -1
    real = (raw.astype(np.float64) - zp.astype(np.float64).reshape(shape)) * scale.astype(np.float64).reshape(shape)
    out = dq.outputs[0]
    g.tensors[out] = Tensor(out, tuple(real.shape), "float32", real.astype(np.float32))
    g.nodes.remove(dq)
    for consumer in g.consumers(out):
        index = consumer.inputs.index(out)
        bits = weight_bits_of(raw)
        if WEIGHTED.get(consumer.op) == index and bits:
            q8, zp8 = to_int8(raw, zp, dtype)
            if np.all(zp8 == 0) and int(np.abs(q8.astype(np.int32)).max(initial=0)) <= 127:
                consumer.imported_q["weight"] = (q8, scale.reshape(-1))
                consumer.weight_bits = bits
        elif index == 2 and consumer.op in WEIGHTED and raw.dtype == np.int32 and np.all(zp == 0):
            consumer.imported_q["bias"] = (raw.astype(np.int64), scale.reshape(-1))
