"""LSTM and GRU (ONNX opset 7-22): forward, reverse and bidirectional, `layout` 0 (time major)
and 1 (batch major), initial states, GRU's linear_before_reset; outputs Y, Y_h (and Y_c).

What is supported: constant W, R, B; initial_h/initial_c computed by the model (streaming),
constant, or absent (zeros); sequence_lens absent or a constant equal to the sequence length
for every batch entry; the default activations (Sigmoid, Tanh, Tanh); no `clip`, no
input_forget, LSTM peepholes P absent or zero. Anything else is refused with one line naming
the node.

Gate order as ONNX stores it: LSTM i, o, f, c; GRU z, r, h.

    LSTM: i, o, f = sigmoid(W x + R h + Wb + Rb); g = tanh(...); c = f * c + i * g; h = o * tanh(c)
    GRU:  z, r = sigmoid(W x + R h + Wb + Rb)
          n = tanh(Wn x + Wbn + Rn (r * h) + Rbn)           (linear_before_reset = 0)
          n = tanh(Wn x + Wbn + r * (Rn h + Rbn))           (linear_before_reset = 1)
          h = (1 - z) * n + z * h

Float (profile standard): the reference runs in float64; the C kernels in float32.
The int8 rule (16-bit state) is in ops/recurrent_int.py.

In C, every direction is one kernel call over the whole sequence; the state lives in a
scratch tensor that the op adds to the node's outputs (`<node>_scratch`, planned in the arena
like any activation, so no kernel allocates): int8 builds keep h, c and the gates in int16
there, float builds in float. Outputs the model leaves out get a name too (the kernels always
write Y, Y_h and Y_c).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, KernelCall, Weight, call
from . import recurrent_int as qrnn
from .activation import sigmoid
from .common import optional_input, require
from .registry import OpDef, register

def named_inputs(node: Node, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The node's input values by name (the interpreter passes the present inputs only)."""
    return dict(zip([name for name in node.inputs if name], xs))


def unused_name(g: Graph, name: str) -> str:
    return g.fresh_name(name) if name in g.tensors else name


DEFAULT_ACTIVATIONS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"]}


@dataclass(frozen=True)
class Shape:
    seq: int
    batch: int
    input: int
    hidden: int
    dirs: int
    layout: int


