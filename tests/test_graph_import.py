"""The models users ship (issue 39, graph import): fixtures of tests/fixtures/import/ made by
scripts/make_fixtures_import.py, each built for the host in fp32 and int8 and compared with
ONNX Runtime (fp32 close; int8 within its quantization error) and with the numpy reference:

- a Silero-style VAD with an If on the sample rate: --input-value sr=16000 folds it;
- AmplitudeToDB(top_db): Clip with a min computed at run time (Max/Min of two activations);
- a paddle2onnx-style -1 batch fixed by --input-shape (and the wording when it contradicts);
- an ONNX Runtime quantize_dynamic model: DynamicQuantizeLinear, ConvInteger, MatMulInteger;
- every unsupported op of a model in one message, exit 3."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cuvil_sdk
from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.errors import ModelError, UsageError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.kernels.requant import dequantize, quantize_float
from cuvil_sdk.plugins import describe_ops
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float, run_quantized_model
from cuvil_sdk.request import new_request

FIXTURES = Path(__file__).parent / "fixtures" / "import"
PROFILE, BOARD = get_profile("standard"), get_board("host")
CLI = Path(sys.executable).with_name("cuvil-sdk")


def ort_run(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def built(tmp_path: Path, model: Path, precision: str, **options) -> dict:
    """Build for the host; returns {"run": samples -> outputs, "reference": the numpy
    reference of the same request (float, or the int8 graph the build quantized)}."""
    b = cuvil_sdk.build(model, board="host", profile="standard", precision=precision,
                        out_dir=tmp_path / f"{model.stem}-{precision}", jobs=1, **options)
    req = new_request(model, board="host", profile="standard", precision=precision, **options)
    g = frontend_and_passes(req)
    if precision == "int8":
        quantize(g, req)
    return {"build": b, "graph": g}


def run_samples(b, samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with b.load() as model:
        return model.run(samples)


def reference(g, samples: dict[str, np.ndarray], precision: str) -> dict[str, np.ndarray]:
    """The numpy reference, one sample at a time (leading axis), stacked."""
    n = len(next(iter(samples.values())))
    outs = []
    for k in range(n):
        feeds = {name: samples[name][k] for name in g.inputs}
        outs.append(run_float(g, feeds) if precision == "fp32" else run_quantized_model(g, feeds)[1])
    return {name: np.stack([o[name] for o in outs]) for name in g.outputs}


def ort_samples(path: Path, samples: dict[str, np.ndarray], extra: dict | None = None) -> dict[str, np.ndarray]:
    n = len(next(iter(samples.values())))
    outs = [ort_run(path, {**{k: v[i] for k, v in samples.items()}, **(extra or {})}) for i in range(n)]
    return {name: np.stack([o[name] for o in outs]) for name in outs[0]}


# ---------------------------------------------------------------- Silero-style VAD: If on sr


VAD = FIXTURES / "vad_if.onnx"


def vad_samples(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": (0.5 * rng.standard_normal((n, 1, 256))).astype(np.float32),
            "h": (0.5 * np.tanh(rng.standard_normal((n, 1, 1, 16)))).astype(np.float32),
            "c": (0.5 * rng.standard_normal((n, 1, 1, 16))).astype(np.float32)}


def test_an_if_on_an_input_is_refused_naming_the_input_to_pin():
    with pytest.raises(ModelError, match=r"^node 'If_sr' \(If\): control flow is not supported \(the 'standard' "
                                         r"profile forbids control flow\); its condition depends on input 'sr': "
                                         r"pin it with --input-value sr=VALUE$"):
        load_model(VAD, PROFILE, BOARD, {})


@pytest.mark.parametrize("sr", [16000, 8000])
def test_pinned_sample_rate_folds_the_if_to_its_branch_as_onnx_runtime_runs_it(sr):
    g = load_model(VAD, PROFILE, BOARD, {}, {"sr": sr})
    assert g.inputs == ["x", "h", "c"] and not any(n.op == "If" for n in g.nodes)
    branch = "sr16k" if sr == 16000 else "sr8k"
    assert {n.name for n in g.nodes if n.op == "LSTM"} == {f"{branch}_lstm"}
    samples = vad_samples(3, sr)
    want = ort_samples(VAD, samples, {"sr": np.array(sr, np.int64)})
    got = reference(g, samples, "fp32")
    for name in ("output", "hn", "cn"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_vad_builds_fp32_and_int8_for_the_host_with_the_sample_rate_pinned(tmp_path):
    samples = vad_samples(4, 1)
    want = ort_samples(VAD, samples, {"sr": np.array(16000, np.int64)})
    fp32 = built(tmp_path, VAD, "fp32", input_value=["sr=16000"])
    got = run_samples(fp32["build"], samples)
    for name in ("output", "hn", "cn"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    calib = vad_samples(64, 2)
    int8 = built(tmp_path, VAD, "int8", input_value={"sr": 16000}, calib=calib)
    got = run_samples(int8["build"], samples)
    ref = reference(int8["graph"], samples, "int8")
    for name in ("output", "hn", "cn"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)  # the C is the integer reference
        np.testing.assert_allclose(got[name], want[name], atol=0.08, err_msg=name)  # within int8's error


def shape_if_model(path: Path) -> Path:
    """y = x * 2 when x has 512 columns, else x * 3: an If on Equal(Shape(x)[1], 512), x [1, N]."""
    def branch(tag: str, factor: float) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Mul", ["x", f"{tag}_k"], [f"{tag}_y"], name=f"{tag}_mul")], tag, [],
                                 [helper.make_tensor_value_info(f"{tag}_y", TensorProto.FLOAT, None)],
                                 [numpy_helper.from_array(np.array(factor, np.float32), f"{tag}_k")])
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "one"], ["columns"], name="columns", axis=0),
             helper.make_node("Equal", ["columns", "k512"], ["wide"], name="wide"),
             helper.make_node("If", ["wide"], ["y"], name="If_shape", then_branch=branch("wide", 2.0),
                              else_branch=branch("narrow", 3.0))]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(512, np.int64),
                                                                                          "k512")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "N"])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_an_if_on_an_input_shape_folds_once_input_shape_fixes_it(tmp_path):
    path = shape_if_model(tmp_path / "m.onnx")
    with pytest.raises(ModelError, match=r"^node 'If_shape' \(If\): control flow is not supported .*; its condition "
                                         r"reads the shape of 'x': fix it with --input-shape$"):
        load_model(path, PROFILE, BOARD, {})
    for columns, factor in ((512, 2.0), (256, 3.0)):
        g = load_model(path, PROFILE, BOARD, {"x": (1, columns)})
        x = np.random.default_rng(columns).standard_normal((1, columns)).astype(np.float32)
        np.testing.assert_array_equal(run_float(g, {"x": x})["y"], x * np.float32(factor))
        np.testing.assert_array_equal(ort_run(path, {"x": x})["y"], x * np.float32(factor))


def nested_if_model(path: Path) -> Path:
    """An If on mode == 1 whose then branch holds another If on mode > 0, each branch defining a
    tensor named 'tmp' as the main graph does after them."""
    def leaf(tag: str, factor: float) -> onnx.GraphProto:
        nodes = [helper.make_node("Mul", ["x", f"{tag}_k"], ["tmp"], name=f"{tag}_mul"),
                 helper.make_node("Relu", ["tmp"], [f"{tag}_y"], name=f"{tag}_relu")]
        return helper.make_graph(nodes, tag, [], [helper.make_tensor_value_info(f"{tag}_y", TensorProto.FLOAT, None)],
                                 [numpy_helper.from_array(np.array(factor, np.float32), f"{tag}_k")])
    inner = helper.make_graph([helper.make_node("Greater", ["mode", "zero"], ["positive"], name="positive"),
                               helper.make_node("If", ["positive"], ["inner_y"], name="If_inner",
                                                then_branch=leaf("a", 2.0), else_branch=leaf("b", 3.0))],
                              "inner", [], [helper.make_tensor_value_info("inner_y", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Equal", ["mode", "one"], ["is_one"], name="is_one"),
             helper.make_node("If", ["is_one"], ["branch_y"], name="If_outer", then_branch=inner,
                              else_branch=leaf("c", 5.0)),
             helper.make_node("Neg", ["branch_y"], ["tmp"], name="neg"),
             helper.make_node("Abs", ["tmp"], ["y"], name="abs")]
    inits = [numpy_helper.from_array(np.array(1, np.int32), "one"), numpy_helper.from_array(np.array(0, np.int32),
                                                                                          "zero")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                       helper.make_tensor_value_info("mode", TensorProto.INT32, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("mode, factor", [(1, 2.0), (0, 5.0)])
def test_nested_ifs_fold_and_branch_names_are_kept_apart(tmp_path, mode, factor):
    path = nested_if_model(tmp_path / "m.onnx")
    g = load_model(path, PROFILE, BOARD, {}, {"mode": mode})
    assert g.inputs == ["x"] and not any(n.op == "If" for n in g.nodes)
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    want = ort_run(path, {"x": x, "mode": np.array([mode], np.int32)})["y"]
    np.testing.assert_array_equal(run_float(g, {"x": x})["y"], want)
    np.testing.assert_array_equal(want, np.abs(np.maximum(x * np.float32(factor), 0)))


@pytest.mark.parametrize("spec, message", [
    ("sr=16000.5", r"--input-value sr=16000.5: not a value of the input's type int64"),
    ("x=1", r"--input-value x: the input has shape \[1, 256\]; only a scalar input \(one value\) can be pinned"),
    ("rate=16000", r"--input-value names no model input: rate"),
    ("sr", r"--input-value 'sr' must look like NAME=VALUE"),
])
def test_input_value_mistakes_are_usage_errors_naming_the_option(tmp_path, spec, message):
    with pytest.raises(UsageError, match=message):
        req = new_request(VAD, board="host", profile="standard", precision="fp32", input_value=spec)
        load_model(VAD, PROFILE, BOARD, {}, req.input_values)


@pytest.mark.slow
def test_input_value_on_the_command_line_and_in_cuvil_toml(tmp_path):
    r = subprocess.run([str(CLI), "compile", str(VAD), "--board", "host", "--profile", "standard", "--precision",
                        "fp32", "--input-value", "sr=8000", "-o", str(tmp_path / "cli")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (tmp_path / "cuvil.toml").write_text(f'board = "host"\nprofile = "standard"\n\n[[models]]\nmodel = "{VAD}"\n'
                                         f'precision = "fp32"\ninput-value = ["sr=8000"]\n')
    r = subprocess.run([str(CLI), "build", "-o", str(tmp_path / "toml"), "-j", "1"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for out in ("cli", "toml"):
        manifest = json.loads((tmp_path / out / "manifest.json").read_text())
        assert [i["name"] for i in manifest["inputs"]] == ["x", "h", "c"]  # sr is pinned, no longer an input
        assert any(layer["name"] == "sr8k_lstm" for layer in manifest["layers"])


# ---------------------------------------------------------------- Clip with a computed min


DB = FIXTURES / "logmel_db.onnx"


def mel_samples(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    # power spectra over a wide dynamic range, so that top_db clips part of each sample
    return {"x": (10.0 ** rng.uniform(-12, 2, (n, 1, 1, 40, 32))).astype(np.float32)}


def test_clip_with_a_computed_min_becomes_max_of_two_activations():
    g = load_model(DB, PROFILE, BOARD, {})
    (node,) = [n for n in g.nodes if n.name == "top_db_clip"]
    assert node.op == "Max" and not any(g.tensors[i].is_const for i in node.inputs)
    samples = mel_samples(2, 0)
    want = ort_samples(DB, samples)
    got = reference(g, samples, "fp32")
    assert (want["db"] == want["db"].max(axis=(1, 2, 3, 4), keepdims=True) - 80).any()  # the clip bites
    for name in ("db", "logits"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-4, err_msg=name)


def clip_model(path: Path, lo: str, hi: str) -> Path:
    """y = Clip(x, lo, hi), lo and hi "min"/"max" of x computed at run time, a constant, or absent."""
    nodes, inits = [], []
    names = []
    for bound, reduce in ((lo, "ReduceMin"), (hi, "ReduceMax")):
        if bound == "runtime":
            nodes.append(helper.make_node(reduce, ["x"], [reduce], keepdims=0))
            nodes.append(helper.make_node("Mul", [reduce, "half"], [reduce + "_half"]))
            names.append(reduce + "_half")
        elif bound:
            inits.append(numpy_helper.from_array(np.array(float(bound), np.float32), f"b{len(names)}"))
            names.append(f"b{len(names)}")
        else:
            names.append("")
    inits.append(numpy_helper.from_array(np.array(0.5, np.float32), "half"))
    nodes.append(helper.make_node("Clip", ["x", *names], ["y"], name="clip"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("lo, hi", [("runtime", ""), ("", "runtime"), ("runtime", "runtime"), ("runtime", "0.25"),
                                    ("-0.1", "runtime"), ("5", "runtime")])
def test_clip_with_run_time_bounds_matches_onnx_runtime_in_float_and_int8(tmp_path, lo, hi):
    path = clip_model(tmp_path / "clip.onnx", lo, hi)
    x = np.random.default_rng(3).standard_normal((1, 4, 6)).astype(np.float32)
    want = ort_run(path, {"x": x})["y"]
    g = load_model(path, PROFILE, BOARD, {})
    assert all(n.op in ("Max", "Min", "ReduceMin", "ReduceMax", "Mul") for n in g.nodes)
    np.testing.assert_allclose(run_float(g, {"x": x})["y"], want, rtol=1e-6)
    req = new_request(path, board="host", profile="standard", precision="int8", calib=x[None])
    gq = frontend_and_passes(req)
    quantize(gq, req)
    got = run_quantized_model(gq, {"x": x})[1]["y"]
    sx, sy = (gq.tensors[name].q.scalar()[0] for name in ("x", "y"))
    np.testing.assert_allclose(got, want, atol=1.01 * (sx + sy))  # x rounded to its scale, y to its own


def as_int8_sees(x: np.ndarray, g) -> np.ndarray:
    """x quantized to the int8 graph's input scale and back."""
    sx, zx = g.tensors["x"].q.scalar()
    return dequantize(quantize_float(x, sx, zx), sx, zx)


