"""Custom operators from plugins: a Python reference and C kernels, registered by a plugin
file or module (`--plugin FILE.py`, repeatable; `load_plugins(specs)` for a project file).

A plugin calls `register_op` (directly, or as a decorator on its float reference):

    @register_op("com.example", "SquaredRelu", inputs=["float32"], outputs=["float32"],
                 attrs={"alpha": Attr("float", default=1.0)}, elementwise=True,
                 kernels=[Kernel("portable", "fp32", "squared_relu_f32", "squared_relu_f32.h",
                                 In("in", "float"), Out("out", "float"), *I("count"), *F("alpha"))])
    def squared_relu(x, alpha):
        return alpha * np.maximum(x, 0.0) ** 2

- The signature is (domain, op type, input and output dtypes, attribute names and types):
  a model node that differs is refused naming the node, the op and the plugin.
- Kernels are declared with the same typed interface as the built-in ones; their sources
  stay in the plugin's folder (paths relative to the plugin file), and each prototype is
  checked against its declaration when the plugin loads. A `.h.j2` source is rendered per
  attribute values (numbers only reach C, as C literals): one kernel per signature.
- Arguments are filled by parameter name: `input`/`output` parameters take the node's
  inputs and outputs in order, `count` the number of output elements, a parameter named
  after an attribute its value, anything else the dict returned by `args(ctx)` (or by the
  int8 rule's `constants(ctx)`).
- int8: a unary element-wise op without an int8 rule is a 256-entry lookup table computed
  from the float reference (as the built-in activations), run by the built-in `lut_s8`.
- `replace_kernel(kernel_set, kernel, source)` replaces a built-in kernel's source for one
  set (a hand-tuned version); builds list the layers that run plugin kernels.

Every plugin error is one line naming the plugin and the op (docs/custom_ops.md).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import math
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from .codegen.kernel_files import PLUGIN_SOURCES, PluginSource
from .codegen.lowering import c_float
from .codegen.prototypes import mismatches, parse_prototype
from .codegen.sanitize import c_identifier
from .errors import ModelError, UsageError
from .ir import Graph, Node
from .kernels.contract import (  # In, Out, W, I, F: re-exported for plugins (__all__)
    F, I, In, Buf, KernelCall, KernelDecl, Out, Param, W, Weight, call, declarations)
from .kernels.kernel_sets import KERNEL_SETS, PLUGIN_RULES
from .ops.registry import REGISTRY, OpDef, int8_rule_text

__all__ = ["register_op", "replace_kernel", "Attr", "Kernel", "Int8", "OpContext", "In", "Out", "W", "I", "F",
           "load_plugins", "PluginError"]

DTYPES = ("float32", "int8")
ATTR_TYPES = {"float": float, "int": int, "string": str, "floats": list, "ints": list}
PRECISIONS = ("fp32", "int8")
REQUIRED = object()


class PluginError(UsageError):
    """A plugin that cannot be used (exit 2): one line naming the plugin and the op."""


@dataclass(frozen=True)
class Attr:
    """An attribute of the signature: its type (float, int, string, floats, ints) and an
    optional default (without one, a node must set it)."""

    type: str
    default: Any = REQUIRED


class Kernel:
    """One C kernel of a plugin op: set, precision (fp32 or int8), C function name, source
    (relative to the plugin file; `.h`, or `.h.j2` rendered per attribute values), and its
    parameters in C order, declared with In/Out/W/I/F exactly as the built-in kernels."""

    def __init__(self, kernel_set: str, precision: str, name: str, source: str, *params: Param | Iterable[Param]):
        self.kernel_set, self.precision, self.name, self.source = kernel_set, precision, name, source
        flat: list[Param] = []
        for p in params:
            flat.extend([p] if isinstance(p, Param) else list(p))
        self.params = tuple(flat)
        self.path: Path | None = None  # resolved at registration

    @property
    def templated(self) -> bool:
        return self.source.endswith(".j2")

    def decl(self, c_name: str | None = None) -> KernelDecl:
        return KernelDecl(self.kernel_set, c_name or self.name, self.params,
                          template=self.name if self.templated else "")


@dataclass
class Int8:
    """An int8 rule: `constants(ctx)` gives the integer constants (numbers or arrays; they
    fill the int8 kernels' parameters by name), `reference(ctx, consts, *xs)` the int8
    outputs from int8 inputs: the numpy integer reference every kernel must equal."""

    constants: Callable[["OpContext"], dict[str, Any]]
    reference: Callable[..., Any]


@dataclass
class OpContext:
    """What a plugin's functions see of one node."""

    node: str
    attrs: dict[str, Any]
    input_shapes: list[tuple[int, ...]]
    output_shapes: list[tuple[int, ...]]
    precision: str
    input_qparams: list[tuple[float, int] | None] = field(default_factory=list)  # int8: (scale, zero point)
    output_qparams: list[tuple[float, int] | None] = field(default_factory=list)


@dataclass
class OpSpec:
    domain: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Attr]
    reference: Callable[..., Any]
    kernels: list[Kernel]
    infer: Callable[..., list[tuple[int, ...]]] | None
    int8: Int8 | None
    elementwise: bool
    args: Callable[[OpContext], dict[str, Any]] | None
    summary: str
    plugin: str
    rules: set[tuple[str, str]] = field(default_factory=set)  # what registration added to PLUGIN_RULES

    @property
    def key(self) -> str:
        return op_key(self.domain, self.op_type)

    @property
    def lut(self) -> bool:
        """int8 for free: a unary element-wise op without a rule of its own."""
        return self.int8 is None and self.elementwise and len(self.inputs) == 1 and len(self.outputs) == 1

    def kernel(self, kernel_set: str, precision: str) -> Kernel | None:
        return next((k for k in self.kernels if k.kernel_set == kernel_set and k.precision == precision), None)

    def int8_rule(self) -> str:
        return "lookup table (from the reference)" if self.lut else "plugin rule" if self.int8 else "none (fp32 only)"


