"""Models with LSTM, GRU and MatMul of two activations, as PyTorch exports them
(tests/fixtures/seq/, made by scripts/make_fixtures_seq.py): an LSTM keyword spotter (a
strided convolution along time, LSTM, the last hidden state to 12 classes), a bidirectional
batch_first GRU tagger and a self-attention block (Q @ K^T, softmax, @ V).

Built through the real CLI for host in fp32 and int8, compared with ONNX Runtime; the int8
output bit for bit equal to the numpy integer reference of the same compilation; the keyword
spotter as Cortex-M7 firmware under QEMU bit for bit equal to host int8, and for jetson with
its LSTM on the GPU (the CUDA kernels' arithmetic: test_jetson.py's emulated kernel grid)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk import cuda_tools
from cuvil_sdk.reference import run_quantized_model

from models import cli, cli_run, cosine, ort_outputs, reference_graph, request

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "seq"
SHAPES = {"kws_lstm.onnx": (10, 49, 1), "bigru_tagger.onnx": (12, 8), "tiny_attention.onnx": (6, 16)}
# the portable kernel of the model's new op, which the host's avx2 set does not take
PORTABLE = {"kws_lstm.onnx": ("LSTM", "lstm_s8"), "bigru_tagger.onnx": ("GRU", "gru_s8"),
            "tiny_attention.onnx": ("MatMul", "matmul_s8")}
SAMPLES = 6
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seq-models")
    rng = np.random.default_rng(3)
    for model, shape in SHAPES.items():
        np.save(tmp / f"{model}_calib.npy", rng.standard_normal((16, *shape)).astype(np.float32))
        np.save(tmp / f"{model}_x.npy", rng.standard_normal((SAMPLES, *shape)).astype(np.float32))
    return tmp


def reference_int8(model: str, board: str, profile: str, calib: Path, x: np.ndarray) -> np.ndarray:
    g = reference_graph(request(FIXTURES / model, board, profile, calib))
    return np.stack([run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])


@pytest.mark.parametrize("model", list(SHAPES))
def test_host_fp32_matches_onnxruntime(work, model):
    x = np.load(work / f"{model}_x.npy")
    outs, report = cli_run(work, "host", "standard", FIXTURES / model, x, None, "--precision", "fp32")
    err = float(np.abs(outs["y"] - ort_outputs(FIXTURES / model, x)).max())
    assert err <= 1e-4, err


@pytest.mark.parametrize("model", list(SHAPES))
def test_host_int8_close_to_onnxruntime_and_bit_exact(work, model):
    x, calib = np.load(work / f"{model}_x.npy"), work / f"{model}_calib.npy"
    outs, report = cli_run(work, "host", "standard", FIXTURES / model, x, calib)
    assert cosine(outs["y"], ort_outputs(FIXTURES / model, x)) >= 0.99
    op, kernel = PORTABLE[model]
    assert any(f["op"] == op and f["kernel"] == kernel and f"avx2: no avx2 kernel for {kernel}" in f["reason"]
               for f in report["fallbacks"]), report["fallbacks"]
    assert np.array_equal(outs["y"], reference_int8(model, "host", "standard", calib, x))


def test_keyword_spotter_on_cortex_m7_equals_host_int8(work):
    model = "kws_lstm.onnx"
    x, calib = np.load(work / f"{model}_x.npy")[:3], work / f"{model}_calib.npy"
    m7, report = cli_run(work, "cortex-m7", "lite", FIXTURES / model, x, calib)
    host, _ = cli_run(work, "host", "lite", FIXTURES / model, x, calib)
    assert np.array_equal(m7["y"], host["y"])
    assert np.array_equal(m7["y"], reference_int8(model, "cortex-m7", "lite", calib, x))
    assert report["instructions"] > 0


@pytest.mark.skipif(cuda_tools.find_nvcc() is None, reason="nvcc (CUDA toolkit) not found: the CUDA kernels cannot "
                                                           "be compiled here")
def test_keyword_spotter_builds_for_jetson_with_its_lstm_on_the_gpu(work):
    model = "kws_lstm.onnx"
    r = cli("build", "--board", "jetson", "--profile", "standard", "--model", FIXTURES / model, "--calib",
            work / f"{model}_calib.npy", "-o", work / "jetson", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert "lstm_s8" in info["cuda"]["kernels"] and info["cuda"]["sass"] == ["sm_87"]
    assert Path(info["artifacts"]["so"]).is_file()
