"""Pinned inputs (--input-value NAME=VALUE) and the control flow they make static.

A model exported "for runtimes without control flow" may still keep one `If` whose condition
depends only on a scalar input the user knows in advance (Silero's voice-activity detector
branches on the sample rate around its whole net). Pinning that input makes it a constant;
an `If` whose condition is then computable from constants is replaced by the nodes of the
branch it takes. This works on the ONNX protobuf, before the checker and the IR: the IR has
no subgraphs, and the taken branch is then checked like any other part of the model.
"""
from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ModelError, UsageError
from .safety import CONTROL_FLOW_OPS, first_line

VALUE = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|true|false", re.IGNORECASE)


def parse_input_values(specs: list[str] | None) -> dict[str, float | int | bool]:
    """--input-value NAME=VALUE (repeatable) -> {NAME: number}: an integer, a float, or
    true/false."""
    values: dict[str, float | int | bool] = {}
    for spec in specs or []:
        name, sep, text = str(spec).rpartition("=")
        text = text.strip()
        if not sep or not name or not VALUE.fullmatch(text):
            raise UsageError(f"--input-value '{spec}' must look like NAME=VALUE (a number, true or false), "
                             f"e.g. sr=16000")
        lowered = text.lower()
        if lowered in ("true", "false"):
            values[name] = lowered == "true"
        elif re.fullmatch(r"[-+]?\d+", text):
            values[name] = int(text)
        else:
            values[name] = float(text)
    return values


def pin_inputs(model: onnx.ModelProto, values: dict[str, float | int | bool],
               shapes: dict[str, tuple[int, ...]]) -> None:
    """Each pinned input becomes an initializer of its element type and (one-value) shape, and
    stops being a model input."""
    inputs = {i.name: i for i in model.graph.input}
    initializers = {t.name for t in model.graph.initializer}
    unknown = sorted(n for n in values if n not in inputs or n in initializers)
    if unknown:
        raise UsageError(f"--input-value names no model input: {', '.join(unknown)}")
    for name, value in values.items():
        array = pinned_array(inputs[name], value, shapes.get(name))
        if model.ir_version >= 4:  # before IR 4 every initializer is also listed as an input (its default)
            model.graph.input.remove(inputs[name])
        model.graph.initializer.append(numpy_helper.from_array(array, name))


def pinned_array(inp: onnx.ValueInfoProto, value: float | int | bool, shape: tuple[int, ...] | None) -> np.ndarray:
    """The constant of a pinned input: its own element type, its shape (dynamic dims as 1),
    refused when that holds more than one value or the value does not fit the type."""
    elem = inp.type.tensor_type.elem_type
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except Exception:
        raise UsageError(f"--input-value {inp.name}: the input's element type cannot be pinned") from None
    if shape is None:
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                      for d in inp.type.tensor_type.shape.dim)
    if int(np.prod(shape, dtype=np.int64)) != 1:
        raise UsageError(f"--input-value {inp.name}: the input has shape {list(shape)}; only a scalar input "
                         f"(one value) can be pinned")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if float(value) != int(value) or not info.min <= int(value) <= info.max:
            raise UsageError(f"--input-value {inp.name}={value}: not a value of the input's type {dtype.name}")
        return np.full(shape, int(value), dtype)
    if dtype.kind == "b":
        if value not in (0, 1):
            raise UsageError(f"--input-value {inp.name}={value}: the input is bool (true, false, 1 or 0)")
        return np.full(shape, bool(value), dtype)
    if dtype.kind != "f":
        raise UsageError(f"--input-value {inp.name}: the input's element type {dtype.name} cannot be pinned")
    return np.full(shape, value, dtype)


# ---------------------------------------------------------------- folding If


def fold_static_control_flow(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None) -> None:
    """Replace every `If` whose condition is computable from constants (and from the static
    shapes of inputs: `Shape(x)`, --input-shape) by its taken branch, and unroll every `Loop`
    whose trip count is such a constant, until neither is left that can go (a branch or a
    loop body may hold control flow of its own; an unrolled body's iteration number is a
    constant, so an If on it folds)."""
    shapes = static_input_shapes(model, input_shapes or {})
    while True:
        for k, node in enumerate(model.graph.node):
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "If" and fold_if(model, k, node, shapes):
                break
            if node.op_type == "Loop" and unroll_loop(model, k, node, shapes):
                break
        else:
            return