@pytest.mark.slow
def test_amplitude_to_db_builds_fp32_and_int8_for_the_host(tmp_path):
    samples = mel_samples(3, 1)
    want = ort_samples(DB, samples)
    fp32 = built(tmp_path, DB, "fp32")
    got = run_samples(fp32["build"], samples)
    for name in ("db", "logits"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-3, err_msg=name)
    # int8 power spectra lose their small values to the input's own scale (a linear grid over
    # 14 decades; keeping such an input in float is --input-precision's job): calibration and
    # ONNX Runtime get the inputs as the int8 build sees them, so what is compared is the int8
    # error of the layers themselves, the computed top_db bound included
    calib = mel_samples(32, 2)
    req = new_request(DB, board="host", profile="standard", precision="int8", calib=calib)
    first = frontend_and_passes(req)
    quantize(first, req)
    int8 = built(tmp_path, DB, "int8", calib={"x": as_int8_sees(calib["x"], first)})
    got = run_samples(int8["build"], samples)
    ref = reference(int8["graph"], samples, "int8")
    for name in ("db", "logits"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    want = ort_samples(DB, {"x": as_int8_sees(samples["x"], int8["graph"])})
    assert (want["db"] == want["db"].max(axis=(1, 2, 3, 4), keepdims=True) - 80).any()  # the clip bites
    db_scale = int8["graph"].tensors["db"].q.scalar()[0]
    np.testing.assert_allclose(got["db"], want["db"], atol=2 * db_scale)
    np.testing.assert_allclose(got["logits"], want["logits"], atol=0.05 * np.abs(want["logits"]).max())


# ---------------------------------------------------------------- paddle2onnx's -1 batch


PADDLE = FIXTURES / "paddle_conv.onnx"


def test_a_minus_one_batch_is_fixed_by_input_shape_as_the_hint_says():
    with pytest.raises(ModelError, match=r"input 'x' has a dynamic dimension '-1'.*--input-shape x=1x3x16x16"):
        load_model(PADDLE, PROFILE, BOARD, {})
    g = load_model(PADDLE, PROFILE, BOARD, {"x": (1, 3, 16, 16)})
    assert g.tensors["x"].shape == (1, 3, 16, 16)
    assert g.tensors[g.outputs[0]].shape == (1, 10)


def test_an_input_shape_that_contradicts_names_the_axis_and_both_values():
    with pytest.raises(UsageError, match=r"^--input-shape x: axis 1 is 3 in the model, not 4$"):
        load_model(PADDLE, PROFILE, BOARD, {"x": (1, 4, 16, 16)})


@pytest.mark.slow
def test_paddle_style_net_builds_fp32_and_int8_for_the_host(tmp_path):
    rng = np.random.default_rng(4)
    samples = {"x": rng.random((3, 1, 3, 16, 16)).astype(np.float32)}
    want = ort_samples(PADDLE, samples)
    out = "softmax_0.tmp_0"
    fp32 = built(tmp_path, PADDLE, "fp32", input_shape="x=1x3x16x16")
    got = run_samples(fp32["build"], samples)
    np.testing.assert_allclose(got[out], want[out], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(reference(fp32["graph"], samples, "fp32")[out], want[out], rtol=1e-4, atol=1e-6)
    int8 = built(tmp_path, PADDLE, "int8", input_shape=["x=1x3x16x16"], calib=rng.random((32, 1, 3, 16, 16),
                                                                                             dtype=np.float32))
    got = run_samples(int8["build"], samples)
    np.testing.assert_array_equal(got[out], reference(int8["graph"], samples, "int8")[out])
    np.testing.assert_allclose(got[out], want[out], atol=0.03)


# ---------------------------------------------------------------- ORT dynamic quantization


DYNQ, DYNQ_FLOAT = FIXTURES / "dynq_convnet.onnx", FIXTURES / "dynq_convnet_float.onnx"


def dequantized_weights_model(tmp_path: Path) -> Path:
    """The float model with the int8 weights of the dynamic-quantized one, dequantized: what the
    SDK's import computes, run by ONNX Runtime."""
    q = onnx.load(str(DYNQ))
    init = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    model = onnx.load(str(DYNQ_FLOAT))
    for t in model.graph.initializer:
        if t.name in ("conv_w", "fc_w"):
            w = (init[f"{t.name}_quantized"].astype(np.float64) - init[f"{t.name}_zero_point"]) * init[f"{t.name}_scale"]
            t.CopyFrom(numpy_helper.from_array(w.astype(np.float32), t.name))
    path = tmp_path / "dequantized.onnx"
    onnx.save(model, str(path))
    return path


def test_the_fixture_is_what_quantize_dynamic_writes():
    ops = {n.op_type for n in onnx.load(str(DYNQ)).graph.node}
    assert {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "Cast"} <= ops


def test_dynamic_quantized_model_imports_as_float_layers_of_its_dequantized_weights(tmp_path):
    g = load_model(DYNQ, PROFILE, BOARD, {})
    assert {n.op for n in g.nodes} & {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "Cast"} == set()
    x = np.random.default_rng(5).random((4, 1, 3, 8, 8)).astype(np.float32)
    got = reference(g, {"x": x}, "fp32")["y"]
    exact = ort_samples(dequantized_weights_model(tmp_path), {"x": x})["y"]
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6)
    quantized = ort_samples(DYNQ, {"x": x})["y"]
    # ORT rounds each activation to 8 bits on top: its own quantization error, small against the outputs
    assert np.abs(got - quantized).max() < 0.03 * np.abs(quantized).max()


@pytest.mark.parametrize("weight_type, per_channel", [("QUInt8", False), ("QInt8", True), ("QUInt8", True)])
def test_other_quantize_dynamic_settings_import_too(tmp_path, weight_type, per_channel):
    """uint8 weights (a zero point per tensor or per column) and per-channel scales."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    path = tmp_path / "q.onnx"
    quantize_dynamic(str(DYNQ_FLOAT), str(path), weight_type=getattr(QuantType, weight_type), per_channel=per_channel)
    g = load_model(path, PROFILE, BOARD, {})
    assert {n.op for n in g.nodes} <= {"Conv", "Relu", "Flatten", "MatMul", "Add", "Reshape"}
    x = np.random.default_rng(11).random((3, 1, 3, 8, 8)).astype(np.float32)
    got = reference(g, {"x": x}, "fp32")["y"]
    assert relative_error(got, ort_samples(path, {"x": x})["y"]) < 0.03


@pytest.mark.slow
def test_dynamic_quantized_model_builds_fp32_and_int8_for_the_host(tmp_path):
    rng = np.random.default_rng(6)
    samples = {"x": rng.random((4, 1, 3, 8, 8)).astype(np.float32)}
    want = ort_samples(DYNQ, samples)["y"]
    fp32 = built(tmp_path, DYNQ, "fp32")
    got = run_samples(fp32["build"], samples)["y"]
    assert np.abs(got - want).max() < 0.03 * np.abs(want).max()
    int8 = built(tmp_path, DYNQ, "int8", calib=rng.random((32, 1, 3, 8, 8), dtype=np.float32))
    got = run_samples(int8["build"], samples)["y"]
    np.testing.assert_array_equal(got, reference(int8["graph"], samples, "int8")["y"])
    assert np.abs(got - want).max() < 0.06 * np.abs(want).max()


VAD_DYNQ = FIXTURES / "vad_if_dynq.onnx"


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


def test_dynamic_quantized_vad_imports_with_its_lstm_as_onnx_runtime_runs_it():
    """quantize_dynamic with EnableSubgraph: ConvInteger, MatMulInteger and com.microsoft's
    DynamicQuantizeLSTM inside the If branches, no com.microsoft opset import."""
    branch_ops = {n.op_type for a in onnx.load(str(VAD_DYNQ)).graph.node[-1].attribute for n in a.g.node}
    assert {"ConvInteger", "MatMulInteger", "DynamicQuantizeLSTM"} <= branch_ops
    g = load_model(VAD_DYNQ, PROFILE, BOARD, {}, {"sr": 16000})
    assert {n.op for n in g.nodes} >= {"Conv", "LSTM", "MatMul"}
    assert not {n.op for n in g.nodes} & {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "Cast"}
    samples = vad_samples(3, 5)
    want = ort_samples(VAD_DYNQ, samples, {"sr": np.array(16000, np.int64)})
    got = reference(g, samples, "fp32")
    for name in ("output", "hn", "cn"):  # ORT rounds each activation to 8 bits on top
        assert relative_error(got[name], want[name]) < 0.03, name


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_quantize_lstm_imports_per_tensor_and_per_gate_row(tmp_path, per_channel):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    rng = np.random.default_rng(2)
    hidden, size = 16, 8
    inits = [numpy_helper.from_array((0.4 * rng.standard_normal((1, 4 * hidden, size))).astype(np.float32), "W"),
             numpy_helper.from_array((0.3 * rng.standard_normal((1, 4 * hidden, hidden))).astype(np.float32), "R")]
    node = helper.make_node("LSTM", ["x", "W", "R", "", "", "h"], ["y", "hn"], name="lstm", hidden_size=hidden)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, size]),
                                        helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 1, hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 1, 1, hidden]),
                           helper.make_tensor_value_info("hn", TensorProto.FLOAT, [1, 1, hidden])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "f.onnx"))
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8,
                     per_channel=per_channel)
    assert [n.op_type for n in onnx.load(str(tmp_path / "q.onnx")).graph.node] == ["DynamicQuantizeLSTM"]
    ir = load_model(tmp_path / "q.onnx", PROFILE, BOARD, {})
    assert [n.op for n in ir.nodes] == ["LSTM"] and ir.nodes[0].name == "lstm_quant"
    feeds = {"x": rng.standard_normal((5, 1, size)).astype(np.float32),
             "h": (0.3 * rng.standard_normal((1, 1, hidden))).astype(np.float32)}
    want = ort_run(tmp_path / "q.onnx", feeds)
    got = run_float(ir, feeds)
    for name in ("y", "hn"):
        assert relative_error(got[name], want[name]) < 0.03, name


def quantized_embedding_model(tmp_path: Path) -> Path:
    """Gather of an embedding table, then MatMul, through quantize_dynamic: Gather of the int8
    table feeds MatMulInteger with the table's constant scale and zero point."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    rng = np.random.default_rng(10)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed"),
             helper.make_node("MatMul", ["emb", "proj_w"], ["y"], name="proj")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 4])],
                          [numpy_helper.from_array(rng.standard_normal((50, 16)).astype(np.float32), "table"),
                           numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "proj_w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "f.onnx"))
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8)
    return tmp_path / "q.onnx"


