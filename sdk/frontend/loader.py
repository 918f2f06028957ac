"""Load an ONNX file into the IR with static shapes, or refuse it with one clear line."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..boards import Board
from ..errors import ModelError, UsageError
from ..ir import Graph, Node, Tensor
from ..ops import REGISTRY
from ..ops.static import compile_time_inputs
from ..passes.clip_bounds import clip_bounds_to_min_max
from ..passes.compare_select import compare_select_to_min_max
from ..passes.dropout import split_dropout_mask
from ..passes.empty_tensors import drop_empty_tensors
from ..passes.layers_1d import layers_1d_to_2d
from ..plugins import check_node_types, op_key
from ..profiles import Profile
from ..quant.dynamic_import import has_dynamic_quant, import_dynamic
from ..quant.qdq_import import has_qdq, import_qdq
from ..passes.constant_folding import NEVER_FOLD
from .control_flow import control_flow_message, fold_static_control_flow, pin_inputs
from .safety import (CONTROL_FLOW_OPS, check_external_data, first_line, load_external_data, map_external_initializers,
                     read_model_file)
from .support import declare_used_domains, refuse_unsupported_ops, standard_qdq

TARGET_OPSET = 13
# the element types of model inputs: float, and the integer and bool tensors of ir.INTEGER_DTYPES
DTYPES = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8",
          onnx.TensorProto.INT16: "int16", onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT64: "int64",
          onnx.TensorProto.BOOL: "bool"}


def parse_input_shapes(specs: list[str] | None) -> dict[str, tuple[int, ...]]:
    """--input-shape NAME=1x3x32x32 (repeatable) -> {NAME: (1, 3, 32, 32)}."""
    shapes = {}
    for spec in specs or []:
        m = re.fullmatch(r"(.+)=(\d+(?:x\d+)*)", spec)
        if not m:
            raise UsageError(f"--input-shape '{spec}' must look like NAME=1x3x32x32")
        dims = tuple(int(d) for d in m.group(2).split("x"))
        if min(dims) <= 0:
            raise UsageError(f"--input-shape '{spec}': dimensions must be positive")
        shapes[m.group(1)] = dims
    return shapes


def load_model(path: Path, profile: Profile, board: Board, input_shapes: dict[str, tuple[int, ...]],
               input_values: dict[str, float | int | bool] | None = None) -> Graph:
    model = read_model_file(path)
    warning = newer_opset_warning(model, path)
    if warning:
        print(f"cuvil-sdk: warning: {warning}", file=sys.stderr)
    check_external_data(model, path.parent)
    # weights in external files are mapped, not copied (a model to upgrade is converted whole)
    mapped = map_external_initializers(model, path.parent) if opset_of(model) >= TARGET_OPSET else {}
    load_external_data(model, path.parent)
    if input_values:  # pinned inputs become constants, and the control flow on them folds
        pin_inputs(model, input_values, input_shapes)
    fold_static_control_flow(model, input_shapes)
    refuse_control_flow(model, profile)
    refuse_broken_graph(model)
    standard_qdq(model)
    refuse_unsupported_ops(model, opset_of(model))
    declare_used_domains(model)
    refuse_unknown_custom_ops(model)
    try:
        # the file itself when weights were mapped: the checker then finds them where they are
        onnx.checker.check_model(str(path) if mapped else model, full_check=True)
    except Exception as exc:
        # the checker's messages span lines (node dumps): keep them whole, on one line
        raise ModelError(f"the ONNX checker rejects '{path.name}': {' '.join(str(exc).split())[:300]}") from None
    model = upgrade_opset(model)
    refuse_unsupported(model)
    graph = to_ir(model, path.stem, input_shapes, board, mapped)
    if has_qdq(graph):
        # QDQ markers go before shape checks: ops must see their weights as constants
        import_qdq(graph)
    if has_dynamic_quant(graph):
        # quantize_dynamic's integer layers become float layers of dequantized weights
        import_dynamic(graph)
    layers_1d_to_2d(graph)
    compare_select_to_min_max(graph)
    clip_bounds_to_min_max(graph)
    infer_shapes(graph, board)
    refuse_infinite_weights(graph)
    return graph


def refuse_control_flow(model: onnx.ModelProto, profile: Profile) -> None:
    """Control flow left after folding (loader: fold_static_control_flow) is refused; an If whose
    condition depends on inputs names them and the --input-value that would fold it."""
    for node in model.graph.node:
        if node.op_type in CONTROL_FLOW_OPS:
            rule = "" if profile.allow_control_flow else f" (the '{profile.name}' profile forbids control flow)"
            raise ModelError(control_flow_message(model, node, rule))


def refuse_broken_graph(model: onnx.ModelProto) -> None:
    """Inputs that nothing produces and cycles, named here: the checker would only say
    that the nodes are not sorted."""
    nodes = list(model.graph.node)
    ready = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer} | {""}
    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    name = [n.name or f"{n.op_type}_{k}" for k, n in enumerate(nodes)]
    waiting_for, consumers = [], {}
    for k, n in enumerate(nodes):
        waits = {i for i in n.input if i not in ready}
        for inp in waits:
            if inp not in producer:
                raise ModelError(f"node '{name[k]}' reads tensor '{inp}', which no node, input or "
                                 f"initializer produces")
            consumers.setdefault(inp, []).append(k)
        waiting_for.append(len(waits))
    queue = [k for k, count in enumerate(waiting_for) if count == 0]
    for k in queue:  # Kahn's algorithm; the queue grows while it is walked
        for out in nodes[k].output:
            if out and out not in ready:
                ready.add(out)
                for c in consumers.get(out, []):
                    waiting_for[c] -= 1
                    if waiting_for[c] == 0:
                        queue.append(c)
    if len(queue) < len(nodes):  # every node left waits on another one left: follow them round
        k = next(k for k, count in enumerate(waiting_for) if count > 0)
        path: list[tuple[int, str]] = []
        while k not in [p for p, _ in path]:
            tensor = next(i for i in nodes[k].input if i not in ready)
            path.append((k, tensor))
            k = producer[tensor]
        cycle = path[[p for p, _ in path].index(k):]
        steps = ", ".join(f"node '{name[p]}' reads '{t}'" for p, t in cycle)
        raise ModelError(f"the graph has a cycle: {steps}, which depends on its own output")


def refuse_unknown_custom_ops(model: onnx.ModelProto) -> None:
    """Ops of other domains exist only through plugins (sdk/plugins.py); those missing are listed
    with every other unsupported op by refuse_unsupported_ops (support.py) before this: check the
    types the model declares against the plugin's signature."""
    for node in model.graph.node:
        check_node_types(model, node)


