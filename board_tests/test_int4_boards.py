"""int4 weights on the boards (issue 28): a model built with --weight-bits 4 gives the same int8
outputs on cortex-m7 (the DSP kernels unpack the nibbles in registers, under QEMU), host (avx2)
and rpi5 (neon, under qemu-aarch64), equal to the numpy integer reference; its reports show the
weight bytes as int8 and as int4 per layer; and an ONNX model with INT4 QDQ weights is imported
with its own values and scales, bit for bit the reference's and within one output step of ONNX
Runtime. The kernel-by-kernel cases are in the grids (dsp_w4_ and simd_w4_ cases).
A missing toolchain or QEMU makes these tests fail, never skip."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.kernels.requant import quantize_multipliers
from cuvil_sdk.reference import run_quantized_model
from models import EXAMPLES, reference_graph
from cuvil_sdk.request import new_request
from tools import missing_tools

BOARDS = {"cortex-m7": "lite", "host": "standard", "rpi5": "standard"}
TOOLS = ["arm-none-eabi-gcc", "qemu-system-arm", "aarch64-linux-gnu-gcc", "qemu-aarch64", "gcc", "scons"]
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "int4" / "int4_qdq.onnx"


def test_int4_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (these tests never skip)"


def int8_outputs(info: dict, result: dict) -> list[np.ndarray]:
    """(samples, size) int8 per output: the firmware's raw bytes, or a library's dequantized floats
    turned back into their codes (each is (q - zero point) x scale exactly)."""
    if "raw" in result:
        return [np.asarray(r) for r in result["raw"]]
    return [np.stack([np.rint(o[t["name"]].reshape(-1) / t["scale"]) + t["zero_point"] for o in result["outputs"]])
            .astype(np.int8) for t in info["outputs"]]


def build_and_run(model: Path, board: str, out: Path, x: np.ndarray, **options) -> tuple[dict, list[np.ndarray]]:
    req = new_request(model, board=board, profile=BOARDS[board], jobs=2, **options)
    info = do_build(req, out, 2)
    shape = info["inputs"][0]["shape"]
    samples = [{info["inputs"][0]["name"]: x[i:i + 1].reshape(shape)} for i in range(len(x))]
    return info, int8_outputs(info, run_samples(req.board, info, samples, False))


def reference_int8(model: Path, x: np.ndarray, **options) -> list[np.ndarray]:
    g = reference_graph(new_request(model, board="host", profile="standard", **options))
    outs = [run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[0] for i in range(len(x))]
    return [np.stack([o[name].reshape(-1) for o in outs]) for name in g.outputs]


@pytest.mark.slow
def test_digits_weight_bits_4_same_int8_outputs_on_every_board(tmp_path):
    """digits with --weight-bits 4: every Conv/Gemm has int4 weights; the int8 outputs of the
    cortex-m7 firmware, the host library and the rpi5 library are equal to each other and to the
    numpy reference on the test set's first samples. On cortex-m7 every layer runs a DSP kernel
    (no fallbacks); the GEMM and FC layers read the nibbles (variant w4), the depthwise one keeps
    int8 bytes and the build says so; report.json and report.html give each layer's weight bits and
    its weight bytes as int8 and as int4."""
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:12]
    options = {"calib": str(EXAMPLES / "digits_calib.npy"), "weight_bits": 4}
    want = reference_int8(EXAMPLES / "digits_cnn.onnx", x, **options)
    infos = {}
    for board in BOARDS:
        infos[board], got = build_and_run(EXAMPLES / "digits_cnn.onnx", board, tmp_path / board, x, **options)
        for g, w in zip(got, want):
            assert np.array_equal(g.reshape(w.shape), w), f"{board}: int8 outputs differ from the reference"
    m7 = infos["cortex-m7"]
    assert m7["weight_bits"] == "4" and len(m7["int4_layers"]) == 5 and m7["fallbacks"] == []
    variants = {la["name"]: la.get("variant", "") for la in m7["layers"]}
    assert [f["layer"] for f in m7["int4_unpacked"]] == ["/f/f.3/Conv"]  # the depthwise one, said once
    assert all(" w4" in variants[name] for name in m7["int4_layers"] if name != "/f/f.3/Conv")
    values = m7["weight_values"]
    assert values["int4_bytes"] == sum((la["int8_bytes"] + 1) // 2 for la in values["layers"])
    assert values["stored_bytes"] == values["int4_bytes"] + 72  # the depthwise 144 values as int8 bytes
    report = json.loads((tmp_path / "cortex-m7" / "report.json").read_text())
    assert report["weight_bits"]["stored_bytes"] == values["stored_bytes"] and report["weight_bits"]["mode"] == "4"
    rows = [la for la in report["layers"] if la.get("weight_bits")]
    assert len(rows) == 5 and all(la["int4_weight_bytes"] * 2 >= la["int8_weight_bytes"] for la in rows)
    html = (tmp_path / "cortex-m7" / "report.html").read_text()
    assert 'id="weight-bits"' in html and "values int4 B" in html and "(as int8)" in html


def int4_codes(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The INT4 initializers of the fixture (the weights' own values) by the consumer's weight name."""
    return {t.name[:-len("_q")]: numpy_helper.to_array(t).astype(np.int8) for t in model.graph.initializer
            if t.data_type == onnx.TensorProto.INT4}