@dataclass
class Plugin:
    spec: str  # as given (path or module)
    ops: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    pending: set[str] = field(default_factory=set)  # register_op decorators not applied (yet)


PLUGINS: dict[str, Plugin] = {}  # by resolved spec
OPS: dict[str, OpSpec] = {}  # by registry key
_loading: list[Plugin] = []


def op_key(domain: str, op_type: str) -> str:
    """The op registry's key: the op type for ONNX's own domain, `domain::OpType` otherwise."""
    return op_type if domain in ("", "ai.onnx") else f"{domain}::{op_type}"


def fail(plugin: str, what: str, message: str) -> PluginError:
    return PluginError(f"plugin '{plugin}', {what}: {message}")


def current_plugin(frame_file: str | None) -> str:
    return _loading[-1].spec if _loading else (frame_file or "<python>")


# ---------------------------------------------------------------- registration


def register_op(domain: str, op_type: str, *, inputs: list[str], outputs: list[str],
                attrs: dict[str, Attr | str] | None = None, reference: Callable[..., Any] | None = None,
                kernels: list[Kernel] = (), infer: Callable[..., list[tuple[int, ...]]] | None = None,
                int8: Int8 | None = None, elementwise: bool = False,
                args: Callable[[OpContext], dict[str, Any]] | None = None, summary: str = ""):
    """Register a custom op (see the module docstring and docs/custom_ops.md). Without
    `reference`, returns a decorator that takes the float reference."""
    caller = sys._getframe(1).f_globals.get("__file__")
    base = Path(caller).resolve().parent if caller else Path.cwd()
    plugin = current_plugin(caller)

    def finish(ref: Callable[..., Any]) -> Callable[..., Any]:
        if _loading:
            _loading[-1].pending.discard(op_key(domain, op_type))
        spec = OpSpec(domain, op_type, list(inputs), list(outputs),
                      {k: v if isinstance(v, Attr) else Attr(v) for k, v in (attrs or {}).items()}, ref,
                      list(kernels), infer, int8, elementwise, args, summary, plugin)
        check_spec(spec, base)
        OPS[spec.key] = spec
        REGISTRY[spec.key] = op = PluginOp(spec)
        install_kernels(spec)
        install_rules(op)
        if _loading:
            _loading[-1].ops.append(spec.key)
        return ref

    if reference is not None:
        finish(reference)
        return reference
    if _loading:
        _loading[-1].pending.add(op_key(domain, op_type))
    return finish


