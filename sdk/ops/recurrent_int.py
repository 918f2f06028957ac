"""The int8 rule of LSTM and GRU: int8 inputs and weights, 16-bit state, in the spirit of
TFLite's integer LSTM and CMSIS-NN's arm_lstm_unidirectional_s8 (our own arithmetic, the
same in numpy and in every C kernel, bit for bit).

Fixed points (Qm.n: int16 with n fraction bits):
- x: int8 at its calibrated (scale sx, zero point zx). W and R: int8, symmetric, one scale
  per gate row (sw[r], sr[r]).
- h: int16 Q0.15 (|h| < 1 always). c (LSTM): int16 Q(15-F).F, where F = 15 - ceil(log2(T +
  max|c0|)) for a sequence of T steps: |c_t| <= |c0| + t because |f|, |i|, |g| < 1, so the
  cell never saturates (max|c0|: what the int8 initial_c can represent).
- initial_h / initial_c: int8 (a computed one at its calibrated scale, a constant per
  tensor at its own, absent = zeros; computed ones may be int16 together, symmetric at their
  calibrated scale: --input-precision h=int16 c=int16), converted once to the state format:
      h = sat16(requant(h0 - zh, M, S)), M / 2^S ~= sh 2^15  (c: sc 2^F)
- Gate pre-activations: int16 Q3.12 (range [-8, 8)). For gate row r, int32 sums:
      ax = sum_i W[r, i] (x_i - zx)             ah = sum_j R[r, j] h_j
      gx = sat16(requant(ax, Mx[r], Sx[r]) + bx[r]),  Mx / 2^Sx ~= sx sw[r] 2^12,  bx = round(Wb 2^12)
      gh = sat16(requant(ah, Mh[r], Sh[r]) + bh[r]),  Mh / 2^Sh ~= sr[r] / 8,      bh = round(Rb 2^12)
  requant is the one rounding rule (sdk/kernels/requant.py); the biases join in Q3.12, so their
  size never depends on the weights' scales. Quantization refuses weights whose worst-case
  sums could leave int32 (255 sum|W[r]| or 32768 sum|R[r]|: over 516 hidden units).
- sigmoid and tanh: Q3.12 in, Q0.15 out, by a 513-entry int16 table of f at every
  128th code (step 1/32) with linear interpolation between entries:
      u = x + 32768; i = u >> 7; y = T[i] + (((T[i+1] - T[i]) * (u & 127) + 64) >> 7)
- rs(v, s) = (v + 2^(s-1)) >> s (arithmetic shift: the rounding of requant); sat16 clamps
  to [-32768, 32767].
LSTM step (gates i, o, f, g = sigmoid, sigmoid, sigmoid, tanh of sat16(gx + gh)):
      c = sat16(rs(f c, 15) + rs(i g, 30 - F));  h = rs(o tanh(c in Q3.12), 15)
  where c in Q3.12 is rs(c, F - 12) for F > 12, c for F = 12, sat16(c * 2^(12 - F)) below.
GRU step (z, r = sigmoid(sat16(gx + gh)) of their rows; n row: gx and the R sum of rh):
      linear_before_reset 0: rh = rs(r h, 15); n = tanh(sat16(gx + gh(rh)))
      linear_before_reset 1: n = tanh(sat16(gx + rs(r gh(h), 15)))
      h = rs((32768 - z) n + z h, 15)
Outputs: Y and Y_h = clamp8(zy + requant(h, M, S)) with M / 2^S ~= 2^-15 / sy, Y_c likewise
from c at 2^-F; each output has its own calibrated scale. With int16 states, Y_h and Y_c are
clamp16(requant(...)) at their symmetric int16 scales (kernel lstm_s8_s16state).
"""
from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, Weight
from ..kernels.requant import (RequantRangeError, clamp_int8, quantize_float, quantize_multiplier, quantize_multipliers,
                               requant)
from .activation import sigmoid
from .common import optional_input, qparams_of
from .conv import symmetric_per_channel
from .elementwise import const_qparams