@pytest.mark.slow
def test_int4_qdq_model_is_imported_with_its_own_weights(tmp_path):
    """tests/fixtures/int4/int4_qdq.onnx (opset 21, INT4 weights behind DequantizeLinear with
    per-axis scales, -8 among them): its layers become int4 layers holding exactly the INT4 codes
    and scales; cortex-m7, host and rpi5 give the reference's int8 outputs bit for bit, and the
    outputs are within one output step of ONNX Runtime's."""
    import onnxruntime as ort
    model = onnx.load(FIXTURE)
    codes = int4_codes(model)
    g = reference_graph(new_request(FIXTURE, board="host", profile="standard"))
    layers = {n.name: n for n in g.nodes if n.weight_bits == 4}
    assert set(layers) == {"conv1", "conv2", "fc"}
    scales = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for name, weight, sx, sy in (("conv1", "w1", "xq", "r1q"), ("conv2", "w2", "r1q", "c2q"), ("fc", "w3", "c2q", "yq")):
        q = layers[name].q
        assert np.array_equal(q["w"], codes[weight]), name
        assert np.array_equal(q["bias"], scales[f"b{weight[1]}_q"]), name  # the int32 bias as imported
        ratio = np.float64(scales[f"{sx}_scale"]) * scales[f"{weight}_scale"].astype(np.float32).astype(np.float64)
        mult, shift = quantize_multipliers(ratio / np.float64(scales[f"{sy}_scale"]))
        assert np.array_equal(q["mult"], mult) and np.array_equal(q["shift"], shift), name  # its own scales
    assert int(codes["w2"].min()) == -8
    x = np.random.default_rng(21).uniform(-1.2, 2.6, (8, 1, 3, 9, 7)).astype(np.float32).reshape(8, 3, 9, 7)
    want = reference_int8(FIXTURE, x)
    for board in BOARDS:  # -8 through the DSP's 16 x w, the avx2 table and neon's shifts
        info, got = build_and_run(FIXTURE, board, tmp_path / board, x)
        assert info["weight_bits"] == "qdq" and info["int4_layers"] == ["conv1", "conv2", "fc"]
        assert np.array_equal(got[0].reshape(want[0].shape), want[0]), f"{board}: int8 outputs differ"
    session = ort.InferenceSession(str(FIXTURE))
    theirs = np.concatenate([session.run(None, {"x": x[i:i + 1]})[0] for i in range(len(x))])  # as want: (N, 6)
    out = info["outputs"][0]
    ours = (want[0].astype(np.float32) - out["zero_point"]) * np.float32(out["scale"])
    assert np.abs(ours - theirs).max() <= out["scale"] * 1.001, np.abs(ours - theirs).max()
