"""Import a model quantized by ONNX Runtime's dynamic quantizer (`quantize_dynamic`).

quantize_dynamic writes each quantized MatMul and Conv as

    xq, xs, xz = DynamicQuantizeLinear(x)             # uint8, a scale computed per inference
    acc = MatMulInteger(xq, Wq, xz, Wz)               # or ConvInteger: int32
    y = Mul(Cast(acc, to=float), Mul(xs, Ws))         # dequantized

and y = ((xq - xz) @ (Wq - Wz)) * xs * Ws, where (xq - xz) * xs is x rounded to its own
run-time scale. This import rewrites the chain into y = x @ ((Wq - Wz) * Ws): the model's
int8 weights dequantized, a float MatMul/Conv (the x scale cancels), so the model then builds
like a float model (fp32, or int8 by calibration). The result differs from ONNX Runtime's
only by ORT's rounding of x to 8 bits: its own quantization error. com.microsoft's
DynamicQuantizeMatMul and MatMulIntegerToFloat (the fused forms ORT's optimizer writes) are
the same chain in one node, plus a bias. com.microsoft's DynamicQuantizeLSTM (quantize_dynamic's
LSTM: int8 W and R stored transposed, [dirs, input, 4 * hidden], scales per direction or per
gate row) becomes an ONNX LSTM of its weights dequantized.

quantize_dynamic also quantizes a Gather of a constant table (an embedding) feeding MatMul: A is
then Gather(int8 table) with the table's constant scale and zero point; it becomes a float
Gather of the table's codes less the zero point, and the whole scale product goes to W.

A MatMulInteger or ConvInteger outside those chains (its int32 result used as it is, its input
an integer tensor of the model) is computed in float on the integer values: Cast to float, less
the zero point, the float layer with W less its zero point, Cast to int32; exact while the sums
stay below 2^24 (float32's integers). What is still left (a weight computed at run time, a
DynamicQuantizeLinear whose outputs go elsewhere) is refused by the op's check
(ops/dynamic_quant.py), naming the node.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..ir import Graph, Node

LAYERS = {"MatMulInteger": "MatMul", "ConvInteger": "Conv"}
FUSED = ("com.microsoft::DynamicQuantizeMatMul", "com.microsoft::MatMulIntegerToFloat")
LSTM = "com.microsoft::DynamicQuantizeLSTM"
DYNAMIC_OPS = ("DynamicQuantizeLinear", *LAYERS, *FUSED, LSTM)


def has_dynamic_quant(g: Graph) -> bool:
    return any(n.op in DYNAMIC_OPS for n in g.nodes)


def import_dynamic(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in LAYERS]:
        import_integer_layer(g, node)
    for node in [n for n in g.nodes if n.op in LAYERS]:  # what is left: integers computed in float
        emulate_integer_layer(g, node)
    for node in [n for n in g.nodes if n.op in FUSED]:
        import_fused(g, node)
    for node in [n for n in g.nodes if n.op == LSTM]:
        import_lstm(g, node)
    g.remove_unused()


def input_at(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""


def only_consumer(g: Graph, name: str, op: str) -> Node | None:
    users = g.consumers(name)
    if name in g.outputs or len(users) != 1 or users[0].op != op:
        return None
    return users[0]


def quantizer_of(g: Graph, quantized: str, zero_point: str, scale: str | None = None) -> Node | None:
    """The DynamicQuantizeLinear that wrote `quantized`, when `zero_point` (and `scale`) are its."""
    dq = g.producer(quantized)
    if dq is None or dq.op != "DynamicQuantizeLinear" or dq.outputs[0] != quantized or zero_point != dq.outputs[2]:
        return None
    return dq if scale is None or scale == dq.outputs[1] else None


def dequantized_weight(g: Graph, node: Node, w: str, zp: str, scale: np.ndarray, conv: bool) -> np.ndarray | None:
    """(W - zp) * scale in float32: per tensor, per column (MatMul) or per output channel (Conv,
    zero point [M], scale [M] or [M, 1, 1]); None when a part is not a constant of that form."""
    data = g.const(w)
    zero = np.zeros((), np.int64) if not zp else g.const(zp)
    if data is None or zero is None or data.dtype not in (np.int8, np.uint8):
        return None
    channels = data.shape[0] if conv else data.shape[-1]
    shape = (-1,) + (1,) * (data.ndim - 1) if conv else (-1,)
    parts = []
    for part in (zero.astype(np.float64), scale.astype(np.float64)):
        if part.size == 1:
            parts.append(part.reshape(()))
        elif part.size == channels and (not conv or part.shape in ((channels,), (channels, 1, 1))):
            parts.append(part.reshape(shape))
        else:
            return None
    return ((data.astype(np.float64) - parts[0]) * parts[1]).astype(np.float32)


def weight_scale(g: Graph, scales: str, x_scale: str) -> np.ndarray | None:
    """The weight's scale from the Mul(x scale, W scale) that quantize_dynamic writes."""
    mul = g.producer(scales)
    if mul is None or mul.op != "Mul" or x_scale not in mul.inputs:
        return None
    other = [i for i in mul.inputs if i != x_scale]
    return g.const(other[0]) if len(other) == 1 else None