class Recurrent(Protocol):
    """What the int8 rules read of an LSTM or GRU op (ops/recurrent.py's Recurrent, which
    imports this module): stated here so that this module need not import that one back."""

    outputs: int  # ONNX outputs (Y, Y_h[, Y_c])

    def attr(self, node: Node, key: str) -> Any: ...

    def shape(self, node: Node, g: Graph) -> Any: ...

    def state_shape(self, s: Any) -> tuple[int, int, int]: ...

    def weights(self, node: Node, g: Graph, d: int) -> dict[str, np.ndarray]: ...


GATE_BITS = 12  # gate pre-activations: Q3.12
STATE_BITS = 15  # h, sigmoid and tanh outputs: Q0.15
TABLE_STEP = 7  # one table entry every 2^7 codes
INT32_LIMIT = 2 ** 31
BIAS_LIMIT = 1 << 24  # a Q3.12 bias beyond +-4096 saturates its gate anyway; this keeps sums in int32


def activation_table(function) -> np.ndarray:
    codes = np.arange(0, 65536 + 1, 1 << TABLE_STEP, dtype=np.int64) - 32768
    values = np.round(function(codes / float(1 << GATE_BITS)) * (1 << STATE_BITS))
    return np.clip(values, -32768, 32767).astype(np.int16)


SIGMOID_TABLE = activation_table(sigmoid)
TANH_TABLE = activation_table(np.tanh)


def lookup(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, dtype=np.int64) + 32768
    i, frac = u >> TABLE_STEP, u & ((1 << TABLE_STEP) - 1)
    lo, hi = table[i].astype(np.int64), table[i + 1].astype(np.int64)  # i <= 511: the table has 513 entries
    return lo + (((hi - lo) * frac + (1 << (TABLE_STEP - 1))) >> TABLE_STEP)


def rs(v: np.ndarray, s: int) -> np.ndarray:
    return (np.asarray(v, dtype=np.int64) + (1 << (s - 1))) >> s


def sat16(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -32768, 32767).astype(np.int64)


def cell_to_gate(c: np.ndarray, cell_bits: int) -> np.ndarray:
    if cell_bits > GATE_BITS:
        return rs(c, cell_bits - GATE_BITS)
    return sat16(c * (1 << (GATE_BITS - cell_bits)))


def cell_bits_for(seq: int, c0_max: float) -> int:
    int_bits = max(0, math.ceil(math.log2(seq + c0_max)))
    if int_bits > STATE_BITS:
        raise RequantRangeError(f"the cell state can reach {seq + c0_max:.3g}, beyond the int16 cell state")
    return STATE_BITS - int_bits


