"""Generate tests/fixtures/vad/: a Silero-like voice-activity model and a 100-chunk signal (issue 39).

The model (opset 17, written with onnx.helper; no training, no PyTorch):
    audio [1, 512] (a raw 16 kHz waveform chunk in [-1, 1])
      -> Reshape [1, 1, 512] -> Conv1d 8 x 64, stride 32 (windowed cosines and sines at 500, 1000,
         1500 and 2000 Hz: a tiny filter bank) -> Relu -> Transpose [15, 1, 8]
      -> LSTM, 32 hidden units, initial_h = h [1, 1, 32], initial_c = c [1, 1, 32]
      -> hn [1, 1, 32], cn [1, 1, 32] (the state to feed back with the next chunk)
      -> Reshape [1, 32] -> Gemm 32 -> 1 -> Sigmoid -> prob [1, 1] (the speech probability).
The weights are chosen, not trained: the LSTM integrates the filter bank's energy (input gates
and cell inputs open with energy, forget gates from 0.6 to 0.97, so units of several time
constants), and the head says speech when the mean cell output is high. On the signal below
(harmonic bursts with pitch and amplitude envelopes, between noise and silence, and quiet
bursts under 0.004 in amplitude) its decisions follow the bursts.

    .venv/bin/python scripts/make_fixture_vad.py
writes vad.onnx and signal.npz (audio [100, 1, 512] float32, the chunks in order; speech [100],
1 where a burst is) and prints the float model's decisions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vad"
RATE, CHUNK, CHUNKS, HIDDEN = 16000, 512, 100, 32
KERNEL, STRIDE = 64, 32
FREQUENCIES = (500.0, 1000.0, 1500.0, 2000.0)


def filter_bank() -> np.ndarray:
    """[8, 1, 64]: a Hann-windowed cosine and sine per frequency, each of unit gain at it."""
    t = np.arange(KERNEL) / RATE
    window = np.hanning(KERNEL)
    rows = []
    for f in FREQUENCIES:
        for wave in (np.cos, np.sin):
            rows.append(window * wave(2 * np.pi * f * t) / (window.sum() / 2))
    return np.array(rows, dtype=np.float32)[:, None, :]


def lstm_weights(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W [1, 128, 8], R [1, 128, 32], B [1, 256], gates in ONNX's order i, o, f, c."""
    energy = rng.uniform(2000.0, 6000.0, (HIDDEN, 8))  # each unit hears every band, some more: a 1e-4 burst opens it
    w_i, w_o, w_f, w_c = energy, np.zeros((HIDDEN, 8)), np.zeros((HIDDEN, 8)), energy * 1.5
    r = rng.normal(0, 0.05, (4 * HIDDEN, HIDDEN))  # a little cross-talk between units
    b_i = np.full(HIDDEN, -1.0)
    b_o = np.full(HIDDEN, 2.0)
    b_f = np.log(1 / (1 - rng.uniform(0.6, 0.97, HIDDEN)) - 1)  # sigmoid(b_f): each unit's memory
    b_c = np.full(HIDDEN, -0.5)  # silence pulls the cell negative
    w = np.concatenate([w_i, w_o, w_f, w_c])[None].astype(np.float32)
    bias = np.concatenate([b_i, b_o, b_f, b_c, np.zeros(4 * HIDDEN)])[None].astype(np.float32)
    return w, r[None].astype(np.float32), bias