def test_a_quantized_embedding_into_matmul_integer_imports_exactly(tmp_path):
    path = quantized_embedding_model(tmp_path)
    assert [n.op_type for n in onnx.load(str(path)).graph.node if n.op_type != "Mul"] == ["Gather", "MatMulInteger",
                                                                                          "Cast"]
    g = load_model(path, PROFILE, BOARD, {})
    assert [n.op for n in g.nodes] == ["Gather", "MatMul"]
    ids = np.array([[1, 5, 49, 0, 7, 7]], np.int64)
    # no activation is rounded at run time here: the same integer products as ORT's
    np.testing.assert_allclose(run_float(g, {"ids": ids})["y"], ort_run(path, {"ids": ids})["y"], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.slow
def test_dynamic_quantized_vad_builds_fp32_and_int8_for_the_host(tmp_path):
    samples = vad_samples(4, 6)
    want = ort_samples(VAD_DYNQ, samples, {"sr": np.array(16000, np.int64)})
    fp32 = built(tmp_path, VAD_DYNQ, "fp32", input_value="sr=16000")
    got = run_samples(fp32["build"], samples)
    for name in ("output", "hn", "cn"):
        assert relative_error(got[name], want[name]) < 0.03, name
    int8 = built(tmp_path, VAD_DYNQ, "int8", input_value="sr=16000", calib=vad_samples(64, 7))
    got = run_samples(int8["build"], samples)
    ref = reference(int8["graph"], samples, "int8")
    for name in ("output", "hn", "cn"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
        np.testing.assert_allclose(got[name], want[name], atol=0.08, err_msg=name)


def matmul_integer_model(path: Path, runtime_b: bool) -> Path:
    """DynamicQuantizeLinear + MatMulInteger whose B is a run-time input (not quantize_dynamic's)."""
    nodes = [helper.make_node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"], name="dq"),
             helper.make_node("MatMulInteger", ["aq", "b", "az"], ["acc"], name="mmi"),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4])]
    inits = []
    if runtime_b:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.UINT8, [4, 3]))
    else:
        inits.append(numpy_helper.from_array(np.ones((4, 3), np.uint8), "b"))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_an_integer_layer_in_another_layout_is_refused_naming_the_node(tmp_path):
    path = matmul_integer_model(tmp_path / "m.onnx", runtime_b=False)
    with pytest.raises(ModelError, match=r"^node 'dq' \(DynamicQuantizeLinear\): supported only as ONNX Runtime's "
                                         r"quantize_dynamic writes it"):
        load_model(path, PROFILE, BOARD, {})


