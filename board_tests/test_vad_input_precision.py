"""--input-precision on a built library (issue 39): the Silero-like voice-activity fixture
(tests/fixtures/vad, scripts/make_fixture_vad.py) built for host with its audio and its LSTM
state in float, run chunk after chunk with the returned h and c fed back: through the Python
runtime over the whole 100-chunk signal, and through `cuvil-sdk run`'s outputs file for a few
chunks (the file's state arrays, unchanged, are the next run's state inputs)."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import cuvil_sdk
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.reference.interpreter import run_quantized_model
from cuvil_sdk.request import new_request

from models import cli

VAD = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vad"
STATE = (1, 1, 32)
FLOAT_INPUTS = ["audio=float", "h=float", "c=float"]


def float_sequence(audio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX Runtime over the chunks, its state fed back: (probabilities, h and c before each chunk)."""
    import onnxruntime as ort
    session = ort.InferenceSession(str(VAD / "vad.onnx"))
    h = c = np.zeros(STATE, np.float32)
    probs, hs, cs = [], [], []
    for x in audio:
        hs.append(h)
        cs.append(c)
        p, h, c = session.run(None, {"audio": x, "h": h, "c": c})
        probs.append(float(p.ravel()[0]))
    return np.array(probs), np.array(hs), np.array(cs)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("vad")
    audio = np.load(VAD / "signal.npz")["audio"]
    probs, hs, cs = float_sequence(audio)
    np.savez(work / "calib.npz", audio=audio, h=hs, c=cs)
    with contextlib.redirect_stderr(io.StringIO()):
        build = cuvil_sdk.build(VAD / "vad.onnx", board="host", profile="standard", calib=str(work / "calib.npz"),
                                input_precision=FLOAT_INPUTS, out_dir=work / "host")
    req = new_request(VAD / "vad.onnx", board="host", profile="standard", calib=str(work / "calib.npz"),
                      input_precision=FLOAT_INPUTS)
    g = frontend_and_passes(req)
    with contextlib.redirect_stderr(io.StringIO()):
        quantize(g, req)
    return {"work": work, "build": build, "audio": audio, "probs": probs, "graph": g}


def test_manifest_takes_float_audio_and_state(built):
    info = built["build"].info
    kinds = {t["name"]: (t["dtype"], t["scale"]) for t in info["inputs"] + info["outputs"]}
    assert kinds["audio"] == kinds["h"] == kinds["c"] == kinds["hn"] == kinds["cn"] == ("float32", None)
    assert kinds["prob"][0] == "int8"


def test_runtime_100_chunks_state_fed_back_within_one_percent_of_float(built):
    """Decisions within 1% of ONNX Runtime's over the sequence; every chunk's state within float
    rounding of the numpy reference's, and the probability within one int8 step of it."""
    g, h, c = built["graph"], np.zeros(STATE, np.float32), np.zeros(STATE, np.float32)
    probs = []
    with built["build"].load() as model:
        for x in built["audio"]:
            want = run_quantized_model(g, {"audio": x, "h": h, "c": c})[1]
            out = model({"audio": x, "h": h, "c": c})
            assert out["hn"].shape == STATE and out["hn"].dtype == np.float32
            np.testing.assert_allclose(out["cn"], want["cn"], atol=2e-4)
            assert abs(float(out["prob"].ravel()[0]) - float(want["prob"].ravel()[0])) <= 0.0039
            h, c = out["hn"], out["cn"]  # fed back unchanged
            probs.append(float(out["prob"].ravel()[0]))
    probs = np.array(probs)
    assert ((probs > 0.5) == (built["probs"] > 0.5)).mean() >= 0.99
    # the quiet bursts (peak under 0.004) are heard: decided speech as the float model decides
    quiet = [i for i, x in enumerate(built["audio"]) if 0.001 < np.abs(x).max() < 0.004]
    assert quiet and np.array_equal(probs[quiet] > 0.5, built["probs"][quiet] > 0.5)


def test_cli_run_state_fed_back_through_the_outputs_file(built):
    """`cuvil-sdk run` three times, each taking the state arrays of the previous outputs file as
    they are: the same values as the runtime's chunk after chunk."""
    work = built["work"]
    state = {"h": np.zeros((1, *STATE), np.float32), "c": np.zeros((1, *STATE), np.float32)}
    with built["build"].load() as model:
        h, c = np.zeros(STATE, np.float32), np.zeros(STATE, np.float32)
        for i in range(3):
            x = built["audio"][10 + i]  # (1, 512): the input's own shape
            np.savez(work / f"in{i}.npz", audio=x, **state)
            r = cli("run", "--board", "host", "--profile", "standard", "--model", VAD / "vad.onnx", "--calib",
                    work / "calib.npz", *sum((["--input-precision", p] for p in FLOAT_INPUTS), []),
                    "--input", work / f"in{i}.npz", "--output", work / f"out{i}.npz", "--json", cwd=work)
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout)["samples"] == 1
            out = dict(np.load(work / f"out{i}.npz"))
            assert out["hn"].shape == (1, *STATE) and out["prob"].shape == (1, 1, 1)  # (N, *shape)
            want = model({"audio": x, "h": h, "c": c})
            np.testing.assert_array_equal(out["hn"][0], want["hn"])
            np.testing.assert_array_equal(out["cn"][0], want["cn"])
            h, c = want["hn"], want["cn"]
            state = {"h": out["hn"], "c": out["cn"]}  # unchanged: (1, 1, 1, 32) is one sample of (1, 1, 32)


@pytest.mark.parametrize("board", ["host", "cortex-m7", "rpi5"])
def test_lite_int16_audio_and_state_bit_exact_with_the_reference(built, board):
    """lite (int8 only): audio, h and c in int16 on the library (host) and the firmware under
    QEMU (cortex-m7) and qemu-aarch64 (rpi5): the manifest declares the int16 inputs and state outputs, run()
    quantizes float audio and state to int16 and returns hn, cn dequantized from int16, and 20
    chunks (loud, soft and quiet), each with the state the reference carries into it, give the
    numpy reference's outputs bit for bit."""
    work = built["work"]
    opts = {"board": board, "profile": "lite", "calib": str(work / "calib.npz"),
            "input_precision": ["audio=int16", "h=int16", "c=int16"]}
    with contextlib.redirect_stderr(io.StringIO()):
        build = cuvil_sdk.build(VAD / "vad.onnx", out_dir=work / f"lite-{board}", **opts)
    kinds = {t["name"]: (t["dtype"], t["zero_point"]) for t in build.info["inputs"] + build.info["outputs"]}
    assert all(kinds[n] == ("int16", 0) for n in ("audio", "h", "c", "hn", "cn")) and kinds["prob"][0] == "int8"
    req = new_request(VAD / "vad.onnx", **opts)
    g = frontend_and_passes(req)
    with contextlib.redirect_stderr(io.StringIO()):
        quantize(g, req)
    h, c, feeds, want = np.zeros(STATE, np.float32), np.zeros(STATE, np.float32), [], []
    for x in built["audio"][:60]:  # the reference's own sequence: nonzero int16 states
        out = run_quantized_model(g, {"audio": x, "h": h, "c": c})[1]
        feeds.append((x, h, c))
        want.append(out)
        h, c = out["hn"], out["cn"]
    chosen = list(range(40, 60))
    got = build.run({k: np.stack([feeds[i][j] for i in chosen]) for j, k in enumerate(("audio", "h", "c"))})
    for name in ("prob", "hn", "cn"):
        expected = np.stack([want[i][name] for i in chosen])
        assert got[name].shape == expected.shape and np.array_equal(got[name], expected), name
