"""Every op of a model that the SDK cannot build, named in one message.

A user learning about unsupported ops one build at a time is the failure this module exists
to prevent: the whole model is read first, and each op that no built-in op or plugin covers
is listed once, with its domain, the first node that uses it and, for ops with a known way
out (ONNX Runtime's QOperator and contrib ops, ops with value-dependent output shapes), how.
"""
from __future__ import annotations

import onnx

from ..errors import ModelError
from ..ops import REGISTRY
from ..plugins import op_key

# Ops of ONNX's own domain that the opset converter (loader.upgrade_opset) renames on the way
# to the target opset; the renamed op is what must be registered.
RENAMED_BY_UPGRADE = {"Scatter": "ScatterElements"}

# ONNX ops whose output's shape depends on the values of their input (how many are non-zero,
# unique, kept by a non-maximum suppression, ...): a static-shape compiler cannot give them one
DYNAMIC_SHAPE_OPS = {"NonZero": "the number of non-zero values", "Unique": "the number of distinct values",
                     "NonMaxSuppression": "the number of boxes kept", "Compress": "the number of true conditions",
                     "StringSplit": "the number of substrings"}

QOPERATOR_HINT = ("ONNX Runtime's QOperator format: quantize with quant_format=QuantFormat.QDQ, which is imported "
                  "with its scales")
# com.microsoft ops that ONNX Runtime's quantizers and graph optimizer write, and the way out
MICROSOFT_HINTS = {
    **{op: QOPERATOR_HINT for op in ("QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
                                     "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat",
                                     "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere", "QLinearConvTranspose",
                                     "QGemm", "QLinearMatMul")},
    "QAttention": "quantize_dynamic's Attention: leave it out (op_types_to_quantize=['MatMul', 'Conv'])",
    "QEmbedLayerNormalization": "quantize_dynamic's EmbedLayerNormalization: leave it out "
                                "(op_types_to_quantize=['MatMul', 'Conv'])",
    **{op: "ONNX Runtime's QDQ with 16- or 4-bit types (UseQDQContribOps): quantize to 8 bits (QInt8/QUInt8)"
       for op in ("QuantizeLinear", "DequantizeLinear")},
}
CONTRIB_HINT = ("an ONNX Runtime contrib op (its graph optimizer writes them): save the model without ORT's "
                "optimizations (graph_optimization_level=ORT_DISABLE_ALL, or ORT_ENABLE_BASIC)")


def is_supported(node: onnx.NodeProto, opset: int) -> bool:
    if op_key(node.domain, node.op_type) in REGISTRY:
        return True
    standard = node.domain in ("", "ai.onnx")
    return standard and node.op_type in RENAMED_BY_UPGRADE and opset < 13 and \
        RENAMED_BY_UPGRADE[node.op_type] in REGISTRY


def hint(domain: str, op_type: str) -> str:
    if domain == "ai.onnx" and op_type in ("QLinearConv", "QLinearMatMul"):
        return QOPERATOR_HINT
    if domain == "ai.onnx" and op_type in DYNAMIC_SHAPE_OPS:
        return (f"its output's shape is {DYNAMIC_SHAPE_OPS[op_type]} at run time (a dynamic output shape); "
                f"static shapes are required")
    if domain == "com.microsoft":
        return MICROSOFT_HINTS.get(op_type, CONTRIB_HINT)
    return ""


def unsupported_ops(model: onnx.ModelProto, opset: int) -> dict[tuple[str, str], list[str]]:
    """(domain, op type) -> the names of the nodes that use it, in model order."""
    found: dict[tuple[str, str], list[str]] = {}
    for k, node in enumerate(model.graph.node):
        if not is_supported(node, opset):
            domain = node.domain or "ai.onnx"
            found.setdefault((domain, node.op_type), []).append(node.name or f"{node.op_type}_{k}")
    return found


def unsupported_message(found: dict[tuple[str, str], list[str]]) -> str:
    """One line: each op with its domain, its first node (and how many use it), and a hint
    where one is known; then where the supported ops are listed and how to add one."""
    parts = []
    for (domain, op_type), nodes in found.items():
        more = f", {len(nodes)} nodes" if len(nodes) > 1 else ""
        why = hint(domain, op_type)
        parts.append(f"{op_type} (domain {domain}, first node '{nodes[0]}'{more}{': ' + why if why else ''})")
    return (f"unsupported op{'s' if len(parts) > 1 else ''} ({len(parts)}): {', '.join(parts)}; `cuvil-sdk ops` "
            f"lists the supported ops; --plugin FILE.py adds an op (see docs/custom_ops.md)")


def refuse_unsupported_ops(model: onnx.ModelProto, opset: int) -> None:
    found = unsupported_ops(model, opset)
    if found:
        raise ModelError(unsupported_message(found))


def standard_qdq(model: onnx.ModelProto) -> None:
    """com.microsoft's QuantizeLinear/DequantizeLinear (ONNX Runtime's QDQ with
    UseQDQContribOps) with 8-bit zero points (and int32 biases) are ONNX's own: move them to ONNX's domain, where
    the QDQ import takes them. Other types stay, and are listed as unsupported."""
    init = {t.name: t for t in model.graph.initializer}
    eight_bit = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    for node in model.graph.node:
        if node.domain != "com.microsoft" or node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            continue
        zp = node.input[2] if len(node.input) > 2 else ""
        # DequantizeLinear of an int32 bias (zero point int32) is ONNX's too
        allowed = eight_bit + ((onnx.TensorProto.INT32,) if node.op_type == "DequantizeLinear" else ())
        if not zp or (zp in init and init[zp].data_type in allowed):
            node.domain = ""


def declare_used_domains(model: onnx.ModelProto) -> None:
    """Import the other domains that supported nodes use but the model does not declare: ONNX
    Runtime's quantize_dynamic writes com.microsoft ops into If branches without adding that
    domain (ORT runs the model; the checker would refuse it)."""
    declared = {o.domain for o in model.opset_import}
    for node in model.graph.node:
        if node.domain not in declared and node.domain not in ("", "ai.onnx"):
            model.opset_import.append(onnx.helper.make_opsetid(node.domain, 1))
            declared.add(node.domain)


__all__ = ["refuse_unsupported_ops", "unsupported_message", "declare_used_domains", "standard_qdq",
           "DYNAMIC_SHAPE_OPS"]