def quantize_rows(w: np.ndarray, bias: np.ndarray, in_max: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int8 rows and their scales, the bias in Q3.12, and the check that the sums fit int32."""
    wq, scale = symmetric_per_channel(w, 0)
    if (in_max * np.abs(wq.astype(np.int64)).sum(axis=1)).max() >= INT32_LIMIT:
        raise RequantRangeError(f"the {what} sums of a gate can leave int32")
    bias_q = np.clip(np.round(bias * (1 << GATE_BITS)), -BIAS_LIMIT, BIAS_LIMIT).astype(np.int32)
    return wq, bias_q, scale.astype(np.float64)


def state_qparams(op: "Recurrent", node: Node, g: Graph, index: int) -> dict:
    """An initial state's int8 form: scale, zero point, the codes of a constant (zeros where
    absent, None where the model computes it) and the largest magnitude it can hold."""
    name = optional_input(node, index)
    if not name:
        return {"scale": 0.0, "zp": 0, "data": np.zeros(op.state_shape(op.shape(node, g)), np.int8), "max": 0.0}
    data = g.const(name)
    if data is None:
        scale, zp = qparams_of(g, name)
        codes = None
        wide = g.tensors[name].dtype == "int16"  # --input-precision NAME=int16: a state fed back in int16
        largest = scale * (32767 if wide else max(abs(-128 - zp), abs(127 - zp)))
    else:
        scale, zp = const_qparams(data)
        codes = quantize_float(data, scale, zp)
        largest = scale * float(np.abs(codes.astype(np.int64) - zp).max())
    return {"scale": scale, "zp": zp, "data": codes, "max": largest}


def with_multiplier(state: dict, bits: int) -> dict:
    mult, shift = quantize_multiplier(state["scale"] * 2.0 ** bits)
    return dict(state, mult=mult, shift=shift)


def quantize(op: "Recurrent", node: Node, g: Graph) -> None:
    s = op.shape(node, g)
    sx, zx = qparams_of(g, node.inputs[0])
    params = [op.weights(node, g, d) for d in range(s.dirs)]
    h0, c0 = state_qparams(op, node, g, 5), state_qparams(op, node, g, 6)
    cell_bits = cell_bits_for(s.seq, c0["max"])
    dirs = []
    for p in params:
        wq, bx, sw = quantize_rows(p["w"], p["wb"], 255, "input")
        rq, bh, sr = quantize_rows(p["r"], p["rb"], 32768, "recurrent")
        x_mult, x_shift = quantize_multipliers(sx * sw * (1 << GATE_BITS))
        h_mult, h_shift = quantize_multipliers(sr * 2.0 ** (GATE_BITS - STATE_BITS))
        dirs.append({"w": wq, "r": rq, "bx": bx, "bh": bh, "x_mult": x_mult, "x_shift": x_shift, "h_mult": h_mult,
                     "h_shift": h_shift})
    outs = []
    for i, name in enumerate(node.outputs[:op.outputs]):
        sy, zy = qparams_of(g, name)
        bits = cell_bits if i == 2 else STATE_BITS
        outs.append((*quantize_multiplier(2.0 ** -bits / sy), zy))
    # int16 states (--input-precision h=int16 c=int16): h0, c0, Y_h and Y_c in int16, Y in int8
    wide = [g.tensors[i].dtype == "int16" for i in node.inputs[5:7] if i]
    node.q = {"dirs": dirs, "out": outs, "zx": zx, "cell_bits": cell_bits, "wide_state": bool(wide) and all(wide),
              "out_wide": [bool(i) and g.tensors[name].dtype == "int16" for i, name in
                           enumerate(node.outputs[:op.outputs])],
              "states": {"h0": with_multiplier(h0, STATE_BITS), "c0": with_multiplier(c0, cell_bits)},
              "linear_before_reset": int(bool(op.attr(node, "linear_before_reset")))}


def requantize_out(v: np.ndarray, out: tuple[int, int, int], wide: bool = False) -> np.ndarray:
    """An output from its state format: int8, or int16 (a state output paired with an int16 input)."""
    mult, shift, zy = out
    if wide:
        return np.clip(requant(v, mult, shift) + zy, -32768, 32767).astype(np.int16)
    return clamp_int8(requant(v, mult, shift) + zy)


def gate_sums(qd: dict, x: np.ndarray, zx: int, rows: slice) -> np.ndarray:
    acc = (x.astype(np.int64) - zx) @ qd["w"][rows].T.astype(np.int64)
    return sat16(requant(acc, qd["x_mult"][rows], qd["x_shift"][rows]) + qd["bx"][rows])


def recurrent_sums(qd: dict, h: np.ndarray, rows: slice) -> np.ndarray:
    acc = h @ qd["r"][rows].T.astype(np.int64)
    return sat16(requant(acc, qd["h_mult"][rows], qd["h_shift"][rows]) + qd["bh"][rows])


def lstm_step(q: dict, qd: dict, x: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    every = slice(None)
    pre = sat16(gate_sums(qd, x, q["zx"], every) + recurrent_sums(qd, h, every))
    i, o, f, g = np.split(pre, 4, axis=1)
    i, o, f, g = lookup(SIGMOID_TABLE, i), lookup(SIGMOID_TABLE, o), lookup(SIGMOID_TABLE, f), lookup(TANH_TABLE, g)
    bits = q["cell_bits"]
    c = sat16(rs(f * c, STATE_BITS) + rs(i * g, 2 * STATE_BITS - bits))
    h = rs(o * lookup(TANH_TABLE, cell_to_gate(c, bits)), STATE_BITS)
    return h, c


def gru_step(q: dict, qd: dict, x: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hid = h.shape[1]
    zr_rows, n_rows = slice(0, 2 * hid), slice(2 * hid, 3 * hid)
    zr = lookup(SIGMOID_TABLE, sat16(gate_sums(qd, x, q["zx"], zr_rows) + recurrent_sums(qd, h, zr_rows)))
    z, r = zr[:, :hid], zr[:, hid:]
    gx = gate_sums(qd, x, q["zx"], n_rows)
    if q["linear_before_reset"]:
        n = lookup(TANH_TABLE, sat16(gx + rs(r * recurrent_sums(qd, h, n_rows), STATE_BITS)))
    else:
        n = lookup(TANH_TABLE, sat16(gx + recurrent_sums(qd, rs(r * h, STATE_BITS), n_rows)))
    return rs((32768 - z) * n + z * h, STATE_BITS), c


def initial_states(op: "Recurrent", node: Node, g: Graph, values: dict[str, np.ndarray]) -> list[np.ndarray]:
    """h0 (Q0.15) and c0 (Q(15-F).F) as int64 [dirs, batch, hidden]."""
    s = op.shape(node, g)
    out = []
    for index, key in ((5, "h0"), (6, "c0")):
        q = node.q["states"][key]
        codes = values[node.inputs[index]] if q["data"] is None else q["data"]
        state = sat16(requant(codes.astype(np.int64) - q["zp"], q["mult"], q["shift"]))
        out.append(state.reshape(op.state_shape(s)).transpose(1, 0, 2) if s.layout else
                   state.reshape(op.state_shape(s)))
    return out


def run_direction(node: Node, qd: dict, x: np.ndarray, h0: np.ndarray, c0: np.ndarray,
                  steps: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One direction over the sequence x [seq, batch, input] (int8) from the states h0, c0
    [batch, hidden]: per step h (Q0.15), and the last h and c, all int64."""
    step = lstm_step if node.op == "LSTM" else gru_step
    h, c = h0, c0
    y = np.zeros((x.shape[0],) + h.shape, dtype=np.int64)
    for t in steps:
        h, c = step(node.q, qd, x[t], h, c)
        y[t] = h
    return y, h, c