def check_spec(spec: OpSpec, base: Path) -> None:
    what = f"op {domain_name(spec)}"
    err = lambda message: fail(spec.plugin, what, message)  # noqa: E731
    if not re.fullmatch(r"[A-Za-z_][\w.]*", spec.op_type) or not re.fullmatch(r"[\w.\-]*", spec.domain):
        raise err("the domain and op type must be plain names")
    if spec.key in OPS:
        raise err(f"registered twice (first by plugin '{OPS[spec.key].plugin}')")
    if spec.key in REGISTRY:
        raise err("is a built-in op; a plugin may replace a built-in kernel (replace_kernel), not the op")
    if not callable(spec.reference):
        raise err("no float reference (a numpy function of the inputs and attributes)")
    if not spec.inputs or not spec.outputs:
        raise err("declare at least one input and one output dtype")
    for dtype in spec.inputs + spec.outputs:
        if dtype not in DTYPES:
            raise err(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    for name, a in spec.attrs.items():
        if a.type not in ATTR_TYPES:
            raise err(f"attribute {name}: type {a.type!r} is not one of {', '.join(ATTR_TYPES)}")
    if spec.int8 is not None and not isinstance(spec.int8, Int8):
        raise err("int8 must be an Int8(constants=..., reference=...) rule")
    taken = {k.name: k for other in OPS.values() for k in other.kernels}
    for k in spec.kernels:
        where = f"kernel {k.name} ({k.kernel_set}, {k.precision})"
        if k.kernel_set not in KERNEL_SETS or k.kernel_set == "cuda":
            sets = ", ".join(s for s in sorted(KERNEL_SETS) if s != "cuda")
            raise err(f"{where}: no kernel set {k.kernel_set!r} takes plugin kernels (sets: {sets})")
        if k.precision not in PRECISIONS:
            raise err(f"{where}: precision must be fp32 or int8")
        if not re.fullmatch(r"[A-Za-z_]\w*", k.name):
            raise err(f"{where}: the kernel name must be a C identifier")
        if any(k.name in declarations(s) for s in KERNEL_SETS) or k.name in taken:
            raise err(f"{where}: the name is taken by another kernel; choose another")
        if sum(1 for j in spec.kernels if (j.kernel_set, j.precision) == (k.kernel_set, k.precision)) > 1:
            raise err(f"{where}: two kernels for the same set and precision")
        taken[k.name] = k
        k.path = (base / k.source).resolve()
        if not k.path.is_file():
            raise err(f"{where}: source '{k.source}' not found (looked in {base})")
        if any(j.path == k.path for j in spec.kernels if j is not k and j.path is not None):
            raise err(f"{where}: '{k.source}' is another kernel's source too; one kernel per file")
        check_prototype(k, defaults_of(spec), err)
    for precision in ("fp32",) + (("int8",) if spec.int8 else ()):
        if spec.kernel("portable", precision) is None:
            raise err(f"no portable {precision} kernel (the portable set is required; other sets are optional)")
    for k in spec.kernels:
        if k.precision == "int8" and spec.int8 is None:
            raise err(f"kernel {k.name}: an int8 kernel needs an int8 rule (int8=Int8(...))")


def domain_name(spec: OpSpec) -> str:
    return f"{spec.domain}::{spec.op_type}" if spec.domain else spec.op_type


def defaults_of(spec: OpSpec) -> dict[str, Any]:
    """Attribute values to check a templated kernel with: defaults, else a zero of the type."""
    zero = {"float": 0.0, "int": 0, "string": "x", "floats": [0.0], "ints": [0]}
    return {n: a.default if a.default is not REQUIRED else zero[a.type] for n, a in spec.attrs.items()}


def check_prototype(k: Kernel, attrs: dict[str, Any], err: Callable[[str], PluginError]) -> str:
    """The kernel's C text for these attribute values, its prototype checked against the
    declaration; returns its text (rendered) and raises the plugin's one-line error."""
    name = kernel_c_name(k, attrs)
    try:
        text = render_source(k, attrs, name)
    except Exception as exc:  # a template error is the plugin's, said in one line
        raise err(f"kernel {k.name}: '{k.source}' does not render: {' '.join(str(exc).split())}") from None
    params = parse_prototype(text, name)
    if params is None:
        raise err(f"kernel {k.name}: '{k.source}' defines no `static void {name}(...)`")
    problems = mismatches(k.decl(name), params)
    if problems:
        raise err(f"kernel {k.name}: the prototype in '{k.source}' does not match its declaration: "
                  + "; ".join(problems))
    return text


def kernel_c_name(k: Kernel, attrs: dict[str, Any]) -> str:
    """A templated kernel is one C function per attribute signature."""
    if not k.templated:
        return k.name
    digest = hashlib.sha1(repr(sorted(attrs.items())).encode()).hexdigest()[:8]
    return f"{k.name}_{digest}"


def c_literal(value: Any) -> Any:
    """An attribute value as it may appear in C: numbers as literals, strings as identifiers."""
    if isinstance(value, (list, tuple)):
        return [c_literal(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"the value {value} is not finite")
        return c_float(float(value))
    return c_identifier(str(value))


def render_source(k: Kernel, attrs: dict[str, Any], name: str) -> str:
    text = k.path.read_text()
    if not k.templated:
        return text
    import jinja2
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                             lstrip_blocks=True, autoescape=False)
    return env.from_string(text).render(kernel=name, attrs={n: c_literal(v) for n, v in attrs.items()})


def install_kernels(spec: OpSpec) -> None:
    """The sources of the op's kernels, for the code generator (templated ones are rendered
    per node, when it is lowered)."""
    for k in spec.kernels:
        if not k.templated:
            PLUGIN_SOURCES[k.kernel_set, k.name] = PluginSource(spec.plugin, lambda k=k: k.path.read_text(), k.path)


def install_rules(op: PluginOp) -> None:
    """The op's kernels for sets other than portable, as rules of those sets: where a board
    lists the set, its kernel takes the call of the op's portable kernel of the same precision."""
    spec = op.spec
    for k in spec.kernels:
        portable = spec.kernel("portable", k.precision)
        if k.kernel_set != "portable":
            entry = (k.kernel_set, portable.name)
            PLUGIN_RULES[entry] = lambda c, node, g, options, k=k: op.call(k, node, g, k.precision)
            spec.rules.add(entry)


def replace_kernel(kernel_set: str, kernel: str, source: str) -> None:
    """Replace built-in kernel `kernel` of `kernel_set` by the plugin's own source (a
    hand-tuned version with the same prototype); the builds that use it list it."""
    caller = sys._getframe(1).f_globals.get("__file__")
    base = Path(caller).resolve().parent if caller else Path.cwd()
    plugin = current_plugin(caller)
    err = lambda message: fail(plugin, f"kernel {kernel_set}/{kernel}", message)  # noqa: E731
    decl = declarations(kernel_set).get(kernel)
    if decl is None or kernel_set == "cuda":
        raise err(f"set {kernel_set!r} has no built-in kernel {kernel!r} to replace")
    if (kernel_set, kernel) in PLUGIN_SOURCES:
        raise err(f"replaced twice (first by plugin '{PLUGIN_SOURCES[kernel_set, kernel].plugin}')")
    k = Kernel(kernel_set, "", kernel, source, *decl.params)
    k.path = (base / source).resolve()
    if not k.path.is_file():
        raise err(f"source '{source}' not found (looked in {base})")
    check_prototype(k, {}, err)
    PLUGIN_SOURCES[kernel_set, kernel] = PluginSource(plugin, lambda: k.path.read_text(), k.path)
    if _loading:
        _loading[-1].replaced.append((kernel_set, kernel))


# ---------------------------------------------------------------- the op in the pipeline


class PluginOp(OpDef):
    """A registered plugin op, seen by the pipeline like any built-in op."""

    def mixes_samples(self, node: Node, g: Graph) -> bool:
        return True  # its float reference may read the whole tensor: calibrate one sample at a time

    def __init__(self, spec: OpSpec) -> None:
        self.spec = spec
        self.op_type = spec.key
        self.summary = spec.summary or f"plugin op from {spec.plugin}"
        self.defaults = {n: a.default for n, a in spec.attrs.items() if a.default is not REQUIRED}

    def fail(self, node: Node, message: str) -> ModelError:
        return ModelError(f"node '{node.name}' ({domain_name(self.spec)}, plugin '{self.spec.plugin}'): {message}")

    def attrs_of(self, node: Node) -> dict[str, Any]:
        return {n: node.attrs.get(n, self.defaults.get(n)) for n in self.spec.attrs}

    def context(self, node: Node, g: Graph, precision: str = "fp32") -> OpContext:
        qp = lambda name: g.tensors[name].q.scalar() if name and g.tensors[name].q is not None else None  # noqa: E731
        return OpContext(node.name, self.attrs_of(node), [g.tensors[i].shape for i in node.inputs],
                         [g.tensors[o].shape for o in node.outputs if o in g.tensors], precision,
                         [qp(i) for i in node.inputs], [qp(o) for o in node.outputs])

    def check(self, node: Node, g: Graph) -> None:
        s = self.spec
        if len(node.inputs) != len(s.inputs) or len(node.outputs) != len(s.outputs):
            raise self.fail(node, f"{len(node.inputs)} inputs and {len(node.outputs)} outputs; the plugin declares "
                                  f"{len(s.inputs)} and {len(s.outputs)}")
        for name, value in node.attrs.items():
            if name not in s.attrs:
                raise self.fail(node, f"attribute '{name}' is not in the plugin's signature "
                                      f"({', '.join(s.attrs) or 'no attributes'})")
            if not attr_matches(value, s.attrs[name].type):
                raise self.fail(node, f"attribute '{name}' is {type(value).__name__} {value!r}; the plugin "
                                      f"declares {s.attrs[name].type}")
            if s.attrs[name].type in ("float", "floats") and not all(
                    math.isfinite(v) for v in (value if isinstance(value, list) else [value])):
                raise self.fail(node, f"attribute '{name}' is not finite")
        missing = [n for n, a in s.attrs.items() if a.default is REQUIRED and n not in node.attrs]
        if missing:
            raise self.fail(node, f"attribute {', '.join(missing)} is required by the plugin's signature")
        for i, (name, dtype) in enumerate(zip(node.inputs, s.inputs)):
            t = g.tensors.get(name)
            if t is not None and t.dtype != dtype:
                raise self.fail(node, f"input {i} '{name}' is {t.dtype}; the plugin declares {dtype}")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shapes = [g.tensors[i].shape for i in node.inputs]
        if self.spec.infer is None:
            if not self.spec.elementwise:
                x = [g.tensors[i].data if g.tensors[i].is_const else np.zeros(g.tensors[i].shape, np.float32)
                     for i in node.inputs]
                return [np.shape(y) for y in self.outputs_of(self.spec.reference(*x, **self.attrs_of(node)), node)]
            return [shapes[0]] * len(self.spec.outputs)
        result = self.spec.infer(shapes, **self.attrs_of(node))
        result = [result] if isinstance(result, tuple) else list(result)
        if len(result) != len(self.spec.outputs):
            raise self.fail(node, f"shape inference gave {len(result)} shapes for {len(self.spec.outputs)} outputs")
        return [tuple(int(d) for d in s) for s in result]

    def outputs_of(self, value: Any, node: Node) -> list[np.ndarray]:
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(values) != len(self.spec.outputs):
            raise self.fail(node, f"the reference returned {len(values)} values for {len(self.spec.outputs)} outputs")
        return values

    def run_float(self, node, g, xs):
        ys = self.outputs_of(self.spec.reference(*[np.asarray(x, np.float32) for x in xs], **self.attrs_of(node)),
                             node)
        return [np.asarray(y).astype(np.float32).reshape(g.tensors[o].shape) for y, o in zip(ys, node.outputs)]

    def quantize(self, node, g):
        if self.spec.lut:
            from .ops.activation import lookup_table
            attrs = self.attrs_of(node)
            node.q = {"table": lookup_table(lambda x: self.spec.reference(x, **attrs), g, node)}
        elif self.spec.int8 is not None:
            node.q = dict(self.spec.int8.constants(self.context(node, g, "int8")))
        else:
            raise self.fail(node, "no int8 rule: the plugin gives none and the op is not unary element-wise "
                                  "(build with --precision fp32, or give the op an int8 rule)")

    def run_int(self, node, g, xs):
        if self.spec.lut:
            return [node.q["table"][xs[0].astype(np.int32) + 128]]
        ys = self.outputs_of(self.spec.int8.reference(self.context(node, g, "int8"), node.q, *xs), node)
        return [np.asarray(y).astype(np.int8).reshape(g.tensors[o].shape) for y, o in zip(ys, node.outputs)]

    def lower(self, node, g, precision):
        if precision == "int8" and self.spec.lut:
            return call("lut_s8", **{"in": Buf(node.inputs[0], const=True), "out": Buf(node.outputs[0])},
                        count=g.tensors[node.inputs[0]].size, table=Weight("table", node.q["table"], "int8_t"))
        if precision not in PRECISIONS:
            raise self.fail(node, f"no {precision} kernel")
        return self.call(self.spec.kernel("portable", precision), node, g, precision)

    def call(self, k: Kernel, node: Node, g: Graph, precision: str) -> KernelCall:
        """A checked call of plugin kernel `k`, every argument filled by its name."""
        attrs = self.attrs_of(node)
        values: dict[str, Any] = {"count": g.tensors[node.outputs[0]].size}
        values.update({n: v for n, v in attrs.items() if isinstance(v, (int, float))})
        ctx = self.context(node, g, precision)
        if self.spec.args is not None:
            values.update(self.spec.args(ctx))
        if precision == "int8" and isinstance(node.q, dict):
            values.update(node.q)
        ins, outs = iter(node.inputs), iter(node.outputs)
        c_name = kernel_c_name(k, attrs)
        if k.templated:
            text = check_prototype(k, attrs, lambda m: self.fail(node, m))
            PLUGIN_SOURCES[k.kernel_set, c_name] = PluginSource(self.spec.plugin, lambda text=text: text, k.path,
                                                                template=True)
        decl, args = k.decl(c_name), {}
        for p in k.params:
            if p.kind == "input":
                name = next(ins, None)
                t = g.tensors.get(name) if name else None
                if t is None:
                    raise self.fail(node, f"kernel {k.name}: more input parameters than node inputs")
                args[p.name] = Weight(p.name, t.data.astype(np.dtype(numpy_type(p.ctype))), p.ctype) \
                    if t.is_const else Buf(name, const=True)
            elif p.kind == "output":
                name = next(outs, None)
                if name is None:
                    raise self.fail(node, f"kernel {k.name}: more output parameters than node outputs")
                args[p.name] = Buf(name)
            elif p.name not in values:
                raise self.fail(node, f"kernel {k.name}: no value for parameter '{p.name}' (not an attribute, "
                                      f"not 'count', not given by args(ctx){' or the int8 rule' if precision == 'int8' else ''})")
            elif p.kind == "weight":
                args[p.name] = Weight(p.name, np.asarray(values[p.name]).astype(numpy_type(p.ctype)), p.ctype)
            else:
                args[p.name] = values[p.name]
        if p_float := [p.name for p in k.params if p.kind == "float" and not math.isfinite(float(args[p.name]))]:
            raise self.fail(node, f"kernel {k.name}: parameter {', '.join(p_float)} is not finite")
        return decl(**args)


def numpy_type(ctype: str) -> str:
    return {"float": "float32", "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
            "uint8_t": "uint8", "uint32_t": "uint32"}.get(ctype, "float32")


def attr_matches(value: Any, kind: str) -> bool:
    if kind == "float":
        return isinstance(value, float)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    element = float if kind == "floats" else int
    return isinstance(value, list) and all(isinstance(v, element) for v in value)


def check_node_types(model, node) -> None:
    """The element types the ONNX model declares for a plugin node's inputs and outputs
    (graph inputs/outputs, value_info, initializers) against the plugin's signature."""
    import onnx
    spec = OPS.get(op_key(node.domain, node.op_type))
    if spec is None:
        return
    declared = {v.name: v.type.tensor_type.elem_type for v in
                list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info)}
    declared.update({t.name: t.data_type for t in model.graph.initializer})
    wanted = {"float32": onnx.TensorProto.FLOAT, "int8": onnx.TensorProto.INT8}
    for role, names, dtypes in (("input", node.input, spec.inputs), ("output", node.output, spec.outputs)):
        for i, (name, dtype) in enumerate(zip(names, dtypes)):
            elem = declared.get(name)
            if elem and elem != wanted[dtype]:
                raise ModelError(f"node '{node.name or node.op_type}' ({domain_name(spec)}, plugin '{spec.plugin}'): "
                                 f"{role} {i} '{name}' is {onnx.TensorProto.DataType.Name(elem)} in the model; "
                                 f"the plugin declares {dtype}")


