"""Kernel selection and argument lowering: each node becomes kernel calls with every
argument already a C expression; weights become named constant arrays."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph
from ..kernels.contract import Buf, Declined, KernelCall, KernelInterfaceError, Param, Weight
from ..kernels.dtypes import CTYPES
from ..kernels.kernel_sets import KERNEL_SETS
from ..kernels.options import CodegenOptions
from ..kernels.overlap import Overlap
from ..ops import get_op
from ..planner import ArenaPlan
from .kernel_files import plugin_provider
from .sanitize import Namer


@dataclass
class WeightArray:
    name: str
    ctype: str
    values: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


@dataclass
class Call:
    kernel: str  # "" for a layer the copy-in did (input_copy.py): only its mark and dump
    args: list[str]
    layer: int
    ends_layer: bool = True  # the last call of its layer: where a profiling mark goes
    out_offset: int = 0  # the layer's output in the arena, for debug dumps
    out_bytes: int = 0
    checked: bool = False  # the kernel checks run-time indices and returns non-zero when one is out of range


@dataclass
class Lowered:
    calls: list[Call] = field(default_factory=list)
    weights: list[WeightArray] = field(default_factory=list)
    kernel_files: dict[str, str] = field(default_factory=dict)  # kernel -> "set/kernel.h"
    layers: list[dict] = field(default_factory=list)
    fallbacks: list["Fallback"] = field(default_factory=list)
    int4_unpacked: list["Fallback"] = field(default_factory=list)  # int4 layers stored as int8 bytes, and why
    plugin_kernels: list[dict] = field(default_factory=list)  # layers whose kernel a plugin provides
    # the kernels' stack arrays, "<KERNEL>_<ARRAY>" -> elements: the most any call of the model
    # needs (KernelCall.stack); the model's .c defines them before including the kernels
    stack_arrays: dict[str, int] = field(default_factory=dict)
    weight_names: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (ctype, dtype, digest) -> name
    # kernel -> the source features its calls need (KernelCall.features, codegen/kernel_files.py)
    kernel_features: dict[str, frozenset[str]] = field(default_factory=dict)

    def add_stack(self, c: KernelCall) -> None:
        for array, elements in c.stack.items():
            key = f"{c.kernel}_{array}".upper()
            self.stack_arrays[key] = max(self.stack_arrays.get(key, 0), elements)


def c_float(value: float) -> str:
    """An exact C float literal: the shortest decimal that reads back as the same float32 (at
    most 9 significant digits). Decimal because hex float literals are not C++ before C++17.
    +/-inf is C99's INFINITY; NaN and finite values beyond float32 are refused."""
    with np.errstate(over="ignore"):  # too large for float32 becomes inf, refused below
        f = np.float32(value)
    if np.isnan(f) or (np.isinf(f) and np.isfinite(value)):
        raise ValueError(f"no C literal for the float {value}")
    if np.isinf(f):  # -inf: attention masks (math.h, which weights.h includes)
        return "INFINITY" if f > 0 else "(-INFINITY)"
    if f == 0 or 1e-4 <= abs(f) < 1e7:  # plain digits where they stay short
        return np.format_float_positional(f, unique=True, trim="0") + "f"
    return np.format_float_scientific(f, unique=True, trim="0") + "f"


@dataclass
class Fallback:
    """A layer left to a slower kernel than its board's sets offer, and why."""

    layer: str
    op: str
    kernel: str
    reason: str

    def as_dict(self) -> dict:
        return {"layer": self.layer, "op": self.op, "kernel": self.kernel, "reason": self.reason}


def select_kernel(c: KernelCall, node, g: Graph, kernel_sets: list[str], options: CodegenOptions,
                  fallbacks: list[Fallback]) -> list[KernelCall]:
    """The call(s) of the first set in `kernel_sets` (then portable) that takes `c`. `fallbacks`
    says why when the portable kernel ends up running it on a board that has a faster set (each
    set's reason for declining, or that the set has no kernel for it at all), and when a set
    declined it and a later one took it (cortex-m55: a layer Helium declines runs on the DSP
    kernels; a set without any kernel for the op is the board's order of sets, not a decline)."""
    reasons, declined = [], []
    for set_name in kernel_sets:
        answer = KERNEL_SETS[set_name].specialise(c, node, g, options)
        if isinstance(answer, Declined):
            reasons.append(f"{set_name}: {answer.reason}")
            declined.append(reasons[-1])
        elif answer is None and set_name != "portable":
            reasons.append(f"{set_name}: no {set_name} kernel for {c.kernel}")
        elif answer is not None:
            calls = answer if isinstance(answer, list) else [answer]
            if declined:
                _note(fallbacks, Fallback(node.name, node.op, calls[0].kernel, "; ".join(declined)))
            return calls
    if reasons:
        _note(fallbacks, Fallback(node.name, node.op, c.kernel, "; ".join(reasons)))
    return [c]


def _note(fallbacks: list[Fallback], fallback: Fallback) -> None:
    if fallback not in fallbacks:  # a layer of several calls of one kernel is said once
        fallbacks.append(fallback)