def fold_if(model: onnx.ModelProto, k: int, node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> bool:
    cond = constant_value(model, node.input[0], shapes)
    if cond is None:
        return False
    if cond.size != 1:
        raise ModelError(f"node '{node.name or 'If'}' (If): its condition has {cond.size} values, not one")
    inline_branch(model, k, attribute_graph(node, "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"))
    return True


def attribute_graph(node: onnx.NodeProto, name: str) -> onnx.GraphProto:
    for attr in node.attribute:
        if attr.name == name:
            return attr.g
    raise ModelError(f"node '{node.name or node.op_type}' ({node.op_type}) has no {name}")


def static_input_shapes(model: onnx.ModelProto, overrides: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """The run-time inputs whose shape is known: fixed by --input-shape, or wholly static in the
    model (every dim a value >= 0)."""
    shapes = {}
    for inp in model.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if inp.name in overrides:
            shapes[inp.name] = tuple(overrides[inp.name])
        elif inp.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") and d.dim_value >= 0
                                                             for d in dims):
            shapes[inp.name] = tuple(d.dim_value for d in dims)
    return shapes


# ops that read only their input's shape: a run-time input of static shape is no value for them
SHAPE_READERS = ("Shape", "Size")


def backward_slice(model: onnx.ModelProto, name: str) -> tuple[list[onnx.NodeProto], set[str], set[str]]:
    """The nodes that `name` depends on (in model order), the model inputs whose values it
    depends on, and those whose shape only it reads (through Shape or Size)."""
    producer = {o: n for n in model.graph.node for o in n.output if o}
    initializers = {t.name for t in model.graph.initializer}
    runtime = {i.name for i in model.graph.input} - initializers
    needed, values, shaped, todo = set(), set(), set(), [name]
    while todo:
        t = todo.pop()
        if t in runtime:
            values.add(t)
        if not t or t in initializers or t not in producer:
            continue
        node = producer[t]
        if id(node) in needed:
            continue
        needed.add(id(node))
        if node.op_type in SHAPE_READERS and node.input[0] in runtime:
            shaped.add(node.input[0])
            continue
        todo.extend(node.input)
        todo.extend(outer_names(node))
    return [n for n in model.graph.node if id(n) in needed], values, shaped


def outer_names(node: onnx.NodeProto) -> list[str]:
    """Names a node's subgraphs read from the enclosing scope (every input name they use)."""
    names = []
    for attr in node.attribute:
        for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for inner in sub.node:
                names.extend(inner.input)
                names.extend(outer_names(inner))
    return names


def constant_value(model: onnx.ModelProto, name: str, shapes: dict[str, tuple[int, ...]] | None = None
                   ) -> np.ndarray | None:
    """The value of tensor `name` when it depends on constants only (initializers, Constant
    nodes, pinned inputs, static input shapes), evaluated with ONNX's reference evaluator; None
    otherwise."""
    shapes = shapes or {}
    nodes, values, shaped = backward_slice(model, name)
    if values or not shaped <= set(shapes):
        return None
    init = {t.name: t for t in model.graph.initializer}
    if name in init:
        return numpy_helper.to_array(init[name])
    if not nodes:
        return None
    used = {i for n in nodes for i in list(n.input) + outer_names(n)}
    inputs = {i.name: i for i in model.graph.input}
    # an input read only for its shape is fed zeros of that shape: Shape and Size see no values
    feeds = {n: np.zeros(shapes[n], helper.tensor_dtype_to_np_dtype(inputs[n].type.tensor_type.elem_type))
             for n in shaped}
    graph = helper.make_graph(nodes, "condition", [inputs[n] for n in shaped],
                              [helper.make_tensor_value_info(name, 0, None)], [init[t] for t in used if t in init])
    probe = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        from onnx.reference import ReferenceEvaluator
        return np.asarray(ReferenceEvaluator(probe).run(None, feeds)[0])
    except Exception as exc:  # the reference evaluator raises many types for what it cannot run
        raise ModelError(f"tensor '{name}' (the condition of an If) cannot be evaluated at compile time: "
                         f"{first_line(exc)}") from None


def defined_names(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name a graph defines at its top level (inputs, initializers, node outputs)."""
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    return names | {o for n in graph.node for o in n.output if o}


def inline_branch(model: onnx.ModelProto, at: int, branch: onnx.GraphProto) -> None:
    """Put the nodes and initializers of `branch` in place of the If node at index `at`: the
    branch's outputs become the If's outputs (renamed where a branch node produces them, else
    copied by an Identity); branch names that the model already uses are renamed apart."""
    node = model.graph.node[at]
    taken = defined_names(model.graph) | all_names(model.graph)
    local = defined_names(branch)
    rename = {}
    for n in sorted(local):
        if n in taken:
            rename[n] = unique_name(f"{node.name or 'If'}/{n}", taken)
            taken.add(rename[n])
    produced = {o for n in branch.node for o in n.output if o}
    out_names = [o.name for o in branch.output]
    for out, target in zip(branch.output, node.output):
        if out.name in produced and out_names.count(out.name) == 1:  # the producer writes the If's output
            rename[out.name] = target
    nodes = []
    for inner in branch.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(inner)
        rename_in_node(copy, rename)
        nodes.append(copy)
    for out, target in zip(branch.output, node.output):
        source = rename.get(out.name, out.name)
        if source != target:
            nodes.append(helper.make_node("Identity", [source], [target], name=f"{node.name or 'If'}/{target}"))
    for t in branch.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(t)
        copy.name = rename.get(t.name, t.name)
        model.graph.initializer.append(copy)
    del model.graph.node[at]
    for k, inner in enumerate(nodes):
        model.graph.node.insert(at + k, inner)


# ---------------------------------------------------------------- unrolling Loop

# the most iterations a Loop is unrolled to: each is a copy of the body in the generated C
MAX_UNROLL = 256


def unroll_loop(model: onnx.ModelProto, at: int, node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> bool:
    """A Loop whose trip count M is a constant (at most MAX_UNROLL), whose condition input is
    absent or constant true and whose body passes its condition on unchanged (or returns a
    constant true) becomes M copies of its body: the iteration number a constant in each,
    the loop-carried values chained, the scan outputs stacked along a new axis 0. False when
    the Loop is not of that form (it is then refused as control flow)."""
    trips = constant_value(model, node.input[0], shapes) if len(node.input) > 0 and node.input[0] else None
    cond = constant_value(model, node.input[1], shapes) if len(node.input) > 1 and node.input[1] else np.array(True)
    body = attribute_graph(node, "body")
    if trips is None or cond is None or trips.size != 1 or cond.size != 1 or not bool(cond.reshape(-1)[0]):
        return False
    count = int(trips.reshape(-1)[0])
    if not 0 < count <= MAX_UNROLL or not body_keeps_going(body):
        return False
    carried = list(node.input[2:])
    scans = len(body.output) - 1 - len(carried)
    taken = defined_names(model.graph) | all_names(model.graph)
    nodes, stacked = [], [[] for _ in range(scans)]
    for i in range(count):
        rename = {}
        for n in sorted(defined_names(body)):
            rename[n] = unique_name(f"{node.name or 'Loop'}/{i}/{n}", taken)
            taken.add(rename[n])
        iteration, keep_going = (b.name for b in body.input[:2])
        model.graph.initializer.append(numpy_helper.from_array(np.array(i, np.int64), rename[iteration]))
        model.graph.initializer.append(numpy_helper.from_array(np.array(True), rename[keep_going]))
        for b, value in zip(body.input[2:], carried):
            nodes.append(helper.make_node("Identity", [value], [rename[b.name]], name=rename[b.name]))
        for t in body.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(t)
            copy.name = rename[t.name]
            model.graph.initializer.append(copy)
        for inner in body.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(inner)
            rename_in_node(copy, rename)
            if copy.name:
                copy.name = unique_name(f"{node.name or 'Loop'}/{i}/{inner.name}", taken)
                taken.add(copy.name)
            nodes.append(copy)
        outs = [rename.get(o.name, o.name) for o in body.output[1:]]
        carried = outs[:len(carried)]
        for k, name in enumerate(outs[len(carried):]):
            stacked[k].append(name)
    nodes += loop_outputs(model, node, carried, stacked, taken)
    del model.graph.node[at]
    for k, inner in enumerate(nodes):
        model.graph.node.insert(at + k, inner)
    return True


def body_keeps_going(body: onnx.GraphProto) -> bool:
    """The body's condition output is its condition input (directly or through Identity), or a
    constant true: every iteration runs."""
    produced = {o: n for n in body.node for o in n.output}
    name = body.output[0].name
    while name in produced and produced[name].op_type == "Identity":
        name = produced[name].input[0]
    if name == body.input[1].name:
        return True
    init = {t.name: t for t in body.initializer}
    value = numpy_helper.to_array(init[name]) if name in init else None
    constant = produced.get(name)
    if constant is not None and constant.op_type == "Constant":
        attr = next((a for a in constant.attribute if a.name == "value"), None)
        value = numpy_helper.to_array(attr.t) if attr is not None else None
    return value is not None and value.size == 1 and bool(value.reshape(-1)[0])


def loop_outputs(model: onnx.ModelProto, node: onnx.NodeProto, carried: list[str], stacked: list[list[str]],
                 taken: set[str]) -> list[onnx.NodeProto]:
    """Identity of each final loop-carried value to the Loop's output, and each scan output's
    per-iteration values unsqueezed on a new axis 0 and concatenated."""
    nodes = [helper.make_node("Identity", [value], [out], name=f"{node.name or 'Loop'}/{out}")
             for value, out in zip(carried, node.output) if out]
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
    axes = unique_name(f"{node.name or 'Loop'}/axis0", taken)
    taken.add(axes)
    if opset >= 13:
        model.graph.initializer.append(numpy_helper.from_array(np.array([0], np.int64), axes))
    for out, values in zip(node.output[len(carried):], stacked):
        if not out:
            continue
        rows = []
        for value in values:
            row = unique_name(f"{value}/row", taken)
            taken.add(row)
            rows.append(row)
            nodes.append(helper.make_node("Unsqueeze", [value, axes], [row], name=row) if opset >= 13 else
                         helper.make_node("Unsqueeze", [value], [row], name=row, axes=[0]))
        nodes.append(helper.make_node("Concat", rows, [out], name=f"{node.name or 'Loop'}/{out}", axis=0))
    return nodes


def all_names(graph: onnx.GraphProto) -> set[str]:
    names = defined_names(graph) | {o.name for o in graph.output}
    for n in graph.node:
        names.update(n.input)
        for attr in n.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                names |= all_names(sub)
    return names


def unique_name(hint: str, taken: set[str]) -> str:
    name, k = hint, 0
    while name in taken:
        k += 1
        name = f"{hint}_{k}"
    return name


def rename_in_node(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    """Rename inputs and outputs, and the outer-scope names the node's own subgraphs read."""
    node.input[:] = [rename.get(i, i) for i in node.input]
    node.output[:] = [rename.get(o, o) for o in node.output]
    for attr in node.attribute:
        for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            inner_defined = defined_names(sub)
            outer = {k: v for k, v in rename.items() if k not in inner_defined}
            for inner in sub.node:
                rename_in_node(inner, outer)
            for out in sub.output:
                if out.name in outer:
                    out.name = outer[out.name]


def may_be_scalar(model: onnx.ModelProto, name: str) -> bool:
    """Whether the input can hold a single value (what --input-value pins): no fixed dim above 1."""
    inp = next(i for i in model.graph.input if i.name == name)
    dims = inp.type.tensor_type.shape.dim
    return not any(d.HasField("dim_value") and d.dim_value > 1 for d in dims)


def control_flow_message(model: onnx.ModelProto, node: onnx.NodeProto, rule: str) -> str:
    """The refusal of control flow left after folding; for an If, the inputs its condition
    depends on and the option that would make it static (--input-value for a value,
    --input-shape for a shape read by Shape or Size)."""
    hints = []
    if node.op_type == "If":
        _, values, shaped = backward_slice(model, node.input[0])
        scalars = sorted(n for n in values if may_be_scalar(model, n))
        tensors = sorted(values - set(scalars))
        if scalars:
            pins = " ".join(f"--input-value {n}=VALUE" for n in scalars)
            hints.append(f"its condition depends on input{'s' if len(scalars) > 1 else ''} "
                         f"{', '.join(repr(n) for n in scalars)}: pin {'them' if len(scalars) > 1 else 'it'} "
                         f"with {pins}")
        if tensors:
            hints.append(f"its condition depends on the values of {', '.join(repr(n) for n in tensors)} (computed "
                         f"at run time)")
        if shaped:
            hints.append(f"its condition reads the shape of {', '.join(repr(n) for n in sorted(shaped))}: fix it "
                         f"with --input-shape")
    return f"node '{node.name or node.op_type}' ({node.op_type}): control flow is not supported{rule}" + \
        "".join(f"; {h}" for h in hints)


__all__ = ["parse_input_values", "pin_inputs", "fold_static_control_flow",
           "control_flow_message", "CONTROL_FLOW_OPS"]