# ---------------------------------------------------------------- loading


def load_plugins(specs: Iterable[str] | None, base_dir: Path | None = None) -> list[Plugin]:
    """Load plugins given as files (`x.py`, relative to base_dir or the working folder) or
    module paths (`pkg.ops`); loading one twice is a no-op. The project file's `plugins`
    list goes through here too (with base_dir = the project file's folder)."""
    loaded = []
    for spec in specs or []:
        loaded.append(load_plugin(spec, base_dir or Path.cwd()))
    return loaded


def is_file_spec(spec: str) -> bool:
    """A plugin given as a file (`x.py`, `dir/x.py`), not as a module path (`pkg.ops`)."""
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def load_plugin(spec: str, base_dir: Path) -> Plugin:
    path = (base_dir / spec).resolve() if is_file_spec(spec) else None
    key = str(path) if path else spec
    if key in PLUGINS:
        return PLUGINS[key]
    if path is not None and not path.is_file():
        raise PluginError(f"plugin '{spec}': no such file")
    plugin = Plugin(spec)
    _loading.append(plugin)
    try:
        if path is not None:
            module_name = f"cuvil_plugin_{c_identifier(str(path))}"
            loader_spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[module_name] = module
            loader_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except PluginError:
        unload(plugin)
        raise
    except BaseException as exc:  # whatever the plugin's own code raises, one line
        unload(plugin)
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = ""
        tb = exc.__traceback__
        while tb is not None:
            if path is not None and Path(tb.tb_frame.f_code.co_filename).resolve() == path:
                where = f" (line {tb.tb_lineno})"
            tb = tb.tb_next
        raise PluginError(f"plugin '{spec}' fails to import{where}: {type(exc).__name__}: "
                          f"{' '.join(str(exc).split())}") from None
    finally:
        _loading.pop()
    if plugin.pending:
        unload(plugin)
        raise PluginError(f"plugin '{spec}', op {sorted(plugin.pending)[0]}: no float reference (give reference=, "
                          f"or apply @register_op(...) to the numpy function)")
    if not plugin.ops and not plugin.replaced:
        raise PluginError(f"plugin '{spec}' registers no op and replaces no kernel (see docs/custom_ops.md)")
    PLUGINS[key] = plugin
    return plugin