def refuse_unsupported(model: onnx.ModelProto) -> None:
    """After the opset upgrade: an op the converter made that the SDK lacks, listed as before
    the upgrade (support.py)."""
    refuse_unsupported_ops(model, TARGET_OPSET)


def opset_of(model: onnx.ModelProto) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


# The newest ONNX opset whose operator definitions the SDK implements and tests (opsets 13 to 21 as
# exporters write them: tests/test_frontend_opsets.py; older ones are upgraded to TARGET_OPSET).
IMPLEMENTED_OPSET = 21


def newer_opset_warning(model: onnx.ModelProto, path: Path) -> str | None:
    """A model of an opset newer than IMPLEMENTED_OPSET is built as that opset defines its ops
    (later opsets mostly add types), never in silence: one warning that says so, and that an opset
    no ONNX release defines is surely a mistake."""
    version = opset_of(model)
    if version <= IMPLEMENTED_OPSET:
        return None
    known = onnx.defs.onnx_opset_version()
    what = (f"opset {version}, which no ONNX release defines (onnx {onnx.__version__} knows up to {known})"
            if version > known else f"opset {version}")
    return (f"'{path.name}' declares {what}; cuvil-sdk implements ONNX operators up to opset {IMPLEMENTED_OPSET} "
            f"and builds its ops as opset {IMPLEMENTED_OPSET} defines them (check the result with `cuvil-sdk validate`)")


def upgrade_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    version = opset_of(model)
    if version >= TARGET_OPSET:
        return model
    try:
        upgraded = onnx.version_converter.convert_version(model, TARGET_OPSET)
    except Exception as exc:
        raise ModelError(f"cannot upgrade opset {version} to {TARGET_OPSET}: {first_line(exc)}") from None
    if version < 11:
        keep_opset10_resize(upgraded)
    return upgraded


