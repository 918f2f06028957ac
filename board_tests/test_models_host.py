"""Whole example models on the host board: accuracy against ONNX Runtime, and the C
output bit for bit equal to the numpy integer reference."""
import numpy as np
import pytest

from cuvil_sdk.reference import run_float, run_quantized_model

from models import EXAMPLES, cli_run, cosine, ort_outputs, reference_graph, request

RNG = np.random.default_rng(11)
DIGITS = np.load(EXAMPLES / "digits_data.npz")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("host-models")
    np.save(tmp / "digits_calib.npy", DIGITS["calib"])
    np.save(tmp / "rand_calib.npy", RNG.random((32, 3, 32, 32), dtype=np.float32))
    np.save(tmp / "ad_calib.npy", RNG.random((32, 640), dtype=np.float32))
    return tmp


def assert_bit_exact(req, x, out):
    g = reference_graph(req)
    name = g.inputs[0]
    ref = np.stack([run_quantized_model(g, {name: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])
    assert np.array_equal(out, ref)


def test_digits_int8_accuracy_within_a_point_and_bit_exact(work):
    x, y = DIGITS["x"], DIGITS["y"]
    outs, report = cli_run(work, "host", "standard", "digits_cnn.onnx", x, work / "digits_calib.npy")
    logits = outs["logits"]
    assert logits.shape == (len(x), 1, 10)  # (N, *output shape): the one rule for samples
    float_acc = float((ort_outputs("digits_cnn.onnx", x).argmax(-1).ravel() == y).mean())
    acc = float((logits.argmax(-1).ravel() == y).mean())
    assert report["samples"] == len(x) and report["arena_bytes"] > 0
    assert acc >= float_acc - 0.01, (acc, float_acc)
    assert_bit_exact(request("digits_cnn.onnx", "host", "standard", work / "digits_calib.npy"), x, logits)


@pytest.mark.slow
@pytest.mark.parametrize("model,calib,shape", [("resnet8_fp32.onnx", "rand_calib.npy", (3, 32, 32)),
                                               ("ad_fp32.onnx", "ad_calib.npy", (640,))])
def test_float_models_int8_close_to_onnxruntime_and_bit_exact(work, model, calib, shape):
    x = RNG.random((20, *shape), dtype=np.float32)
    outs, _ = cli_run(work, "host", "standard", model, x, work / calib)
    out = list(outs.values())[0]
    assert cosine(out, ort_outputs(model, x)) >= 0.99
    assert_bit_exact(request(model, "host", "standard", work / calib), x, out)


@pytest.mark.slow
def test_qdq_model_uses_its_own_scales(work):
    x = RNG.random((20, 3, 32, 32), dtype=np.float32)
    outs, _ = cli_run(work, "host", "standard", "resnet8_qdq.onnx", x, None)
    out = list(outs.values())[0]
    assert cosine(out, ort_outputs("resnet8_qdq.onnx", x)) >= 0.999
    assert_bit_exact(request("resnet8_qdq.onnx", "host", "standard", None), x, out)


@pytest.mark.slow
def test_fp32_build_matches_onnxruntime(work):
    x = RNG.random((5, 3, 32, 32), dtype=np.float32)
    outs, report = cli_run(work, "host", "standard", "resnet8_fp32.onnx", x, None, "--precision", "fp32")
    assert report["precision"] == "fp32"
    out = list(outs.values())[0]
    assert np.abs(out - ort_outputs("resnet8_fp32.onnx", x)).max() <= 1e-4
    g = reference_graph(request("resnet8_fp32.onnx", "host", "standard", None, precision="fp32"))
    ref = np.stack([run_float(g, {g.inputs[0]: x[i:i + 1]})[g.outputs[0]] for i in range(len(x))])
    np.testing.assert_allclose(out, ref, atol=1e-5)