def test_dynamic_quantize_linear_reference_follows_onnx():
    from cuvil_sdk.ops.dynamic_quant import dynamic_quantize
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                          [helper.make_tensor_value_info(n, t, None) for n, t in
                           (("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8))])
    ref = ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    for x in (np.linspace(-1, 3, 16), np.linspace(0.5, 2, 16), np.linspace(-4, -1, 16)):
        want = ref.run(None, {"x": x.astype(np.float32)})
        for got, w in zip(dynamic_quantize(x.astype(np.float32)), want):
            np.testing.assert_array_equal(got, w)


def microsoft_matmul_model(path: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(8)
    b = rng.integers(-127, 128, (6, 5)).astype(np.int8)
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(0.02, np.float32), "bs"),
             numpy_helper.from_array(np.array(0, np.int8), "bz"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "bias")]
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"], ["y"], name="dqmm",
                            domain="com.microsoft")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(path))
    return path, b


def test_com_microsoft_dynamic_quantize_matmul_imports_as_matmul_plus_bias(tmp_path):
    path, _ = microsoft_matmul_model(tmp_path / "m.onnx")
    g = load_model(path, PROFILE, BOARD, {})
    assert [n.op for n in g.nodes] == ["MatMul", "Add"] and g.nodes[-1].name == "dqmm"
    a = np.random.default_rng(9).standard_normal((3, 6)).astype(np.float32)
    want = ort_run(path, {"a": a})["y"]
    got = run_float(g, {"a": a})["y"]
    assert np.abs(got - want).max() < 0.03 * np.abs(want).max()