def keep_opset10_resize(model: onnx.ModelProto) -> None:
    """Upsample and opset-10 Resize sample at asymmetric coordinates and round nearest
    down (when enlarging, their purpose); the converter's Resize-11 leaves the attributes out,
    which would mean half_pixel and round_prefer_floor."""
    for node in model.graph.node:
        names = {a.name for a in node.attribute}
        if node.op_type == "Resize" and "coordinate_transformation_mode" not in names:
            node.attribute.append(helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
            if "nearest_mode" not in names:
                node.attribute.append(helper.make_attribute("nearest_mode", "floor"))


def constant_value(node: onnx.NodeProto) -> np.ndarray:
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if attr.name == "value":
            return tensor_array(value, f"value of Constant node '{node.name}'")
        if attr.name in ("value_float", "value_floats"):
            return np.array(value, dtype=np.float32)
        if attr.name in ("value_int", "value_ints"):
            return np.array(value, dtype=np.int64)
    raise ModelError(f"Constant node '{node.name}' has no supported value attribute")


def tensor_array(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """The tensor's values; data that disagrees with its dims or type (which the checker lets
    through: raw bytes are not counted) is refused, naming the tensor."""
    try:
        with np.errstate(all="ignore"):
            return numpy_helper.to_array(tensor)
    except Exception as exc:  # numpy and onnx raise ValueError, TypeError, KeyError... on malformed data
        raise ModelError(f"{what}: its data does not match its type and dims {list(tensor.dims)} "
                         f"({type(exc).__name__})") from None


def node_attrs(node: onnx.NodeProto) -> dict:
    attrs = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, onnx.TensorProto):
            value = tensor_array(value, f"attribute '{attr.name}' of node '{node.name or node.op_type}'")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        attrs[attr.name] = value
    return attrs


def has_nan(data: np.ndarray) -> bool:
    """NaN in a float constant is refused (no model needs one; it would poison every result);
    +/-inf is legitimate (-inf is the masked score of attention masks before Softmax)."""
    return data.dtype.kind == "f" and bool(np.isnan(data).any())


# layers whose constant inputs are multiplied and summed: an infinite weight makes every
# output inf or NaN, so it is a broken model rather than a mask
WEIGHTED_LAYERS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "InstanceNormalization",
                   "LayerNormalization", "LSTM", "GRU", "RNN"}


def refuse_infinite_weights(g: Graph) -> None:
    for node in g.nodes:
        if node.op not in WEIGHTED_LAYERS:
            continue
        for name in node.inputs:
            data = g.const(name) if name else None
            if data is not None and data.dtype.kind == "f" and not np.isfinite(data).all():
                raise ModelError(f"tensor '{name}' (a weight of node '{node.name}', {node.op}) contains Inf "
                                 f"values; +/-inf constants are accepted only as masks and bounds")


def to_ir(model: onnx.ModelProto, name: str, input_shapes: dict[str, tuple[int, ...]], board: Board,
          mapped: dict[str, np.ndarray] | None = None) -> Graph:
    """The IR of the model; `mapped` holds the initializers already mapped from external files."""
    g = Graph(name)
    for init in model.graph.initializer:
        data = mapped[init.name] if mapped and init.name in mapped else tensor_array(init, f"initializer '{init.name}'")
        if has_nan(data):
            raise ModelError(f"tensor '{init.name}' contains NaN values")
        if data.size > board.flash_bytes:  # even at one byte per value (int8) it cannot fit
            raise ModelError(f"tensor '{init.name}' ({data.size} values) is larger than the flash of board "
                             f"'{board.name}' ({board.flash_bytes} bytes) even as int8")
        g.tensors[init.name] = Tensor(init.name, tuple(data.shape), str(data.dtype), data)
    unknown = set(input_shapes) - {i.name for i in model.graph.input}
    if unknown:
        raise UsageError(f"--input-shape names no model input: {', '.join(sorted(unknown))}")
    for inp in model.graph.input:
        if inp.name in g.tensors:
            continue
        t = Tensor(inp.name, fixed_input_shape(inp, input_shapes), input_dtype(inp))
        if t.size > board.ram_bytes:  # even at one byte per value (int8) it cannot fit
            raise ModelError(f"input '{inp.name}' ({t.size} values) is larger than the RAM of board "
                             f"'{board.name}' ({board.ram_bytes} bytes) even as int8")
        g.tensors[inp.name] = t
        g.inputs.append(inp.name)
    produced = {o for n in model.graph.node for o in n.output}
    for i, n in enumerate(model.graph.node):
        node_name = n.name or f"{n.op_type}_{i}"
        if n.op_type == "Constant":
            data = constant_value(n)
            if has_nan(data):
                raise ModelError(f"tensor '{n.output[0]}' of Constant node '{node_name}' contains NaN values")
            if data.size > board.flash_bytes:  # even at one byte per value (int8) it cannot fit
                raise ModelError(f"tensor '{n.output[0]}' of Constant node '{node_name}' ({data.size} values) is "
                                 f"larger than the flash of board '{board.name}' ({board.flash_bytes} bytes) "
                                 f"even as int8")
            g.tensors[n.output[0]] = Tensor(n.output[0], tuple(data.shape), str(data.dtype), data)
            continue
        for inp in n.input:
            if inp and inp not in g.tensors and inp not in produced:
                raise ModelError(f"node '{node_name}' reads tensor '{inp}', which no node, input or "
                                 f"initializer produces")
        g.nodes.append(Node(op_key(n.domain, n.op_type), node_name, list(n.input), [o for o in n.output], node_attrs(n)))
    g.outputs = [o.name for o in model.graph.output]
    if not g.inputs:
        raise ModelError("the model has no runtime inputs")
    try:
        g.toposort()
    except ValueError as exc:
        raise ModelError(f"the graph is not a DAG: {exc}") from None
    return g