def unload(plugin: Plugin) -> None:
    """Forget what a plugin registered (a failed import; tests)."""
    for key in plugin.ops:
        spec = OPS.pop(key, None)
        REGISTRY.pop(key, None)
        for entry in spec.rules if spec else ():
            PLUGIN_RULES.pop(entry, None)
    for entry in [e for e, source in PLUGIN_SOURCES.items() if source.plugin == plugin.spec]:
        PLUGIN_SOURCES.pop(entry)
    for key in [k for k, p in PLUGINS.items() if p is plugin]:
        PLUGINS.pop(key)


def unload_all() -> None:
    for plugin in list(PLUGINS.values()):
        unload(plugin)


@contextmanager
def plugins_loaded(specs: Iterable[str], base_dir: Path | None = None):
    """Load plugins for a block and forget them afterwards (tests, tools)."""
    loaded = load_plugins(specs, base_dir)
    try:
        yield loaded
    finally:
        for plugin in loaded:
            unload(plugin)


# ---------------------------------------------------------------- `cuvil-sdk ops`


def builtin_kernel_sets(op: OpDef) -> list[str]:
    """The sets with a kernel for an op's portable kernels (named in its lowering's source)."""
    source = ""
    for cls in type(op).__mro__[:-2]:  # the op's class and its bases, up to OpDef
        try:
            source += inspect.getsource(cls)
        except (OSError, TypeError):
            source += inspect.getsource(sys.modules[cls.__module__])
    if op.alias:
        return []
    portable = declarations("portable")
    names = set(re.findall(r'"(\w+)"', source))
    family = getattr(op, "kernel_family", None)  # ops that name their kernels as f"{family}_{dtype}"
    if family:
        names |= {f"{family}_{dtype}" for dtype in ("s8", "s16", "f32")}
    kernels = names & set(portable)
    sets = ["portable"] if kernels else []
    return sets + sorted(s for s, ks in KERNEL_SETS.items() if s != "portable" and kernels & set(ks.rules))


