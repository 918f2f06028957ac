"""A tiny detector + segmenter made of the shape and data-movement ops (fixture
board_tests/fixtures/shape_head.onnx, from scripts/make_fixtures_shape.py: Resize linear,
Slice with a step, DepthToSpace, Concat, an exporter's Shape -> Gather -> Unsqueeze ->
Concat -> Reshape, Transpose, Sigmoid, Split, Mul, Add, Gather): built for host int8 and
fp32 (compared with ONNX Runtime) and as Cortex-M7 firmware under QEMU (bit-exact with the
host int8 library and the numpy reference)."""
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from cuvil_sdk.reference import run_float, run_quantized_model

from models import cli_run, cosine, reference_graph, request

MODEL = str(Path(__file__).resolve().parent / "fixtures" / "shape_head.onnx")
OUTPUTS = ("det", "seg")
RNG = np.random.default_rng(7)
pytestmark = pytest.mark.slow  # each test builds (and the last one runs QEMU): 10 s and more


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shape-models")
    np.save(tmp / "calib.npy", RNG.standard_normal((16, 3, 16, 16)).astype(np.float32))
    return tmp


def onnxruntime_outputs(x: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    runs = [session.run(list(OUTPUTS), {"x": x[i:i + 1]}) for i in range(len(x))]
    return {name: np.stack([r[k] for r in runs]) for k, name in enumerate(OUTPUTS)}


def reference_outputs(req, x: np.ndarray, precision: str) -> dict[str, np.ndarray]:
    g = reference_graph(req)
    runs = [run_quantized_model(g, {"x": x[i:i + 1]})[1] if precision == "int8" else run_float(g, {"x": x[i:i + 1]})
            for i in range(len(x))]
    return {name: np.stack([r[name] for r in runs]) for name in OUTPUTS}


def test_shape_head_host_int8_close_to_onnxruntime_and_bit_exact(work):
    x = RNG.standard_normal((6, 3, 16, 16)).astype(np.float32)
    outs, _ = cli_run(work, "host", "standard", MODEL, x, work / "calib.npy")
    want = onnxruntime_outputs(x)
    ref = reference_outputs(request(MODEL, "host", "standard", work / "calib.npy"), x, "int8")
    for name in OUTPUTS:
        assert cosine(outs[name], want[name]) >= 0.99, name
        assert np.array_equal(outs[name], ref[name]), name


def test_shape_head_host_fp32_matches_onnxruntime(work):
    x = RNG.standard_normal((4, 3, 16, 16)).astype(np.float32)
    outs, report = cli_run(work, "host", "standard", MODEL, x, None, "--precision", "fp32")
    assert report["precision"] == "fp32"
    want = onnxruntime_outputs(x)
    for name in OUTPUTS:
        assert np.abs(outs[name] - want[name]).max() <= 1e-4, name


def test_shape_head_cortex_m7_bit_exact_with_host(work):
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    m7, report = cli_run(work, "cortex-m7", "lite", MODEL, x, work / "calib.npy")
    host, _ = cli_run(work, "host", "lite", MODEL, x, work / "calib.npy")
    ref = reference_outputs(request(MODEL, "cortex-m7", "lite", work / "calib.npy"), x, "int8")
    assert report["instructions"] > 0
    for name in OUTPUTS:
        assert np.array_equal(m7[name], host[name]), name
        assert np.array_equal(m7[name], ref[name]), name