def test_matmul_integer_to_float_imports_as_matmul_plus_bias(tmp_path):
    rng = np.random.default_rng(15)
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (6, 5)).astype(np.int8), "b"),
             numpy_helper.from_array(np.array(0.02, np.float32), "bs"), numpy_helper.from_array(np.array(0, np.int8), "bz"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "bias")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"], name="dq"),
             helper.make_node("MatMulIntegerToFloat", ["aq", "b", "as", "bs", "az", "bz", "bias"], ["y"], name="mmf",
                              domain="com.microsoft")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]),
              str(path))
    ir = load_model(path, PROFILE, BOARD, {})
    assert [n.op for n in ir.nodes] == ["MatMul", "Add"] and ir.nodes[-1].name == "mmf"
    a = rng.standard_normal((3, 6)).astype(np.float32)
    want = ort_run(path, {"a": a})["y"]
    assert np.abs(run_float(ir, {"a": a})["y"] - want).max() < 0.03 * np.abs(want).max()


def test_ops_lists_the_imported_ops_with_their_domains():
    rows = {(r["domain"], r["op"]): r for r in describe_ops()["ops"]}
    for key in [("ai.onnx", "DynamicQuantizeLinear"), ("ai.onnx", "MatMulInteger"), ("ai.onnx", "ConvInteger"),
                ("com.microsoft", "DynamicQuantizeMatMul"), ("com.microsoft", "MatMulIntegerToFloat"),
                ("com.microsoft", "DynamicQuantizeLSTM")]:
        assert key in rows and rows[key]["int8"].startswith("imported"), key