def input_dtype(inp: onnx.ValueInfoProto) -> str:
    elem = inp.type.tensor_type.elem_type
    if elem not in DTYPES:
        name = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values() else str(elem)
        raise ModelError(f"input '{inp.name}' has element type {name}; inputs must be float32, int8, int16, "
                         f"int32, int64, uint8 or bool tensors")
    return DTYPES[elem]


def fixed_input_shape(inp: onnx.ValueInfoProto, overrides: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    dims = inp.type.tensor_type.shape.dim
    if inp.name in overrides:
        shape = overrides[inp.name]
        if dims and len(shape) != len(dims):
            raise UsageError(f"--input-shape {inp.name}: rank {len(shape)} differs from the model's {len(dims)}")
        for axis, (d, fixed) in enumerate(zip(dims, shape)):
            # -1 (paddle2onnx's dynamic batch) and symbolic dims are what --input-shape fixes
            if d.HasField("dim_value") and d.dim_value >= 0 and d.dim_value != fixed:
                raise UsageError(f"--input-shape {inp.name}: axis {axis} is {d.dim_value} in the model, not {fixed}")
        return shape
    if not inp.type.tensor_type.HasField("shape"):
        raise ModelError(f"input '{inp.name}' has no shape; fix it with --input-shape {inp.name}=1x...")
    shape = []
    for d in dims:  # a dimension of 0 is static (an empty tensor)
        if not d.HasField("dim_value") or d.dim_value < 0:
            label = d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")  # -1: paddle2onnx's
            raise ModelError(f"input '{inp.name}' has a dynamic dimension '{label}'; static shapes are required: "
                             f"fix it with {input_shape_hint(inp.name, dims)}")
        shape.append(d.dim_value)
    return tuple(shape)


def input_shape_hint(name: str, dims) -> str:
    """An --input-shape that works as typed where it can: a dynamic batch (the first dimension)
    becomes 1, since data files give N samples on their own leading axis; any other dynamic
    dimension is a <placeholder> for the user's size, with the rest of the hint still exact."""
    def fixed(i: int, d) -> str:
        if d.HasField("dim_value") and d.dim_value > 0:
            return str(d.dim_value)
        return "1" if i == 0 else f"<{d.dim_param or f'dim{i}'}>"
    sizes = [fixed(i, d) for i, d in enumerate(dims)]
    hint = f"--input-shape {name}=" + "x".join(sizes)
    placeholders = [s for s in sizes if s.startswith("<")]
    if placeholders:
        hint += f" ({', '.join(placeholders)}: the size of your data)"
    elif not (dims[0].HasField("dim_value") and dims[0].dim_value > 0):
        hint += " (batch 1: a data file's leading axis gives N samples)"
    return hint


def infer_shapes(g: Graph, board: Board) -> None:
    """Run each op's own support check and shape inference, in order. A node whose value is
    known at compile time (constant inputs, only its input's static shape, or only empty
    run-time inputs) is evaluated here and becomes a constant, so that the ops after it see
    constants (ops/static.py)."""
    for node in list(g.nodes):
        op = REGISTRY[node.op]
        drop_empty_tensors(node, g)
        split_dropout_mask(node, g)
        if is_static(node, g):
            fold_node(node, g, board)
            continue
        refuse_integer_inputs(op, node, g)
        shapes = checked_shapes(op, node, g)
        dtypes = op.dtypes(node, g)
        for out, shape, dtype in zip(node.outputs, shapes, dtypes):
            if not out:
                continue
            t = g.tensors.get(out) or Tensor(out, ())
            t.shape = tuple(int(d) for d in shape)
            t.dtype = dtype
            if t.size > board.ram_bytes:  # even at one byte per value (int8) it cannot fit
                raise ModelError(f"tensor '{out}' of node '{node.name}' ({t.size} values) is larger than the RAM "
                                 f"of board '{board.name}' ({board.ram_bytes} bytes) even as int8")
            g.tensors[out] = t
        refuse_extra_outputs(node, shapes)


def refuse_integer_inputs(op, node: Node, g: Graph) -> None:
    """An integer or bool tensor computed at run time into an op that computes on float only."""
    if op.integer_inputs:
        return
    for name in node.inputs:
        t = g.tensors.get(name) if name else None
        if t is not None and not t.is_const and t.is_integer:
            raise ModelError(f"node '{node.name}' ({node.op}): input '{name}' is a run-time {t.dtype} tensor; "
                             f"{node.op} is supported on float tensors only (a Cast to float before it converts)")


def checked_shapes(op, node: Node, g: Graph) -> list:
    """The op's support check, then its shape inference. An input left empty ('') where the op
    needs a tensor (ONNX marks only optional inputs that way) is refused naming the node."""
    try:
        op.check(node, g)
        return op.infer(node, g)
    except KeyError as missing:
        if missing.args and missing.args[0] == "" and "" in node.inputs:
            raise ModelError(f"node '{node.name}' ({node.op}): input {node.inputs.index('')} is empty, "
                             f"but the op needs a tensor there") from None
        raise


def refuse_extra_outputs(node: Node, shapes: list) -> None:
    for extra in node.outputs[len(shapes):]:
        if extra:
            raise ModelError(f"node '{node.name}' ({node.op}): output '{extra}' is not supported")


def is_static(node: Node, g: Graph) -> bool:
    """Constant inputs only, an op that reads only shapes, or run-time inputs that are all
    empty (no values to read: a reduction over an empty set gives its identity)."""
    if node.op in NEVER_FOLD:
        return False
    skip = REGISTRY[node.op].type_only_inputs
    inputs = [g.tensors[i] for k, i in enumerate(node.inputs) if i and k not in skip]
    if all(t.is_const for t in inputs) or bool(getattr(REGISTRY[node.op], "reads_shape_only", False)):
        return True
    return all(t.is_const or t.size == 0 for t in inputs)


def fold_node(node: Node, g: Graph, board: Board) -> None:
    """Evaluate `node` with numpy and replace it by constants (its output shapes checked
    against the board's flash first: a constant's size is the model's to choose). The op's
    `check` is not asked (it states what its kernels support at run time, e.g. Concat's
    "no constant inputs"); constants that do not fit the op are refused by the numpy errors
    they raise here, naming the node."""
    op = REGISTRY[node.op]
    try:
        with np.errstate(all="ignore"):
            shapes = op.infer(node, g)
            refuse_extra_outputs(node, shapes)
            for out, shape in zip(node.outputs, shapes):
                size = int(np.prod(shape, dtype=np.float64))
                if size > board.flash_bytes:
                    raise ModelError(f"constant '{out}' of node '{node.name}' ({size} values) is larger than the "
                                     f"flash of board '{board.name}' ({board.flash_bytes} bytes) even as int8")
                if out:
                    g.tensors[out] = Tensor(out, tuple(int(d) for d in shape))
            values = op.run_float(node, g, compile_time_inputs(node, g))
    except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError, KeyError) as exc:
        raise ModelError(f"node '{node.name}' ({node.op}): its constant inputs cannot be evaluated at compile "
                         f"time: {first_line(exc)}") from None
    at = g.nodes.index(node)
    g.nodes.remove(node)
    for out, value in zip(node.outputs, values):
        if not out:
            continue
        value = np.array(value, order="C")  # (ascontiguousarray would make a scalar 1-D)
        if out in g.outputs:  # a model output known at compile time: written by a copy of the constant
            g.nodes.insert(at, fill_node(g, node, out, value))
            continue
        g.tensors[out] = Tensor(out, tuple(value.shape), str(value.dtype), value)


def fill_node(g: Graph, node: Node, out: str, value: np.ndarray) -> Node:
    """A `_Fill` node that writes the constant `value` to the model output `out` (ops/static.py)."""
    const = g.add_const(f"{out}_value", value)
    g.tensors[out] = Tensor(out, tuple(value.shape), str(value.dtype))
    return Node("_Fill", f"{node.name}_fill", [const], [out])