def model(rng: np.random.Generator) -> onnx.ModelProto:
    w, r, b = lstm_weights(rng)
    head = np.full((1, HIDDEN), 6.0 / HIDDEN, dtype=np.float32)
    inits = [numpy_helper.from_array(np.array([1, 1, CHUNK], np.int64), "chunk_shape"),
             numpy_helper.from_array(filter_bank(), "bank"),
             numpy_helper.from_array(np.zeros(8, np.float32), "bank_bias"),
             numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(np.array([1, HIDDEN], np.int64), "h_shape"),
             numpy_helper.from_array(head, "head"), numpy_helper.from_array(np.array([-1.5], np.float32), "head_bias")]
    nodes = [helper.make_node("Reshape", ["audio", "chunk_shape"], ["wave"], name="reshape_audio"),
             helper.make_node("Conv", ["wave", "bank", "bank_bias"], ["bands"], name="filter_bank",
                              kernel_shape=[KERNEL], strides=[STRIDE]),
             helper.make_node("Relu", ["bands"], ["energy"], name="rectify"),
             helper.make_node("Transpose", ["energy"], ["frames"], name="time_major", perm=[2, 0, 1]),
             helper.make_node("LSTM", ["frames", "W", "R", "B", "", "h", "c"], ["", "hn", "cn"], name="lstm",
                              hidden_size=HIDDEN),
             helper.make_node("Reshape", ["hn", "h_shape"], ["h_flat"], name="flatten_h"),
             helper.make_node("Gemm", ["h_flat", "head", "head_bias"], ["logit"], name="head", transB=1),
             helper.make_node("Sigmoid", ["logit"], ["prob"], name="probability")]
    state = [1, 1, HIDDEN]
    graph = helper.make_graph(
        nodes, "vad",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, CHUNK]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, state)],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("hn", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("cn", TensorProto.FLOAT, state)],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_fixture_vad.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def burst(rng: np.random.Generator, n: int, amplitude: float) -> np.ndarray:
    """A voiced burst of n samples: harmonics of a gliding pitch under a syllable envelope."""
    t = np.arange(n) / RATE
    f0 = rng.uniform(110, 230) * (1 + 0.1 * np.sin(2 * np.pi * rng.uniform(2, 5) * t))
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = 0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(3, 6) * t) ** 2
    edge = np.minimum(1, np.minimum(np.arange(n), np.arange(n)[::-1]) / 800)
    return amplitude * voice / np.abs(voice).max() * syllables * edge


def signal(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """100 chunks: noise and silence, loud and soft bursts, and two quiet bursts (peak 0.0035)."""
    plan = [("noise", 8), ("speech", 14, 0.5), ("noise", 10), ("speech", 9, 0.15), ("silence", 6),
            ("speech", 12, 0.0035), ("noise", 9), ("speech", 16, 0.8), ("silence", 7), ("speech", 9, 0.0035)]
    pieces, labels = [], []
    for kind, chunks, *amp in plan:
        n = chunks * CHUNK
        if kind == "speech":
            pieces.append(burst(rng, n, amp[0]) + rng.normal(0, 1e-5, n))
        else:
            pieces.append(rng.normal(0, 3e-5 if kind == "noise" else 1e-5, n))
        labels += [int(kind == "speech")] * chunks
    audio = np.concatenate(pieces).astype(np.float32)
    assert len(audio) == CHUNKS * CHUNK
    return audio.reshape(CHUNKS, 1, CHUNK), np.array(labels, dtype=np.int64)


def main() -> None:
    rng = np.random.default_rng(39)
    m = model(rng)
    audio, speech = signal(rng)
    OUT.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(OUT / "vad.onnx"))
    np.savez(OUT / "signal.npz", audio=audio, speech=speech)
    import onnxruntime as ort
    s = ort.InferenceSession(str(OUT / "vad.onnx"))
    h = c = np.zeros((1, 1, HIDDEN), np.float32)
    probs = []
    for x in audio:
        p, h, c = s.run(None, {"audio": x, "h": h, "c": c})
        probs.append(float(p[0, 0]))
    decided = (np.array(probs) > 0.5).astype(int)
    print("decisions:", "".join(map(str, decided)))
    print("speech:   ", "".join(map(str, speech)))
    print(f"agreement with the bursts: {(decided == speech).mean():.2f}")


if __name__ == "__main__":
    main()
