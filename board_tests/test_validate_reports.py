"""validate (metrics against ONNX Runtime, per-layer comparison) and build reports."""
import json
import shutil
import subprocess

import numpy as np
import pytest

from models import EXAMPLES, cli

DIGITS = np.load(EXAMPLES / "digits_data.npz")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("validate")
    np.savez(tmp / "digits.npz", x=DIGITS["x"][:200], y=DIGITS["y"][:200])
    np.save(tmp / "calib.npy", DIGITS["calib"])
    rng = np.random.default_rng(2)
    np.savez(tmp / "noise.npz", x=rng.random((6, 3, 32, 32), dtype=np.float32))
    np.save(tmp / "r8_calib.npy", rng.random((16, 3, 32, 32), dtype=np.float32))
    return tmp


def test_validate_reports_metrics_and_both_accuracies(work):
    r = cli("validate", "--board", "host", "--profile", "standard", "--model", EXAMPLES / "digits_cnn.onnx",
            "--data", work / "digits.npz", "--calib", work / "calib.npy", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    m = report["outputs"]["logits"]
    assert m["cosine"] > 0.999 and m["top1_agreement"] > 0.97 and 0 < m["rel_l2"] < 0.05
    assert m["mae"] > 0 and m["rmse"] >= m["mae"]  # int8 differs from float, RMSE >= MAE always
    assert abs(report["accuracy"] - report["float_accuracy"]) <= 0.01
    assert "accuracy: ours" in r.stderr and "top-1" in r.stderr
    assert report["warnings"] == []
    assert report["isa"] in ("amx", "avx512vnni", "avxvnni", "avx2")  # the x86 kernel variant that ran


def test_validate_per_layer_and_random_input_warning(work):
    r = cli("validate", "--board", "host", "--profile", "standard", "--model", EXAMPLES / "resnet8_fp32.onnx",
            "--data", work / "noise.npz", "--calib", work / "r8_calib.npy", "--per-layer", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "random" in report["warnings"][0] and "warning" in r.stderr
    layers = report["layers"]
    assert [l["op"] for l in layers].count("Conv") == 9
    compared = [l for l in layers if l["cosine"] is not None]
    assert len(compared) >= 14 and all(0.99 < l["cosine"] <= 1.0 + 1e-9 for l in compared)


def test_validate_rejects_bad_data(work):
    np.savez(work / "wrong.npz", x=np.zeros((3, 5), np.float32))
    r = cli("validate", "--board", "host", "--profile", "standard", "--model", EXAMPLES / "digits_cnn.onnx",
            "--data", work / "wrong.npz", "--calib", work / "calib.npy", cwd=work)
    assert r.returncode == 3 and "shape" in r.stderr and "Traceback" not in r.stderr


def test_cortex_m7_build_writes_reports_that_chromium_renders(work):
    out = work / "fw"
    r = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx",
            "--calib", work / "calib.npy", "-o", out, "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    artifacts = json.loads(r.stdout)["artifacts"]
    report = json.loads((out / "report.json").read_text())
    assert report["model"]["name"] == "digits_cnn" and report["model"]["macs"] == 198976
    assert report["memory"]["flash_budget"] == 2 * 1024 * 1024 and report["memory"]["fits"]
    assert [l["op"] for l in report["layers"]].count("Conv") == 4
    assert report["arena"]["peak_live_bytes"] <= report["arena"]["bytes"]
    assert artifacts["report_html"] == str(out / "report.html")
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html  # self-contained
    chromium = shutil.which("chromium")
    assert chromium, "chromium missing: apt-get install chromium"
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={work / 'chrome-profile'}", "--dump-dom", (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert '<h1 id="model-name">digits_cnn</h1>' in dom
    assert 'id="arena-chart"' in dom and dom.count("<rect") >= 10 and 'id="profile-chart"' in dom


def outlier_model(path):
    """A model int8 cannot carry: one huge constant feature sets the activation scale of a
    tensor whose other features are tiny (the next layer ignores the huge one)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    bias = np.zeros(16, np.float32)
    bias[0] = 400.0
    w1 = rng.standard_normal((16, 16)).astype(np.float32)
    w1[:, 0] = 0
    w2 = rng.standard_normal((4, 16)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="outlier_add"),
             helper.make_node("Gemm", ["a", "w1"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1, name="fc2")]
    graph = helper.make_graph(nodes, "outlier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in (("b", bias), ("w1", w1), ("w2", w2))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng


def test_accuracy_target_keeps_the_guilty_layers_in_float(work):
    rng = outlier_model(work / "outlier.onnx")
    np.save(work / "o_calib.npy", rng.standard_normal((32, 16)).astype(np.float32) * 0.1)
    np.savez(work / "o_val.npz", x=rng.standard_normal((32, 16)).astype(np.float32) * 0.1)
    common = ["validate", "--board", "host", "--profile", "standard", "--model", work / "outlier.onnx",
              "--calib", work / "o_calib.npy", "--data", work / "o_val.npz", "--json"]
    plain = cli(*common, cwd=work)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["outputs"]["y"]["cosine"] < 0.5
    fallback = cli(*common, "--accuracy-target", "0.999", cwd=work)
    assert fallback.returncode == 0, fallback.stderr
    report = json.loads(fallback.stdout)
    assert report["outputs"]["y"]["cosine"] >= 0.999
    assert "outlier_add" in report["float_layers"] and "fc1" in report["float_layers"]
    assert "kept in float" in fallback.stderr
    r = cli("build", "--board", "host", "--profile", "standard", "--model", work / "outlier.onnx", "--calib",
            work / "o_calib.npy", "--accuracy-target", "0.999", "-o", work / "mixed", cwd=work)
    assert r.returncode == 0, r.stderr
    assert json.loads((work / "mixed" / "report.json").read_text())["model"]["float_layers"] == report["float_layers"]
    lite = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", work / "outlier.onnx", "--calib",
               work / "o_calib.npy", "--accuracy-target", "0.999", cwd=work)
    # lite has no float: it tries 16x8 layers, which cannot fix an int8 Add, and says so
    assert lite.returncode == 0 and "int16" in lite.stderr and "not reached" in lite.stderr


def wide_outlier_model(path):
    """A Gemm output with one huge feature (that the next layer ignores): int8 cannot carry
    the small features of that tensor, int16 activations can."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((16, 16)).astype(np.float32)
    w0[0] = 0
    b0 = np.zeros(16, np.float32)
    b0[0] = 100.0
    w1 = rng.standard_normal((16, 16)).astype(np.float32)
    w1[:, 0] = 0
    w2 = rng.standard_normal((4, 16)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["a"], transB=1, name="fc0"),
             helper.make_node("Gemm", ["a", "w1"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1, name="fc2")]
    graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in (("w0", w0), ("b0", b0), ("w1", w1),
                                                                          ("w2", w2))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.save(path.with_suffix(".calib.npy"), rng.standard_normal((32, 16)).astype(np.float32) * 0.1)
    np.savez(path.with_suffix(".val.npz"), x=rng.standard_normal((32, 16)).astype(np.float32) * 0.1)


@pytest.mark.slow
def test_lite_accuracy_target_uses_16x8_layers_bit_exact_on_cortex_m7(work):
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.request import CompileRequest
    from cuvil_sdk.profiles import get_profile
    from models import reference_graph
    from cuvil_sdk.reference import run_quantized_model
    model = work / "wide.onnx"
    wide_outlier_model(model)
    common = ["validate", "--board", "cortex-m7", "--profile", "lite", "--model", model, "--calib",
              model.with_suffix(".calib.npy"), "--data", model.with_suffix(".val.npz"), "--json"]
    plain = json.loads(cli(*common, cwd=work).stdout)
    r = cli(*common, "--accuracy-target", "0.999", cwd=work)
    assert r.returncode == 0, r.stderr
    wide = json.loads(r.stdout)
    assert plain["outputs"]["y"]["cosine"] < 0.99 <= 0.999 <= wide["outputs"]["y"]["cosine"]
    assert {"fc0", "fc1"} <= set(wide["int16_layers"]) and "16x8" in r.stderr
    # the 16x8 kernels on the target equal the numpy integer reference bit for bit
    x = np.load(model.with_suffix(".val.npz"))["x"][:8]
    np.save(work / "wide_x.npy", x)
    run = cli("run", "--board", "cortex-m7", "--profile", "lite", "--model", model, "--calib",
              model.with_suffix(".calib.npy"), "--int16-layers", "fc0,fc1", "--input", work / "wide_x.npy",
              "--output", work / "wide_y.npz", cwd=work)
    assert run.returncode == 0, run.stderr
    req = CompileRequest(model=model, board=get_board("cortex-m7"), profile=get_profile("lite"),
                         calib=str(model.with_suffix(".calib.npy")), int16_layers=["fc0", "fc1"])
    g = reference_graph(req)
    assert {g.tensors[n.outputs[0]].dtype for n in g.nodes if n.name in ("fc0", "fc1")} == {"int16"}
    ref = np.stack([run_quantized_model(g, {"x": x[i:i + 1]})[1]["y"] for i in range(len(x))])
    assert np.array_equal(np.load(work / "wide_y.npz")["y"], ref)


@pytest.mark.slow
def test_per_layer_on_cortex_m7_equals_host(work):
    """Per-layer dumps come from the firmware itself (semihosting) and, being bit-exact,
    give the same per-layer figures as the host build."""
    rows = {}
    for board, profile in (("cortex-m7", "lite"), ("host", "lite")):
        r = cli("validate", "--board", board, "--profile", profile, "--model", EXAMPLES / "resnet8_fp32.onnx",
                "--data", work / "noise.npz", "--calib", work / "r8_calib.npy", "--per-layer", "--json", cwd=work)
        assert r.returncode == 0, r.stderr
        rows[board] = json.loads(r.stdout)["layers"]
    assert len(rows["cortex-m7"]) == 16  # every layer but the Reshape alias
    assert all(l["cosine"] is not None and l["cosine"] > 0.99 for l in rows["cortex-m7"])
    assert [l["cosine"] for l in rows["cortex-m7"]] == [l["cosine"] for l in rows["host"]]


def test_validate_keeps_its_builds_and_layer_values_where_o_says(work):
    """validate -o DIR (issue 38, defect 11: the README said -o works in every command, validate
    refused it): the build in DIR, the per-layer debug build and the layers' values in DIR/per-layer."""
    out = work / "kept"
    r = cli("validate", "--board", "host", "--profile", "standard", "--model", EXAMPLES / "digits_cnn.onnx",
            "--data", work / "digits.npz", "--calib", work / "calib.npy", "--per-layer", "-o", out, "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert (out / "build" / "libdigits_cnn.so").is_file() and json.loads((out / "manifest.json").read_text())
    assert (out / "per-layer" / "build" / "libdigits_cnn.so").is_file()
    values = np.load(out / "per-layer" / "layers.npz")
    compared = [l for l in report["layers"] if l["cosine"] is not None]
    ours_keys = [k for k in values.files if not k.startswith("onnxruntime/")]
    assert compared and len(ours_keys) == len(compared)
    for key in ours_keys:
        ours, ref = values[key], values[f"onnxruntime/{key}"]
        assert ours.shape == ref.shape and len(ours) == 16  # the per-layer subset of the 200 samples


def test_per_layer_compares_a_bool_tensor_named_like_its_node(work):
    """An exporter named a bool Equal output like its node; the per-layer ONNX Runtime graph declared
    every extra output float and ORT refused it (issue 39): each extra output now has its own type."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros((1,), np.float32), "zero")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["r"], name="relu"),
             helper.make_node("Equal", ["r", "zero"], ["eq"], name="eq"),
             helper.make_node("Where", ["eq", "m", "r"], ["y"], name="where")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), work / "eq.onnx")
    np.savez(work / "eq.npz", x=rng.standard_normal((8, 1, 8)).astype(np.float32))
    np.save(work / "eq_calib.npy", rng.standard_normal((8, 1, 8)).astype(np.float32))
    r = cli("validate", "--board", "host", "--profile", "standard", "--model", work / "eq.onnx", "--data",
            work / "eq.npz", "--calib", work / "eq_calib.npy", "--per-layer", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    by_op = {l["op"]: l for l in json.loads(r.stdout)["layers"]}
    assert by_op["Equal"]["cosine"] is not None and by_op["Equal"]["cosine"] > 0.9  # int8 moves a few values off 0
