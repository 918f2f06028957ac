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
    np.savez(tmp / "digits.npz", x=DIGITS["x_test"][:200], y=DIGITS["y_test"][:200])
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