def constant_scale(g: Graph, scales: str) -> np.ndarray | None:
    """The scale product when both scales are constants: a constant, or Mul of two of them."""
    if g.const(scales) is not None:
        return g.const(scales)
    mul = g.producer(scales)
    if mul is None or mul.op != "Mul" or any(g.const(i) is None for i in mul.inputs):
        return None
    return g.const(mul.inputs[0]).astype(np.float64) * g.const(mul.inputs[1]).astype(np.float64)


def float_gather(g: Graph, quantized: str, zero_point: str, before: Node) -> str | None:
    """quantize_dynamic's Gather of an int8 table (an embedding) into an integer layer: a Gather
    of the table's codes less the zero point, as float (exact), whose output is returned; the
    table's scale stays in the layer's scale product. None when `quantized` is no such Gather."""
    gather = g.producer(quantized)
    table = g.const(gather.inputs[0]) if gather is not None and gather.op == "Gather" else None
    zero = np.zeros((), np.int64) if not zero_point else g.const(zero_point)
    if table is None or table.dtype not in (np.int8, np.uint8) or zero is None or zero.size != 1:
        return None
    codes = g.add_const(f"{gather.name}_table", (table.astype(np.float64) - float(zero.reshape(()))).astype(np.float32))
    out = g.add_tensor(f"{gather.name}_float", ())
    g.nodes.insert(g.nodes.index(before), Node("Gather", f"{gather.name}_float", [codes, gather.inputs[1]], [out],
                                               dict(gather.attrs)))
    return out


def import_integer_layer(g: Graph, layer: Node) -> None:
    x_q, w, x_zp, w_zp = (input_at(layer, k) for k in range(4))
    cast = only_consumer(g, layer.outputs[0], "Cast")
    if cast is None or int(cast.attrs.get("to", 0)) != onnx.TensorProto.FLOAT:
        return
    mul = only_consumer(g, cast.outputs[0], "Mul")
    scales = [i for i in mul.inputs if i != cast.outputs[0]] if mul is not None else []
    if len(scales) != 1:
        return
    dq = quantizer_of(g, x_q, x_zp)
    if dq is not None:  # x's run-time scale cancels: W's scale only
        source, scale = dq.inputs[0], weight_scale(g, scales[0], dq.outputs[1])
    else:  # constant codes (a quantized embedding): the whole scale product goes to W
        scale = constant_scale(g, scales[0])
        source = float_gather(g, x_q, x_zp, layer) if scale is not None and layer.op == "MatMulInteger" else None
    weight = None if scale is None else dequantized_weight(g, layer, w, w_zp, scale, conv=layer.op == "ConvInteger")
    if source is None or weight is None:
        return
    attrs = dict(layer.attrs) if layer.op == "ConvInteger" else {}
    float_layer = Node(LAYERS[layer.op], layer.name, [source, g.add_const(f"{layer.name}_weight", weight)],
                       list(mul.outputs), attrs)
    g.nodes[g.nodes.index(mul)] = float_layer
    g.nodes.remove(cast)
    g.nodes.remove(layer)


