"""Graph, Node, Tensor: the one IR that every pipeline stage reads and rewrites.

Shapes are static tuples. Constants carry numpy data. After quantization, activation
tensors carry QParams and dtype "int8"; nodes carry the integer constants of their rule
in `node.q` (multipliers, shifts, tables), computed once in Python.

Tensors computed at run time are float (float32, float16 in fp16 builds), quantized (int8 or
int16 with QParams), or integer and bool tensors (`INTEGER_DTYPES`: indices, token ids, masks,
class indices): those hold exact values in every build and are never quantized (no QParams),
so an int8 tensor without QParams is a tensor of integers, not a quantized activation.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np


FLOAT_DTYPES = ("float32", "float16")
# the integer and bool element types of tensors computed at run time (numpy names)
INTEGER_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64")


@dataclass
class QParams:
    """Affine quantization: real = scale * (q - zero_point); per tensor or per `axis`."""

    scale: np.ndarray  # float32, shape () or (channels,)
    zero_point: np.ndarray  # int32, same shape as scale
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.scale.ndim > 0

    def scalar(self) -> tuple[float, int]:
        return float(self.scale), int(self.zero_point)


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    data: np.ndarray | None = None  # set for constants
    q: QParams | None = None
    # calibration's mean of each slice along the last axis (used for bias correction)
    channel_mean: np.ndarray | None = None
    # (ONNX tensor name, perm): this tensor holds transpose(that tensor, perm) (layout pass)
    origin: tuple[str, list[int]] | None = None
    # (base tensor, byte offset): this tensor is bytes of that one's buffer from the offset on (a
    # band's rows of a whole tensor, passes/row_bands.py); the planner places it inside its base
    view: tuple[str, int] | None = None
    # kernels/segments.Segments: slices along one axis keep their own scales (quant/range_split.py)
    segments: Any = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def is_integer(self) -> bool:
        """Integer or bool values (indices, token ids, masks), exact in every build: never quantized.
        A quantized activation (int8 or int16 with QParams) is not one."""
        return self.dtype in INTEGER_DTYPES and self.q is None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


@dataclass
class Node:
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)  # the ONNX attributes, as the model has them
    q: dict[str, Any] = field(default_factory=dict)  # integer rule constants
    # What the compiler decided about the node, kept apart from the ONNX attributes:
    activation: tuple[float, float] | None = None  # a fused clamp (passes/fuse_activation.py)
    channels_last: bool = False  # NHWC activations (passes/layout.py)
    precision: str | None = None  # a layer's own precision: "fp32" kept in float, "int16" for 16x8
    imported_q: dict[str, Any] = field(default_factory=dict)  # QDQ import: {"weight": (q, scale), "bias": ...}
    # the bits of the layer's integer weights: 8, or 4 (int4 values in [-8, 7] kept as int8 data,
    # stored packed by the kernels: --weight-bits, --int4-layers, an INT4 QDQ initializer)
    weight_bits: int = 8
    # int4 layers: per-channel weight scales where clipping measured better (quant/sensitivity.py,
    # choose_int4_scales); None: max|w| / 7
    int4_scale: Any = None


class Graph:
    """Nodes in topological order, tensors by name, graph inputs/outputs by name."""

    def __init__(self, name: str = "model") -> None:
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self._fresh = itertools.count()

    # --- lookup -------------------------------------------------------------------
    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def const(self, name: str) -> np.ndarray | None:
        t = self.tensors.get(name)
        return None if t is None else t.data

    def producer(self, name: str) -> Node | None:
        for n in self.nodes:
            if name in n.outputs:
                return n
        return None

    def consumers(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.inputs]

    def activations(self) -> Iterator[Tensor]:
        """Tensors computed at run time (graph inputs and node outputs)."""
        for name in self.inputs:
            yield self.tensors[name]
        for n in self.nodes:
            for o in n.outputs:
                yield self.tensors[o]

    # --- editing ------------------------------------------------------------------
    def fresh_name(self, hint: str) -> str:
        while True:
            name = f"{hint}__{next(self._fresh)}"
            if name not in self.tensors:
                return name

    def add_const(self, hint: str, data: np.ndarray) -> str:
        name = self.fresh_name(hint)
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), data)
        return name

    def add_tensor(self, hint: str, shape: tuple[int, ...], dtype: str = "float32") -> str:
        name = self.fresh_name(hint)
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        return name

    def replace_uses(self, old: str, new: str) -> None:
        """Make every consumer (and the graph outputs) read `new` instead of `old`."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
        if old in self.outputs:
            self._keep_output_name(old, new)

    def _keep_output_name(self, old: str, new: str) -> None:
        # Graph outputs keep their user-visible names: rename the new producer's tensor.
        producer = self.producer(new)
        if producer is None or new in self.inputs or new in self.outputs:
            self.outputs = [new if o == old else o for o in self.outputs]
            return
        t = self.tensors.pop(new)
        self.tensors.pop(old, None)
        t.name = old
        self.tensors[old] = t
        producer.outputs = [old if o == new else o for o in producer.outputs]
        for n in self.nodes:
            n.inputs = [old if i == new else i for i in n.inputs]

    def remove_unused(self) -> None:
        """Drop nodes whose outputs nobody reads, and tensors nobody references."""
        changed = True
        while changed:
            needed = set(self.outputs)
            for n in self.nodes:
                needed.update(i for i in n.inputs if i)
            keep = [n for n in self.nodes if any(o in needed for o in n.outputs)]
            changed = len(keep) != len(self.nodes)
            self.nodes = keep
        referenced = set(self.inputs) | set(self.outputs)
        for n in self.nodes:
            referenced.update(n.inputs)
            referenced.update(n.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in referenced}

    def toposort(self) -> None:
        """Order the nodes by waves: wave k holds, in their present order, the nodes whose every
        input is a graph input, a constant or an output of an earlier wave. Linear in the graph's
        size (each tensor's readers are counted down once), so a 20,000-node model sorts at once."""
        ready = set(self.inputs) | {k for k, t in self.tensors.items() if t.is_const} | {""}
        readers: dict[str, list[int]] = {}
        missing = []
        for index, n in enumerate(self.nodes):
            waiting = {i for i in n.inputs if i not in ready}
            missing.append(len(waiting))
            for name in waiting:
                readers.setdefault(name, []).append(index)
        wave = [i for i, count in enumerate(missing) if count == 0]
        ordered: list[int] = []
        while wave:
            ordered.extend(wave)
            following = []
            for index in wave:
                for name in self.nodes[index].outputs:
                    if name in ready:
                        continue
                    ready.add(name)
                    for reader in readers.get(name, ()):
                        missing[reader] -= 1
                        if missing[reader] == 0:
                            following.append(reader)
            wave = sorted(following)
        if len(ordered) != len(self.nodes):
            raise ValueError("graph has a cycle or an input that no node produces")
        self.nodes = [self.nodes[i] for i in ordered]
