"""The model zoo as exporters write it (tests/fixtures/zoo/, made by scripts/make_zoo.py with
PyTorch's exporters, opsets 13 to 21, one model with external data): ResNet- and
MobileNetV2/V3-style classifiers, a 1-D convolution keyword spotter, a transformer encoder, a
U-Net-like segmenter and a YOLO-style detection head.

Each builds through the real CLI for host in fp32 (against ONNX Runtime) and int8 (close to
ONNX Runtime, and bit for bit the numpy integer reference of the same compilation), and the
ones that fit a Cortex-M7 run as firmware under QEMU bit for bit equal to host int8."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from cuvil_sdk.reference import run_quantized_model

from models import cli_run, cosine, ort_outputs, reference_graph, request

ZOO = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "zoo"
MODELS = sorted(p.name for p in ZOO.glob("*.onnx"))
# int8 against the float model, random weights and calibration on 16 random samples: the
# quantization error of a deep random network; per model, what the 8-bit rules reach
INT8_COSINE = 0.97
ON_M7 = ["kws_conv1d.onnx", "mobilenetv3_small.onnx", "yolo_head.onnx"]
SAMPLES = 4
pytestmark = pytest.mark.slow


def input_shape(model: str) -> tuple[int, ...]:
    dims = onnx.load(str(ZOO / model), load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims)[1:]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("zoo")
    rng = np.random.default_rng(11)
    for model in MODELS:
        shape = input_shape(model)
        np.save(tmp / f"{model}_calib.npy", rng.standard_normal((16, *shape)).astype(np.float32))
        np.save(tmp / f"{model}_x.npy", rng.standard_normal((SAMPLES, *shape)).astype(np.float32))
    return tmp


def test_the_zoo_spans_opsets_13_to_21_and_external_data():
    opsets = {onnx.load(str(ZOO / m), load_external_data=False).opset_import[0].version for m in MODELS}
    assert {13, 17, 18, 21} <= opsets and min(opsets) == 13 and max(opsets) == 21
    assert any((ZOO / f"{m}.data").is_file() for m in MODELS)


@pytest.mark.parametrize("model", MODELS)
def test_host_fp32_matches_onnxruntime(work, model):
    x = np.load(work / f"{model}_x.npy")
    outs, _ = cli_run(work, "host", "standard", ZOO / model, x, None, "--precision", "fp32")
    expected = ort_outputs(ZOO / model, x)
    err = float(np.abs(outs["y"] - expected).max())
    assert err <= 1e-4 * max(1.0, float(np.abs(expected).max())), err


def reference_int8(model: str, board: str, profile: str, calib: Path, x: np.ndarray) -> np.ndarray:
    g = reference_graph(request(ZOO / model, board, profile, calib))
    return np.stack([run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])


@pytest.mark.parametrize("model", MODELS)
def test_host_int8_close_to_onnxruntime_and_bit_exact(work, model):
    x, calib = np.load(work / f"{model}_x.npy"), work / f"{model}_calib.npy"
    outs, _ = cli_run(work, "host", "standard", ZOO / model, x, calib)
    assert cosine(outs["y"], ort_outputs(ZOO / model, x)) >= INT8_COSINE
    assert np.array_equal(outs["y"], reference_int8(model, "host", "standard", calib, x))


@pytest.mark.parametrize("model", ON_M7)
def test_cortex_m7_equals_host_int8(work, model):
    x, calib = np.load(work / f"{model}_x.npy")[:2], work / f"{model}_calib.npy"
    m7, report = cli_run(work, "cortex-m7", "lite", ZOO / model, x, calib)
    host, _ = cli_run(work, "host", "lite", ZOO / model, x, calib)
    assert np.array_equal(m7["y"], host["y"])
    assert report["instructions"] > 0
