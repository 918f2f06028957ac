"""Indexing ops: Gather, GatherElements, GatherND and ScatterElements (indices constant or computed
at run time), and OneHot.

Gather with constant indices is an index remap (movement.py's tables). With run-time indices
(token ids into an embedding table, the boxes a TopK picked) each op runs a kernel that checks
every index: a negative one counts from the end, and one outside the axis makes the kernel
return 1 at once, so the model's run function returns <NAME>_ERR_INDEX (the Python runtime raises
ModelError) and nothing is read or written outside a tensor. ScatterElements checks every index
before it writes anything. Constant indices are checked here, at compile time. The kernels count
offsets in int32 where the static shapes prove they fit (every tensor of a model that fits a
board does); int64 indices are read as they are.

OneHot: an index outside [-depth, depth) gives a row of `off` values, as ONNX says (not an
error); depth and values must be constants.

int8 rules: no value changes, so the output keeps the data's scale and zero point; constant data
(an embedding table) is quantized at its own range, which the output then has (fixed), and
stored as int8 codes. ScatterElements' constant updates are quantized at the data's scale (with
reduction none; its other reductions, and run-time updates, have no int8 rule). OneHot's output
takes the range of its two values.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, QParams
from ..kernels.contract import Buf, Weight, call
from ..kernels.dtypes import CTYPES, VARIANTS
from ..kernels.requant import quantize_float
from .common import const_input, per_tensor, require
from .elementwise import const_qparams
from .movement import Remap, normalized_axis, slice_tables
from .registry import OpDef, register

MAX_RANK = 4
INDEX_DTYPES = ("int32", "int64")
REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}


def strides_of(shape: tuple[int, ...]) -> list[int]:
    return [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]


def checked_indices(node: Node, idx: np.ndarray, n: int) -> np.ndarray:
    """Indices with negative ones counted from the end; ModelError when one is outside [-n, n)."""
    idx = np.asarray(idx).astype(np.int64)
    bad = (idx < -n) | (idx >= n)
    if np.any(bad):
        raise IndexError(f"node '{node.name}' ({node.op}): index {int(idx[bad].reshape(-1)[0])} is out of range "
                         f"for a dimension of {n}")
    return np.where(idx < 0, idx + n, idx)


def index_type(node: Node, g: Graph, index: int) -> str:
    t = g.tensors[node.inputs[index]]
    require(t.dtype in INDEX_DTYPES, node, f"indices must be int32 or int64, not {t.dtype}")
    return t.dtype


class DataOp(OpDef):
    """An op whose output holds values of its data (input 0): the data's type and quantization."""

    integer_inputs = True
    output_qparams = "same"

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def qparams_rule(self, node: Node, g: Graph) -> str:
        return "calibrated" if g.tensors[node.inputs[0]].is_const else "same"

    def fixed_qparams(self, node: Node, g: Graph) -> QParams | None:
        """Constant float data (an embedding table): its own range (every output value is one of it)."""
        data = g.tensors[node.inputs[0]]
        return per_tensor(*const_qparams(data.data)) if data.is_const and data.data.dtype.kind == "f" else None

    def mixes_samples(self, node: Node, g: Graph) -> bool:
        return True  # indices may pick across a stacked sample axis: calibrate one sample at a time

    def data_arg(self, node: Node, g: Graph) -> Buf | Weight:
        """The data: the arena tensor, or the constant in the output's type (int8 codes when quantized)."""
        data, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
        if not data.is_const:
            return Buf(data.name, const=True)
        values = data.data
        if out.q is not None:
            values = quantize_float(values.astype(np.float32), *out.q.scalar())
        return Weight("data", np.asarray(values).astype(out.dtype), CTYPES[out.dtype])

    def index_arg(self, node: Node, g: Graph, index: int) -> Buf | Weight:
        t = g.tensors[node.inputs[index]]
        return Weight("indices", t.data, CTYPES[t.dtype]) if t.is_const else Buf(t.name, const=True)

    def int_data(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        """xs with constant float data quantized at the output's scale (the int8 reference)."""
        data, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
        if data.is_const and out.q is not None:
            return [quantize_float(data.data.astype(np.float32), *out.q.scalar()), *xs[1:]]
        return xs

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return self.run_float(node, g, self.int_data(node, g, xs))

    def variant(self, node: Node, g: Graph) -> str:
        return f"{VARIANTS[g.tensors[node.outputs[0]].dtype]}_{VARIANTS[index_type(node, g, 1)]}"


@register
class Gather(DataOp, Remap):
    op_type = "Gather"
    summary = "indices on any axis: constant ones as an index remap, run-time ones checked (an embedding lookup)"
    defaults = {"axis": 0}

    def runtime_indices(self, node: Node, g: Graph) -> bool:
        return not g.tensors[node.inputs[1]].is_const

    def axis(self, node: Node, g: Graph) -> int:
        shape = g.tensors[node.inputs[0]].shape
        return normalized_axis(node, self.attr(node, "axis"), len(shape))

    def indices(self, node: Node, g: Graph) -> tuple[int, np.ndarray]:
        shape = g.tensors[node.inputs[0]].shape
        axis = self.axis(node, g)
        idx = g.const(node.inputs[1])
        require(idx.dtype.kind in "iu", node, f"indices must be integers, not {idx.dtype}")
        try:
            return axis, checked_indices(node, idx, shape[axis])
        except IndexError as exc:
            require(False, node, str(exc).split(": ", 1)[1])

    def check(self, node: Node, g: Graph) -> None:
        if self.runtime_indices(node, g):
            index_type(node, g, 1)
            require(g.tensors[node.inputs[1]].size > 0, node, "empty outputs are not supported")
            return
        super().check(node, g)

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        shape = g.tensors[node.inputs[0]].shape
        axis, idx = self.indices(node, g)
        return [slice_tables(shape, {axis: idx.reshape(-1)})]

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape = g.tensors[node.inputs[0]].shape
        axis = self.axis(node, g)
        idx_shape = g.tensors[node.inputs[1]].shape if self.runtime_indices(node, g) else self.indices(node, g)[1].shape
        return [tuple(shape[:axis]) + tuple(idx_shape) + tuple(shape[axis + 1:])]

    def mixes_samples(self, node: Node, g: Graph) -> bool:
        return self.runtime_indices(node, g) or Remap.mixes_samples(self, node, g)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if not self.runtime_indices(node, g):
            return Remap.run_float(self, node, g, xs)
        data, idx = xs
        axis = self.axis(node, g)
        return [np.take(data, checked_indices(node, idx, data.shape[axis]), axis=axis)]

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if not self.runtime_indices(node, g):
            return Remap.run_int(self, node, g, self.int_data(node, g, xs))
        return self.run_float(node, g, self.int_data(node, g, xs))

    def lower(self, node: Node, g: Graph, precision: str):
        if not self.runtime_indices(node, g):
            return Remap.lower(self, node, g, precision)
        shape = g.tensors[node.inputs[0]].shape
        axis = self.axis(node, g)
        outer, n = int(np.prod(shape[:axis], dtype=np.int64)), shape[axis]
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        return call(f"gather_{self.variant(node, g)}", data=self.data_arg(node, g), indices=Buf(node.inputs[1], const=True),
                    out=Buf(node.outputs[0]), outer=outer, n=n, inner=inner, count=g.tensors[node.inputs[1]].size)


def padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (MAX_RANK - len(shape)) + tuple(shape)


class Elements(DataOp):
    """GatherElements / ScatterElements: indices of the data's rank, the axis replaced by them."""

    defaults = {"axis": 0}

    def axis(self, node: Node, g: Graph) -> int:
        return normalized_axis(node, int(self.attr(node, "axis")), len(g.tensors[node.inputs[0]].shape))

    def check(self, node: Node, g: Graph) -> None:
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        index_type(node, g, 1)
        require(len(data.shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")
        require(len(idx.shape) == len(data.shape), node, f"indices of rank {len(idx.shape)} for data of rank "
                                                         f"{len(data.shape)}")
        axis = self.axis(node, g)
        require(all(i <= d for k, (i, d) in enumerate(zip(idx.shape, data.shape)) if k != axis), node,
                f"indices {idx.shape} exceed the data {data.shape} outside axis {axis}")
        require(idx.size > 0, node, "empty indices are not supported")
        if idx.is_const:
            try:
                checked_indices(node, idx.data, data.shape[axis])
            except IndexError as exc:
                require(False, node, str(exc).split(": ", 1)[1])

    def geometry(self, node: Node, g: Graph) -> dict[str, int]:
        """d0..d3: the indices' dims, s0..s3: the data's element strides, axis and n, padded to 4-D."""
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        lead = MAX_RANK - len(data.shape)
        strides = [0] * lead + strides_of(data.shape)
        axis = self.axis(node, g)
        return {**{f"d{k}": d for k, d in enumerate(padded(idx.shape))},
                **{f"s{k}": s for k, s in enumerate(strides)}, "axis": axis + lead, "n": data.shape[axis]}

    def positions(self, node: Node, g: Graph, data_shape: tuple[int, ...], idx: np.ndarray) -> tuple:
        """The data index tuple of every index (its axis coordinate replaced by the index)."""
        axis = self.axis(node, g)
        grid = list(np.indices(idx.shape))
        grid[axis] = checked_indices(node, idx, data_shape[axis])
        return tuple(grid)


@register
class GatherElements(Elements):
    op_type = "GatherElements"
    summary = "out[i] = data[i with its axis coordinate from indices[i]] (up to 4-D), indices checked"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[1]].shape]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        data, idx = xs
        return [data[self.positions(node, g, data.shape, idx)]]

    def lower(self, node: Node, g: Graph, precision: str):
        return call(f"gather_elements_{self.variant(node, g)}", data=self.data_arg(node, g),
                    indices=self.index_arg(node, g, 1), out=Buf(node.outputs[0]), **self.geometry(node, g))


@register
class ScatterElements(Elements):
    op_type = "ScatterElements"
    summary = ("data with updates written at the indices' positions (reduction none, add, mul, max, min; up to "
               "4-D), indices checked before anything is written")
    int8_rule = "keeps the data's scale; constant updates quantized at it (reduction none only)"
    defaults = {"axis": 0, "reduction": "none"}

    def check(self, node: Node, g: Graph) -> None:
        super().check(node, g)
        require(len(node.inputs) == 3, node, "needs data, indices and updates")
        require(self.attr(node, "reduction") in REDUCTIONS, node,
                f"reduction '{self.attr(node, 'reduction')}' is not supported")
        require(g.tensors[node.inputs[2]].shape == g.tensors[node.inputs[1]].shape, node,
                "updates must have the indices' shape")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        data, idx, updates = xs
        out = np.array(data)
        where = self.positions(node, g, data.shape, idx)
        reduction = self.attr(node, "reduction")
        if reduction == "none":
            out[where] = updates
            return [out]
        apply = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
        with np.errstate(over="ignore"):
            for k in np.ndindex(idx.shape):  # in order: repeated positions accumulate
                at = tuple(w[k] for w in where)
                out[at] = apply(out[at], updates[k])
        return [out]

    def quantize(self, node: Node, g: Graph) -> None:
        updates = g.tensors[node.inputs[2]]
        require(self.attr(node, "reduction") == "none" and updates.is_const, node,
                "has an int8 rule only for reduction none with constant updates: build it with --precision fp32")
        node.q = {"updates": quantize_float(updates.data.astype(np.float32),
                                            *g.tensors[node.outputs[0]].q.scalar())}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        data, idx, _ = self.int_data(node, g, xs)
        return self.run_float(node, g, [data, idx, node.q["updates"]])

    def lower(self, node: Node, g: Graph, precision: str):
        out = g.tensors[node.outputs[0]]
        updates = g.tensors[node.inputs[2]]
        if "updates" in node.q:
            update_arg = Weight("updates", node.q["updates"], "int8_t")
        elif updates.is_const:
            update_arg = Weight("updates", updates.data.astype(out.dtype), CTYPES[out.dtype])
        else:
            update_arg = Buf(updates.name, const=True)
        return call(f"scatter_elements_{self.variant(node, g)}", data=self.data_arg(node, g),
                    indices=self.index_arg(node, g, 1), updates=update_arg, out=Buf(out.name),
                    **self.geometry(node, g), count=out.size, reduction=REDUCTIONS[self.attr(node, "reduction")])


@register
class GatherND(DataOp):
    op_type = "GatherND"
    summary = "slices of the data at index tuples (batch_dims), indices checked"
    defaults = {"batch_dims": 0}

    def parts(self, node: Node, g: Graph) -> tuple[int, int]:
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        b, k = int(self.attr(node, "batch_dims")), idx.shape[-1] if idx.shape else 0
        return b, k

    def check(self, node: Node, g: Graph) -> None:
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        index_type(node, g, 1)
        require(len(idx.shape) >= 1, node, "indices need at least one dimension")
        b, k = self.parts(node, g)
        require(0 <= b < min(len(data.shape), len(idx.shape)), node, f"batch_dims {b} is out of range")
        require(data.shape[:b] == idx.shape[:b], node, "data and indices differ on the batch dimensions")
        require(1 <= k <= len(data.shape) - b, node, f"index tuples of {k} for data of rank {len(data.shape)}")
        require(idx.size > 0, node, "empty indices are not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        b, k = self.parts(node, g)
        return [tuple(idx.shape[:-1]) + tuple(data.shape[b + k:])]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        data, idx = xs
        b, k = self.parts(node, g)
        batches = int(np.prod(data.shape[:b], dtype=np.int64))
        flat_data = data.reshape((batches,) + data.shape[b:])
        tuples = idx.reshape(batches, -1, k)
        picked = []
        for i in range(batches):
            coords = [checked_indices(node, tuples[i][:, j], data.shape[b + j]) for j in range(k)]
            picked.append(flat_data[i][tuple(coords)])
        return [np.stack(picked).reshape(self.infer(node, g)[0])]

    def lower(self, node: Node, g: Graph, precision: str):
        data, idx = (g.tensors[i] for i in node.inputs[:2])
        b, k = self.parts(node, g)
        batches = int(np.prod(data.shape[:b], dtype=np.int64))
        within = data.shape[b:]
        strides = strides_of(within)
        return call(f"gather_nd_{self.variant(node, g)}", data=self.data_arg(node, g),
                    indices=self.index_arg(node, g, 1), out=Buf(node.outputs[0]), batches=batches,
                    tuples=idx.size // (batches * k), k=k, inner=int(np.prod(within[k:], dtype=np.int64)),
                    batch_stride=int(np.prod(within, dtype=np.int64)),
                    dims=Weight("dims", np.array(within[:k], np.int32), "int32_t"),
                    strides=Weight("strides", np.array(strides[:k], np.int32), "int32_t"))


ONEHOT_INDEX_TYPES = {"float32": "f32", "int32": "s32", "int64": "s64"}


@register
class OneHot(OpDef):
    op_type = "OneHot"
    summary = "one-hot rows of constant depth and (off, on) values; an index out of range gives a row of off"
    int8_rule = "the output takes the range of the two values"
    defaults = {"axis": -1}
    integer_inputs = True

    def depth(self, node: Node, g: Graph) -> int:
        return int(np.asarray(const_input(g, node, 1, "depth")).reshape(-1)[0])

    def values(self, node: Node, g: Graph) -> np.ndarray:
        values = np.asarray(const_input(g, node, 2, "values")).reshape(-1)
        require(values.size == 2, node, "values must hold (off, on)")
        return values

    def axis(self, node: Node, g: Graph) -> int:
        rank = len(g.tensors[node.inputs[0]].shape) + 1
        return normalized_axis(node, int(self.attr(node, "axis")), rank)

    def check(self, node: Node, g: Graph) -> None:
        require(g.tensors[node.inputs[0]].dtype in ONEHOT_INDEX_TYPES, node,
                f"indices of type {g.tensors[node.inputs[0]].dtype} are not supported (float32, int32, int64)")
        require(self.depth(node, g) > 0, node, "depth must be positive")
        require(self.values(node, g).dtype.name in ("float32", "int8", "int32", "int64"), node,
                f"values of type {self.values(node, g).dtype} are not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape = list(g.tensors[node.inputs[0]].shape)
        shape.insert(self.axis(node, g), self.depth(node, g))
        return [tuple(shape)]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [self.values(node, g).dtype.name]

    def fixed_qparams(self, node: Node, g: Graph) -> QParams | None:
        values = self.values(node, g)
        return per_tensor(*const_qparams(values)) if values.dtype.kind == "f" else None

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.one_hot(node, g, xs[0], self.values(node, g))]

    def one_hot(self, node: Node, g: Graph, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        depth, axis = self.depth(node, g), self.axis(node, g)
        idx = np.trunc(np.nan_to_num(np.asarray(indices, np.float64), nan=-np.inf)) if indices.dtype.kind == "f" \
            else np.asarray(indices, np.int64)
        idx = np.where(idx < 0, idx + depth, idx)
        hot = np.expand_dims(idx, axis) == np.arange(depth).reshape([-1 if k == axis else 1
                                                                      for k in range(indices.ndim + 1)])
        return np.where(hot, values[1], values[0]).astype(values.dtype)

    def codes(self, node: Node, g: Graph) -> np.ndarray:
        """The (off, on) values as the output holds them (int8 codes when quantized)."""
        values, out = self.values(node, g), g.tensors[node.outputs[0]]
        return quantize_float(values.astype(np.float32), *out.q.scalar()) if out.q is not None else values

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.one_hot(node, g, xs[0], self.codes(node, g))]

    def lower(self, node: Node, g: Graph, precision: str):
        x, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
        axis = self.axis(node, g)
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        inner = int(np.prod(x.shape[axis:], dtype=np.int64))
        return call(f"onehot_{VARIANTS[out.dtype]}_{ONEHOT_INDEX_TYPES[x.dtype]}", indices=Buf(x.name, const=True),
                    out=Buf(out.name), values=Weight("values", self.codes(node, g).astype(out.dtype), CTYPES[out.dtype]),
                    outer=outer, depth=self.depth(node, g), inner=inner)