def kernel_args(node: Node, d: int) -> dict:
    q, qd = node.q, node.q["dirs"][d]
    args = {k: Weight(k, np.ascontiguousarray(qd[k]), "int8_t") for k in ("w", "r")}
    args.update({k: Weight(k, qd[k], "int32_t") for k in ("bx", "bh", "x_mult", "x_shift", "h_mult", "h_shift")})
    args.update(sig_table=Weight("sig", SIGMOID_TABLE, "int16_t"), tanh_table=Weight("tanh", TANH_TABLE, "int16_t"),
                zx=q["zx"])
    for index, key in ((5, "h0"), (6, "c0"))[:len(q["out"]) - 1]:
        state = q["states"][key]
        args[key] = Buf(node.inputs[index], const=True) if state["data"] is None else Weight(key, state["data"], "int8_t")
        args.update({f"{key}_zp": state["zp"], f"{key}_mult": state["mult"], f"{key}_shift": state["shift"]})
    for prefix, (mult, shift, zp) in zip(("y", "yh", "yc"), q["out"]):
        args.update({f"{prefix}_mult": mult, f"{prefix}_shift": shift, f"{prefix}_zp": zp})
    if node.op == "LSTM":
        args["cell_bits"] = q["cell_bits"]
    else:
        args["linear_before_reset"] = q["linear_before_reset"]
    return args