def op_calls(node, g: Graph, options: CodegenOptions) -> list[KernelCall]:
    """What the node's op lowers to: checked portable kernel calls. Ops lower fp16 layers as
    float ones; each call then becomes its f16 twin (quant/half.py)."""
    precision = node.precision or options.precision
    lowered = get_op(node.op).lower(node, g, "fp32" if precision == "fp16" else precision)
    calls = lowered if isinstance(lowered, list) else [lowered]
    if precision == "fp16":
        from ..quant.half import half_call
        calls = [half_call(c, node) for c in calls]
    return calls


def layer_calls(g: Graph, kernel_sets: list[str], options: CodegenOptions, fallbacks: list[Fallback]):
    """(index, node, its portable calls, the kernel calls it runs) for every node; both None
    for alias nodes. A malformed call, in the op or in a set's rule, names the op and node."""
    for index, node in enumerate(g.nodes):
        if get_op(node.op).alias:
            yield index, node, None, None
            continue
        try:
            portable = op_calls(node, g, options)
            if options.precision == "fp16" and node.precision == "fp32":  # no f16 kernel (quant/half.py)
                from ..quant.half import FLOAT_LAYER_REASON
                fallbacks.append(Fallback(node.name, node.op, portable[0].kernel, FLOAT_LAYER_REASON))
            calls = [c for p in portable for c in select_kernel(p, node, g, kernel_sets, options, fallbacks)]
        except KernelInterfaceError as exc:
            raise KernelInterfaceError(f"op {node.op} (node '{node.name}'): {exc}") from None
        yield index, node, portable, calls


@dataclass
class Selection:
    """Every node's kernel calls, chosen before the arena is planned (the planner reads the
    chosen kernels' overlap rules): layer_calls' tuples and the fallbacks it reported."""

    layers: list[tuple]
    fallbacks: list[Fallback]
    copied_in: set[str] = field(default_factory=set)  # nodes the C API's copy-in does (absorb_copies)

    def absorb_copies(self, nodes: set[str]) -> None:
        """The named nodes (Transposes of graph inputs, codegen/input_copy.py) run no kernel: the
        copy of their input into the arena writes their output."""
        self.copied_in |= nodes
        self.layers = [(i, node, portable, [] if node.name in nodes else calls)
                       for i, node, portable, calls in self.layers]

    def in_place(self) -> dict[str, list[str]]:
        """Output tensor -> the inputs whose buffer it may take (KernelDecl.in_place), for
        nodes lowered to one call."""
        shares: dict[str, list[str]] = {}
        for _index, node, _portable, calls in self.layers:
            if calls and len(calls) == 1:
                for out, inp in calls[0].in_place_tensors():
                    if out in node.outputs:
                        shares.setdefault(out, []).append(inp)
        return shares

    def overlaps(self) -> dict[str, list[tuple[str, Overlap]]]:
        """Output tensor -> (input, Overlap) its kernel's overlap rule allows (KernelDecl.overlap),
        for nodes lowered to one call."""
        found: dict[str, list[tuple[str, Overlap]]] = {}
        for _index, node, _portable, calls in self.layers:
            if calls and len(calls) == 1:
                for out, inp, allowed in calls[0].overlap_tensors():
                    if out in node.outputs:
                        found.setdefault(out, []).append((inp, allowed))
        return found


def select_layers(g: Graph, kernel_sets: list[str], options: CodegenOptions) -> Selection:
    fallbacks: list[Fallback] = []
    return Selection(list(layer_calls(g, kernel_sets, options, fallbacks)), fallbacks)