def describe_ops() -> dict:
    """Every op (built-in and from plugins) with its int8 rule and kernel sets."""
    rows = []
    for key, op in sorted(REGISTRY.items()):
        if key.startswith("_"):
            continue
        spec = OPS.get(key)
        if spec is None:
            domain, _, name = key.rpartition("::")  # built-in ops of other domains: com.microsoft::...
            rows.append({"op": name, "domain": domain or "ai.onnx", "source": "built-in", "int8": int8_rule_text(op),
                         "kernel_sets": builtin_kernel_sets(op)})
        else:
            sets = sorted({k.kernel_set for k in spec.kernels})
            rows.append({"op": spec.op_type, "domain": spec.domain or "ai.onnx", "source": spec.plugin,
                         "int8": spec.int8_rule(), "kernel_sets": sets,
                         "attributes": {n: a.type for n, a in spec.attrs.items()},
                         "kernels": [f"{k.kernel_set}/{k.name} ({k.precision})" for k in spec.kernels]})
    replaced = [{"kernel_set": s, "kernel": k, "plugin": source.plugin}
                for (s, k), source in sorted(PLUGIN_SOURCES.items()) if k in declarations(s)]
    return {"ops": rows, "replaced_kernels": replaced}


def human_ops(report: dict) -> str:
    lines = [f"ONNX operators as defined up to opset {report['onnx_opset']} (newer opsets build with a warning)"] \
        if "onnx_opset" in report else []
    lines.append(f"{'op':24} {'domain':14} {'int8':34} {'kernel sets':28} source")
    for r in report["ops"]:
        lines.append(f"{r['op']:24} {r['domain']:14} {r['int8']:34} {', '.join(r['kernel_sets']) or '-':28} "
                     f"{r['source']}")
    for r in report["replaced_kernels"]:
        lines.append(f"kernel {r['kernel_set']}/{r['kernel']} replaced by plugin '{r['plugin']}'")
    return "\n".join(lines)