# ---------------------------------------------------------------- every unsupported op at once


def unsupported_model(path: Path) -> Path:
    nodes = [helper.make_node("Hardmax", ["x"], ["a"], name="hm1"),
             helper.make_node("QLinearAdd", ["a", "s", "z", "a", "s", "z", "s", "z"], ["b"], name="qadd",
                              domain="com.microsoft"),
             helper.make_node("Hardmax", ["b"], ["c"], name="hm2"),
             helper.make_node("SquarePlus", ["c"], ["d"], name="sq", domain="com.acme"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.uint8), "z")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1),
                                                helper.make_opsetid("com.acme", 1)])
    onnx.save(model, str(path))
    return path


def test_every_unsupported_op_is_listed_in_one_message_with_exit_3(tmp_path):
    path = unsupported_model(tmp_path / "m.onnx")
    r = subprocess.run([str(CLI), "compile", str(path), "--board", "host", "--profile", "standard", "--precision",
                        "fp32", "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        "cuvil-sdk: error: unsupported ops (3): Hardmax (domain ai.onnx, first node 'hm1', 2 nodes), "
        "QLinearAdd (domain com.microsoft, first node 'qadd': ONNX Runtime's QOperator format: quantize with "
        "quant_format=QuantFormat.QDQ, which is imported with its scales), SquarePlus (domain com.acme, first node "
        "'sq'); `cuvil-sdk ops` lists the supported ops; --plugin FILE.py adds an op (see docs/custom_ops.md)"]
    assert not (tmp_path / "out").exists()


def test_a_clip_bound_computed_from_constants_stays_a_clip_and_fuses(tmp_path):
    """Clip(Conv(x), 0, Cast(6)): the bound folds at compile time, so Clip keeps its fused clamp."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Cast", ["six_int"], ["six"], name="six", to=TensorProto.FLOAT),
             helper.make_node("Clip", ["c", "zero", "six"], ["y"], name="relu6")]
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(6, np.int64), "six_int")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    ir = frontend_and_passes(new_request(tmp_path / "m.onnx", board="host", profile="standard", precision="fp32"))
    (conv,) = [n for n in ir.nodes if n.op == "Conv"]
    assert conv.activation == (0.0, 6.0) and not {"Clip", "Max", "Min"} & {n.op for n in ir.nodes}


@pytest.mark.parametrize("op", ["ConvInteger", "MatMulInteger"])
def test_integer_layer_references_follow_onnx(op):
    """Their float references (compile-time evaluation) against onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    from cuvil_sdk.ir import Graph, Node, Tensor
    from cuvil_sdk.ops import REGISTRY
    rng = np.random.default_rng(12)
    x_shape, w_shape, attrs = ((1, 3, 6, 6), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}) if op == "ConvInteger" else \
        ((5, 6), (6, 3), {})
    values = {"x": rng.integers(0, 256, x_shape).astype(np.uint8), "w": rng.integers(-127, 128, w_shape).astype(np.int8),
              "xz": np.array(120, np.uint8), "wz": np.array(3, np.int8)}
    types = {"x": TensorProto.UINT8, "w": TensorProto.INT8, "xz": TensorProto.UINT8, "wz": TensorProto.INT8}
    graph = helper.make_graph([helper.make_node(op, list(values), ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info(k, types[k], list(v.shape)) for k, v in values.items()],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)])
    want = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])).run(None, values)[0]
    g = Graph()
    g.tensors = {k: Tensor(k, tuple(v.shape), str(v.dtype), None if k == "x" else v) for k, v in values.items()}
    node = Node(op, "layer", list(values), ["y"], attrs)
    assert REGISTRY[op].infer(node, g) == [want.shape]
    np.testing.assert_array_equal(REGISTRY[op].run_float(node, g, list(values.values()))[0], want)