def lower_graph(g: Graph, plan: ArenaPlan, kernel_sets: list[str], options: CodegenOptions, prefix: str,
                selection: Selection | None = None) -> Lowered:
    """Render every call's arguments against the plan; `selection`: the kernels chosen before
    planning (select_layers with the same sets and options), else chosen here."""
    out = Lowered()
    namer = Namer()
    selection = selection or select_layers(g, kernel_sets, options)
    out.fallbacks = selection.fallbacks
    for index, node, portable, calls in selection.layers:
        if calls is None:
            out.layers.append(layer_row(index, node, g, plan, "(alias)", 0, 0))
            continue
        if not calls and node.name in selection.copied_in:  # done by the copy-in: its mark and dump stay
            out.calls.append(Call("", [], index, out_offset=plan.offsets[node.outputs[0]],
                                  out_bytes=g.tensors[node.outputs[0]].nbytes))
            out.layers.append(layer_row(index, node, g, plan, "(input copy)", 0, 0))
            continue
        if not calls:  # nothing to run (e.g. a copy onto itself)
            out.layers.append(layer_row(index, node, g, plan, "(none)", 0, 0))
            continue
        weights_before = len(out.weights)
        for c in calls:
            provider = plugin_provider(c.decl.kernel_set, c.kernel)
            if provider:
                out.plugin_kernels.append({"layer": node.name, "op": node.op, "kernel_set": c.decl.kernel_set,
                                           "kernel": c.kernel, "plugin": provider})
            out.kernel_files.setdefault(c.kernel, f"{c.decl.kernel_set}/{c.kernel}.h")
            if c.features:
                out.kernel_features[c.kernel] = out.kernel_features.get(c.kernel, frozenset()) | c.features
            out.add_stack(c)
            rendered = [render_arg(c, p, g, plan, out, namer, f"{prefix}_l{index}") for p in c.decl.params]
            out.calls.append(Call(c.kernel, rendered, index, ends_layer=False, checked=c.decl.checked))
        out.calls[-1].ends_layer = True
        out.calls[-1].out_offset = plan.offsets[node.outputs[0]]
        out.calls[-1].out_bytes = g.tensors[node.outputs[0]].nbytes
        weight_bytes = sum(w.nbytes for w in out.weights[weights_before:])
        out.layers.append(layer_row(index, node, g, plan, calls[0].kernel, len(calls), weight_bytes))
        variants = " + ".join(dict.fromkeys(c.variant for c in calls if c.variant))
        if variants:  # kernels with variants only (the others' manifests stay as they were)
            out.layers[-1]["variant"] = variants
        providers = sorted({k["plugin"] for k in out.plugin_kernels if k["layer"] == node.name})
        if providers:  # reports say which layers run a plugin's kernel
            out.layers[-1]["kernel_plugin"] = ", ".join(providers)
        # the same weights in the portable layout (int8 for int8 layers), before a kernel set
        # re-laid them out (the Cortex-M DSP set widens them to int16): reports show both
        out.layers[-1]["portable_weight_bytes"] = weight_bytes_of(portable)
        if options.weight_bits_rows and node.op in WEIGHTED_OPS and "w" in node.q and \
                (node.precision or options.precision) in ("int8", "int16"):
            unpacked = next((c for c in calls if c.int8_storage), None)
            out.layers[-1].update(weight_bits_row(node, unpacked))
            if unpacked is not None:
                out.int4_unpacked.append(Fallback(node.name, node.op, unpacked.kernel, unpacked.int8_storage))
    return out


def layer_row(index: int, node, g: Graph, plan: ArenaPlan, kernel: str, calls: int, weight_bytes: int) -> dict:
    """What reports and profiles say about one layer."""
    out = g.tensors[node.outputs[0]]
    origin = out.origin or (out.name, list(range(len(out.shape))))
    # a range split's Concat and the moves after it hold per-segment codes (validate --per-layer)
    segments = out.segments.as_manifest() if out.segments is not None else {}
    return segments | {"index": index, "name": node.name, "op": node.op, "kernel": kernel, "calls": calls,
            "macs": get_op(node.op).macs(node, g), "weight_bytes": weight_bytes, "output": out.name,
            "output_shape": list(out.shape), "output_dtype": out.dtype, "activation_bytes": out.nbytes,
            "arena_offset": plan.offsets.get(out.name), "onnx_tensor": origin[0], "onnx_perm": origin[1],
            "scale": out.q.scalar()[0] if out.q is not None else None,
            "zero_point": out.q.scalar()[1] if out.q is not None else None}


WEIGHTED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def weight_bits_row(node, unpacked: KernelCall | None) -> dict:
    """A weighted layer's integer weights in the report: their bits, the bytes of the values as
    int8 (one each) and as int4 (two per byte), and how this build stores them (int4: packed
    two per byte, int8: one byte each, also an int4 layer whose kernel reads int8 weights)."""
    count = int(np.asarray(node.q["w"]).size)
    four = node.weight_bits == 4 and unpacked is None
    return {"weight_bits": node.weight_bits, "int8_weight_bytes": count, "int4_weight_bytes": (count + 1) // 2,
            "weight_storage": "int4" if four else "int8"}


def weight_bytes_of(calls: list[KernelCall]) -> int:
    return sum(np.asarray(a.data).nbytes for c in calls for a in c.args.values() if isinstance(a, Weight))


def render_arg(c: KernelCall, p: Param, g: Graph, plan: ArenaPlan, out: Lowered, namer: Namer, hint: str) -> str:
    """One argument as a C expression (pointers into the arena, weight names, literals)."""
    arg = c.args[p.name]
    if isinstance(arg, Buf):
        dtype = g.tensors[arg.tensor].dtype
        if p.ctype not in ("void", CTYPES[dtype]):
            raise KernelInterfaceError(f"kernel {c.kernel}: {p.name} is {p.ctype} data, tensor '{arg.tensor}' "
                                       f"is {dtype}")
        qual = "const " if arg.const else ""
        return f"({qual}{CTYPES[dtype]} *)(arena + {plan.offsets[arg.tensor]})"
    if isinstance(arg, Weight):
        values = np.ascontiguousarray(arg.data).reshape(-1)
        key = (arg.ctype, str(values.dtype), hashlib.sha256(values.tobytes()).hexdigest())
        if key not in out.weight_names:  # the same array for several calls (a layer run in row bands) once
            out.weight_names[key] = namer(f"{hint}_{arg.hint}")
            out.weights.append(WeightArray(out.weight_names[key], arg.ctype, values))
        return out.weight_names[key]
    if p.kind == "float":
        return c_float(float(arg))
    return str(int(arg))