class Recurrent(OpDef):
    gates = 0  # gate rows per hidden unit
    outputs = 0  # ONNX outputs (Y, Y_h[, Y_c])
    defaults = {"direction": "forward", "layout": 0, "linear_before_reset": 0, "input_forget": 0}

    # --- support and shapes ---------------------------------------------------------------
    def check(self, node: Node, g: Graph) -> None:
        require(len(node.inputs) >= 3, node, "needs X, W and R")
        for index, what in ((1, "W"), (2, "R")):
            require(g.const(node.inputs[index]) is not None, node, f"{what} must be a constant initializer")
        for index, what in ((3, "B"), (7, "P")):
            if optional_input(node, index):
                require(g.const(node.inputs[index]) is not None, node, f"{what} must be a constant (or absent)")
        direction = self.attr(node, "direction")
        require(direction in ("forward", "reverse", "bidirectional"), node, f"unknown direction '{direction}'")
        require(self.attr(node, "layout") in (0, 1), node, "layout must be 0 or 1")
        require(node.attrs.get("clip") is None, node, "the clip attribute is not supported")
        require(not self.attr(node, "input_forget"), node, "input_forget=1 is not supported")
        acts = [a.lower() for a in node.attrs.get("activations", [])]
        require(not acts or acts == DEFAULT_ACTIVATIONS[node.op] * (len(acts) // len(DEFAULT_ACTIVATIONS[node.op])),
                node, f"only the default activations ({', '.join(DEFAULT_ACTIVATIONS[node.op])}) are supported")
        if optional_input(node, 7):
            require(not np.any(g.const(node.inputs[7])), node, "peephole weights P are not supported")
        s = self.shape(node, g)
        w, r = g.const(node.inputs[1]), g.const(node.inputs[2])
        require(w.shape == (s.dirs, self.gates * s.hidden, s.input), node,
                f"W must be [{s.dirs}, {self.gates * s.hidden}, {s.input}], not {list(w.shape)}")
        require(r.shape == (s.dirs, self.gates * s.hidden, s.hidden), node,
                f"R must be [{s.dirs}, {self.gates * s.hidden}, {s.hidden}], not {list(r.shape)}")
        if optional_input(node, 3):
            b = g.const(node.inputs[3])
            require(b.shape == (s.dirs, 2 * self.gates * s.hidden), node,
                    f"B must be [{s.dirs}, {2 * self.gates * s.hidden}], not {list(b.shape)}")
        if optional_input(node, 4):
            lens = g.const(node.inputs[4])
            require(lens is not None and np.all(lens == s.seq), node,
                    "sequence_lens must be absent or a constant equal to the sequence length")
        for index, what in ((5, "initial_h"), (6, "initial_c"))[:self.outputs - 1]:
            name = optional_input(node, index)
            shape = tuple(g.tensors[name].shape) if name else self.state_shape(s)
            require(shape == self.state_shape(s), node, f"{what} must be {list(self.state_shape(s))}, not {list(shape)}")
        self.name_every_output(node, g)

    def name_every_output(self, node: Node, g: Graph) -> None:
        """The outputs the model leaves out, then the scratch tensor, get names of their own
        (once: the frontend checks each node once)."""
        names = list(node.outputs[:self.outputs]) + [""] * (self.outputs - len(node.outputs[:self.outputs]))
        tags = ["Y", "Y_h", "Y_c"]
        node.outputs = [n or unused_name(g, f"{node.name}_{tags[i]}") for i, n in enumerate(names)]
        node.outputs.append(unused_name(g, f"{node.name}_scratch"))

    def shape(self, node: Node, g: Graph) -> Shape:
        x = g.tensors[node.inputs[0]].shape
        require(len(x) == 3, node, "X must be 3-D")
        layout = self.attr(node, "layout")
        seq, batch = (x[1], x[0]) if layout == 1 else (x[0], x[1])
        hidden = int(node.attrs.get("hidden_size", g.const(node.inputs[2]).shape[-1]))
        dirs = 2 if self.attr(node, "direction") == "bidirectional" else 1
        return Shape(seq, batch, x[2], hidden, dirs, layout)

    def scratch_size(self, s: Shape) -> int:
        raise NotImplementedError

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        s = self.shape(node, g)
        y = (s.batch, s.seq, s.dirs, s.hidden) if s.layout else (s.seq, s.dirs, s.batch, s.hidden)
        return [y] + [self.state_shape(s)] * (self.outputs - 1) + [(self.scratch_size(s),)]

    def macs(self, node: Node, g: Graph) -> int:
        s = self.shape(node, g)
        return s.seq * s.batch * s.dirs * self.gates * s.hidden * (s.input + s.hidden)

    # --- float reference ------------------------------------------------------------------
    def weights(self, node: Node, g: Graph, d: int) -> dict[str, np.ndarray]:
        """Direction d's W, R, Wb, Rb in float64."""
        s = self.shape(node, g)
        gh = self.gates * s.hidden
        bias = g.const(node.inputs[3]) if optional_input(node, 3) else np.zeros((s.dirs, 2 * gh))
        out = {"w": g.const(node.inputs[1])[d], "r": g.const(node.inputs[2])[d], "wb": bias[d][:gh], "rb": bias[d][gh:]}
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}

    def state_shape(self, s: Shape) -> tuple[int, int, int]:
        """initial_h / initial_c (and Y_h / Y_c) in the ONNX layout."""
        return (s.batch, s.dirs, s.hidden) if s.layout else (s.dirs, s.batch, s.hidden)

    def initial_state(self, node: Node, g: Graph, index: int, values: dict[str, np.ndarray]) -> np.ndarray:
        """Input `index` (5: initial_h, 6: initial_c) as [dirs, batch, hidden]: a constant, the
        value the model computed, or zeros where absent."""
        s, name = self.shape(node, g), optional_input(node, index)
        if not name:
            return np.zeros((s.dirs, s.batch, s.hidden))
        data = g.const(name)
        state = np.asarray(values[name] if data is None else data).reshape(self.state_shape(s))
        return state.transpose(1, 0, 2) if s.layout else state

    def step_float(self, node: Node, p: dict, x: np.ndarray, h: np.ndarray,
                   c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        s = self.shape(node, g)
        x = xs[0].astype(np.float64)
        x = x.transpose(1, 0, 2) if s.layout else x  # [seq, batch, input]
        values = named_inputs(node, xs)
        h0, c0 = (self.initial_state(node, g, index, values).astype(np.float64) for index in (5, 6))
        ys, hs, cs = [], [], []
        for d in range(s.dirs):
            p = self.weights(node, g, d)
            h, c = h0[d], c0[d]
            y = np.zeros((s.seq, s.batch, s.hidden))
            for t in self.time_steps(node, s, d):
                h, c = self.step_float(node, p, x[t], h, c)
                y[t] = h
            ys.append(y), hs.append(h), cs.append(c)
        return self.pack(s, ys, hs, cs, np.float32) + [np.zeros(self.scratch_size(s), np.float32)]

    def time_steps(self, node: Node, s: Shape, d: int) -> range:
        reverse = self.attr(node, "direction") == "reverse" or d == 1
        return range(s.seq - 1, -1, -1) if reverse else range(s.seq)

    def pack(self, s: Shape, ys: list[np.ndarray], hs: list[np.ndarray], cs: list[np.ndarray],
             dtype: type) -> list[np.ndarray]:
        """Per-direction [seq, batch, hidden] outputs and [batch, hidden] states in the ONNX layout."""
        y = np.stack(ys, axis=1)  # [seq, dirs, batch, hidden]
        states = [np.stack(hs), np.stack(cs)][:self.outputs - 1]  # [dirs, batch, hidden]
        if s.layout:
            y = y.transpose(2, 0, 1, 3)
            states = [v.transpose(1, 0, 2) for v in states]
        return [np.ascontiguousarray(v).astype(dtype) for v in [y] + states]

    # --- int8 (recurrent_int.py) ----------------------------------------------------------
    def quantize(self, node: Node, g: Graph) -> None:
        qrnn.quantize(self, node, g)

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        s = self.shape(node, g)
        x = xs[0].transpose(1, 0, 2) if s.layout else xs[0]
        h0, c0 = qrnn.initial_states(self, node, g, named_inputs(node, xs))
        ys, hs, cs = [], [], []
        for d in range(s.dirs):
            y, h, c = qrnn.run_direction(node, node.q["dirs"][d], x, h0[d], c0[d], list(self.time_steps(node, s, d)))
            ys.append(y), hs.append(h), cs.append(c)
        outs = self.pack(s, ys, hs, cs, np.int64)
        wide = node.q.get("out_wide", [])
        return [qrnn.requantize_out(v, node.q["out"][i], i < len(wide) and wide[i]) for i, v in enumerate(outs)] + [
            np.zeros(self.scratch_size(s), np.int8)]

    # --- lowering ---------------------------------------------------------------------------
    def strides(self, node: Node, s: Shape, d: int) -> dict[str, int]:
        """Element strides of X (t, b), of Y (t, b) for direction d, of Y_h/Y_c (b)."""
        if s.layout:
            return {"xst": s.input, "xsb": s.seq * s.input, "yoff": d * s.hidden, "yst": s.dirs * s.hidden,
                    "ysb": s.seq * s.dirs * s.hidden, "hoff": d * s.hidden, "hsb": s.dirs * s.hidden}
        return {"xst": s.batch * s.input, "xsb": s.input, "yoff": d * s.batch * s.hidden,
                "yst": s.dirs * s.batch * s.hidden, "ysb": s.hidden, "hoff": d * s.batch * s.hidden, "hsb": s.hidden}

    def lower(self, node: Node, g: Graph, precision: str) -> KernelCall | list[KernelCall]:
        s = self.shape(node, g)
        calls = []
        for d in range(s.dirs):
            io = {"in_": Buf(node.inputs[0], const=True), "scratch": Buf(node.outputs[-1])}
            io.update({k: Buf(n) for k, n in zip(("y", "yh", "yc"), node.outputs[:self.outputs])})
            geo = dict(self.strides(node, s, d), seq=s.seq, batch=s.batch, input=s.input, hidden=s.hidden,
                       reverse=int(self.time_steps(node, s, d).step < 0))
            if precision == "int8":
                kernel = f"{node.op.lower()}_s8" + ("_s16state" if node.q.get("wide_state") else "")
                calls.append(call(kernel, **io, **geo, **qrnn.kernel_args(node, d)))
            else:
                calls.append(call(f"{node.op.lower()}_f32", **io, **geo, **self.float_args(node, g, d)))
        return calls

    def float_args(self, node: Node, g: Graph, d: int) -> dict:
        p = self.weights(node, g, d)
        args = {k: Weight(k, np.ascontiguousarray(v, dtype=np.float32), "float") for k, v in p.items()}
        s = self.shape(node, g)
        for index, key in self.state_inputs():
            name = optional_input(node, index)
            if name and g.const(name) is None:
                args[key] = Buf(name, const=True)
            else:  # read at the direction's offset like Y_h: the whole array, in the ONNX layout
                state = g.const(name) if name else np.zeros(self.state_shape(s))
                args[key] = Weight(key, np.ascontiguousarray(state, dtype=np.float32), "float")
        return args | self.extra_float_args(node)

    def mixes_samples(self, node: Node, g: Graph) -> bool:
        return True  # axis 0 is time (layout 0): one sample's steps feed the next

    def state_inputs(self) -> tuple[tuple[int, str], ...]:
        return ((5, "h0"), (6, "c0"))[:self.outputs - 1]

    def extra_float_args(self, node: Node) -> dict:
        return {}


@register
class LSTM(Recurrent):
    op_type = "LSTM"
    summary = ("forward, reverse, bidirectional; layout 0/1; constant W, R, B; initial states constant or computed; "
               "sequence_lens absent or full; default activations; no peepholes, clip, input_forget")
    int8_rule = ("int8 x, W, R, initial states; int16 state (h Q0.15, c Q(15-F).F); gates Q3.12 through "
                 "interpolated sigmoid/tanh tables; Y, Y_h, Y_c requantized")
    gates = 4
    outputs = 3

    def scratch_size(self, s: Shape) -> int:
        return 12 * s.batch * s.hidden  # int8: h, c, 4 gates in int16; float: as many floats (6 needed)

    def step_float(self, node: Node, p: dict, x: np.ndarray, h: np.ndarray,
                   c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = x @ p["w"].T + h @ p["r"].T + p["wb"] + p["rb"]
        i, o, f, gc = np.split(z, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gc)
        return sigmoid(o) * np.tanh(c), c


@register
class GRU(Recurrent):
    op_type = "GRU"
    summary = ("forward, reverse, bidirectional; layout 0/1; linear_before_reset; constant W, R, B; initial_h "
               "constant or computed; sequence_lens absent or full; default activations; no clip")
    int8_rule = ("int8 x, W, R, initial_h; int16 state (h Q0.15); gates Q3.12 through interpolated sigmoid/tanh "
                 "tables; Y, Y_h requantized")
    gates = 3
    outputs = 2

    def scratch_size(self, s: Shape) -> int:
        return 10 * s.batch * s.hidden  # int8: h, 3 gates and r*h in int16; float: as many floats (5 needed)

    def step_float(self, node: Node, p: dict, x: np.ndarray, h: np.ndarray,
                   c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hid = h.shape[1]
        gx = x @ p["w"].T + p["wb"]
        rw, rb = p["r"], p["rb"]
        zr = sigmoid(gx[:, :2 * hid] + h @ rw[:2 * hid].T + rb[:2 * hid])
        z, r = zr[:, :hid], zr[:, hid:]
        if self.attr(node, "linear_before_reset"):
            n = np.tanh(gx[:, 2 * hid:] + r * (h @ rw[2 * hid:].T + rb[2 * hid:]))
        else:
            n = np.tanh(gx[:, 2 * hid:] + (r * h) @ rw[2 * hid:].T + rb[2 * hid:])
        return (1 - z) * n + z * h, c

    def extra_float_args(self, node: Node) -> dict[str, int]:
        return {"linear_before_reset": int(bool(self.attr(node, "linear_before_reset")))}