def emulate_integer_layer(g: Graph, layer: Node) -> None:
    """MatMulInteger/ConvInteger on integer values, in float: Cast(x) - zx, the float layer of
    (W - zw), Cast to int32 (exact while |sums| < 2^24)."""
    x_q, w, x_zp, w_zp = (input_at(layer, k) for k in range(4))
    source = g.producer(x_q)
    zero = np.zeros((), np.int64) if not x_zp else g.const(x_zp)
    if (source is not None and source.op == "DynamicQuantizeLinear") or zero is None or zero.size != 1:
        return
    weight = dequantized_weight(g, layer, w, w_zp, np.ones((), np.float32), conv=layer.op == "ConvInteger")
    if weight is None:
        return
    name = layer.name
    as_float = g.add_tensor(f"{name}_x", ())
    nodes = [Node("Cast", f"{name}/to_float", [x_q], [as_float], {"to": onnx.TensorProto.FLOAT})]
    if float(zero.reshape(())) != 0:
        centred = g.add_tensor(f"{name}_x_centred", ())
        nodes.append(Node("Sub", f"{name}/zero_point", [as_float, g.add_const(f"{name}_zx", zero.astype(np.float32))],
                          [centred]))
        as_float = centred
    sums = g.add_tensor(f"{name}_sums", ())
    attrs = dict(layer.attrs) if layer.op == "ConvInteger" else {}
    nodes.append(Node(LAYERS[layer.op], name, [as_float, g.add_const(f"{name}_weight", weight)], [sums], attrs))
    nodes.append(Node("Cast", f"{name}/to_int32", [sums], list(layer.outputs), {"to": onnx.TensorProto.INT32}))
    at = g.nodes.index(layer)
    g.nodes[at:at + 1] = nodes


def import_fused(g: Graph, node: Node) -> None:
    """DynamicQuantizeMatMul(A, B, b_scale, b_zp, bias) and MatMulIntegerToFloat(A_q, B, a_scale,
    b_scale, a_zp, b_zp, bias) -> MatMul(A, dequantized B) (+ bias)."""
    if node.op.endswith("DynamicQuantizeMatMul"):
        x, w, w_scale, w_zp, bias = (input_at(node, k) for k in range(5))
    else:
        x_q, w, x_scale, w_scale, x_zp, w_zp, bias = (input_at(node, k) for k in range(7))
        dq = quantizer_of(g, x_q, x_zp, x_scale)
        if dq is None:
            return
        x = dq.inputs[0]
    scale = g.const(w_scale)
    weight = None if scale is None else dequantized_weight(g, node, w, w_zp, scale, conv=False)
    if weight is None or (bias and g.const(bias) is None):
        return
    out = node.outputs[0]
    product = g.add_tensor(f"{node.name}_matmul", ()) if bias else out
    nodes = [Node("MatMul", f"{node.name}/matmul" if bias else node.name,
                  [x, g.add_const(f"{node.name}_weight", weight)], [product])]
    if bias:
        nodes.append(Node("Add", node.name, [product, bias], [out]))
    at = g.nodes.index(node)
    g.nodes[at:at + 1] = nodes


def lstm_weight(g: Graph, w: str, scale: str, zp: str) -> np.ndarray | None:
    """DynamicQuantizeLSTM's W or R ([dirs, input, 4 * hidden], int8 or uint8) dequantized and
    transposed to ONNX's [dirs, 4 * hidden, input]; scale and zero point [dirs] or
    [dirs, 4 * hidden]."""
    data, s, z = g.const(w), g.const(scale), g.const(zp) if zp else None
    if data is None or s is None or data.ndim != 3 or data.dtype not in (np.int8, np.uint8):
        return None
    z = np.zeros_like(s, np.int64) if z is None else z
    dirs, _, rows = data.shape
    parts = []
    for part in (z.astype(np.float64), s.astype(np.float64)):
        if part.size == dirs:
            parts.append(part.reshape(dirs, 1, 1))
        elif part.shape == (dirs, rows):
            parts.append(part.reshape(dirs, 1, rows))
        else:
            return None
    return ((data.astype(np.float64) - parts[0]) * parts[1]).transpose(0, 2, 1).astype(np.float32)


def import_lstm(g: Graph, node: Node) -> None:
    """DynamicQuantizeLSTM(X, W, R, B, lens, h0, c0, P, W_scale, W_zp, R_scale, R_zp) -> LSTM."""
    names = [input_at(node, k) for k in range(12)]
    w = lstm_weight(g, names[1], names[8], names[9])
    r = lstm_weight(g, names[2], names[10], names[11])
    if w is None or r is None:
        return
    inputs = [names[0], g.add_const(f"{node.name}_W", w), g.add_const(f"{node.name}_R", r), *names[3:8]]
    while inputs and not inputs[-1]:  # trailing optional inputs left out, as ONNX writes them
        inputs.pop()
    g.nodes[g.nodes.index(node)] = Node("LSTM", node.name, inputs, list(node.outputs), dict(node.attrs))