def test_matmul_integer_on_an_integer_input_is_computed_in_float_exactly(tmp_path):
    rng = np.random.default_rng(13)
    b = rng.integers(0, 256, (40, 3)).astype(np.uint8)
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(12, np.uint8), "az"),
             numpy_helper.from_array(np.array([1, 200, 128], np.uint8), "bz")]
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    ir = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    assert [n.op for n in ir.nodes] == ["Cast", "Sub", "MatMul", "Cast"]
    a = rng.integers(0, 256, (2, 40)).astype(np.uint8)
    got = run_float(ir, {"a": a})["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ort_run(tmp_path / "m.onnx", {"a": a})["y"])


def test_an_if_on_a_tensor_input_says_its_condition_is_computed_at_run_time(tmp_path):
    """If(ReduceMax(x) > 0): no option folds it; --input-value is not suggested for a tensor."""
    def branch(tag: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Neg", ["x"], [f"{tag}_y"])], tag, [],
                                 [helper.make_tensor_value_info(f"{tag}_y", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
             helper.make_node("Greater", ["top", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y"], name="If_x", then_branch=branch("a"), else_branch=branch("b"))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    with pytest.raises(ModelError, match=r"\(If\): control flow is not supported .*; its condition depends on the "
                                         r"values of 'x' \(computed at run time\)$"):
        load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})


def loop_model(path: Path, trips: int | None) -> Path:
    """v = v * 2 + x for `trips` iterations (M a constant, or the input n when None), scanning v,
    and on iteration 0 (an If on the iteration number) x is added once more."""
    first = helper.make_graph([helper.make_node("Add", ["doubled", "x"], ["first_v"])], "first", [],
                              [helper.make_tensor_value_info("first_v", TensorProto.FLOAT, None)])
    later = helper.make_graph([helper.make_node("Identity", ["doubled"], ["later_v"])], "later", [],
                              [helper.make_tensor_value_info("later_v", TensorProto.FLOAT, None)])
    body_nodes = [helper.make_node("Mul", ["v_in", "two"], ["v2"]),
                  helper.make_node("Add", ["v2", "x"], ["doubled"]),
                  helper.make_node("Equal", ["i", "zero"], ["is_first"]),
                  helper.make_node("If", ["is_first"], ["v_out"], then_branch=first, else_branch=later),
                  helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Identity", ["v_out"], ["scan"])]
    body = helper.make_graph(body_nodes, "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, 3])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, 3]),
                              helper.make_tensor_value_info("scan", TensorProto.FLOAT, [1, 3])])
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.zeros((1, 3), np.float32), "v0")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])]
    if trips is None:
        inputs.append(helper.make_tensor_value_info("n", TensorProto.INT64, []))
    else:
        inits.append(numpy_helper.from_array(np.array(trips, np.int64), "n"))
    g = helper.make_graph([helper.make_node("Loop", ["n", "", "v0"], ["v_final", "scans"], name="loop", body=body)],
                          "g", inputs, [helper.make_tensor_value_info("v_final", TensorProto.FLOAT, [1, 3]),
                                        helper.make_tensor_value_info("scans", TensorProto.FLOAT, ["T", 1, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("pinned", [False, True])
def test_a_loop_with_a_constant_trip_count_is_unrolled(tmp_path, pinned):
    """The trip count a constant of the model, or an input pinned by --input-value; the If on
    the iteration number folds in each copy of the body."""
    path = loop_model(tmp_path / "m.onnx", None if pinned else 3)
    g = load_model(path, PROFILE, BOARD, {}, {"n": 3} if pinned else None)
    assert g.inputs == ["x"] and not {"Loop", "If"} & {n.op for n in g.nodes}
    x = np.random.default_rng(14).standard_normal((1, 3)).astype(np.float32)
    want = ort_run(path, {"x": x, **({"n": np.array(3, np.int64)} if pinned else {})})
    got = run_float(g, {"x": x})
    assert got["scans"].shape == (3, 1, 3)
    for name in ("v_final", "scans"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


def test_a_loop_on_a_run_time_trip_count_is_refused_as_control_flow(tmp_path):
    with pytest.raises(ModelError, match=r"^node 'loop' \(Loop\): control flow is not supported"):
        load_model(loop_model(tmp_path / "m.onnx", None), PROFILE, BOARD, {})


def test_com_microsoft_qdq_imports_as_onnx_qdq(tmp_path):
    """quantize_static with UseQDQContribOps writes QuantizeLinear/DequantizeLinear in the
    com.microsoft domain (8-bit, scale [1] with zero point [] for the bias): the same int8 model
    as ONNX's own QDQ."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Samples(CalibrationDataReader):
        def __init__(self) -> None:
            self.data = iter([{"x": np.random.default_rng(k).random((1, 3, 8, 8)).astype(np.float32)}
                              for k in range(8)])

        def get_next(self):
            return next(self.data, None)

    outputs = {}
    for contrib in (False, True):
        path = tmp_path / f"qdq_{contrib}.onnx"
        quantize_static(str(DYNQ_FLOAT), str(path), Samples(), quant_format=QuantFormat.QDQ,
                        extra_options={"UseQDQContribOps": contrib})
        domains = {n.domain for n in onnx.load(str(path)).graph.node if n.op_type.endswith("QuantizeLinear")}
        assert domains == ({"com.microsoft"} if contrib else {""})
        req = new_request(path, board="host", profile="standard", precision="int8")
        g = frontend_and_passes(req)
        quantize(g, req)
        x = np.random.default_rng(20).random((1, 3, 8, 8)).astype(np.float32)
        outputs[contrib] = run_quantized_model(g, {"x": x})[1]["y"]
        assert relative_error(outputs[contrib], ort_run(path, {"x": x})["y"]) < 0.05
    np.testing.assert_array_equal(outputs[True], outputs[False])


# the ops of ops/dynamic_quant.py and the tests above that import each (test_ops_reference.py leaves them to this file)
IMPORTED_OPS = {"DynamicQuantizeLinear": "test_dynamic_quantized_model_imports_as_float_layers_of_its_dequantized_weights",
                "MatMulInteger": "test_matmul_integer_on_an_integer_input_is_computed_in_float_exactly",
                "ConvInteger": "test_integer_layer_references_follow_onnx",
                "com.microsoft::DynamicQuantizeMatMul": "test_com_microsoft_dynamic_quantize_matmul_imports_as_matmul_plus_bias",
                "com.microsoft::DynamicQuantizeLSTM": "test_dynamic_quantize_lstm_imports_per_tensor_and_per_gate_row",
                "com.microsoft::MatMulIntegerToFloat": "test_matmul_integer_to_float_imports_as_matmul_plus_bias"}


def test_every_imported_op_is_covered_here():
    from cuvil_sdk.ops import REGISTRY
    registered = {name for name, op in REGISTRY.items() if type(op).__module__.endswith(".dynamic_quant")}
    assert registered == set(IMPORTED_OPS)
    assert all(callable(globals().get(test)) for test in IMPORTED_OPS.values())
