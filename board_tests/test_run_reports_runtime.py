"""run on every kind of board reports what a user needs (per-layer profile in report.html on
QEMU firmware, time per inference on host and rpi5), the outputs file is exactly the one
named, the Python runtime has no traps, and a build over budget keeps its link map."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from models import EXAMPLES, cli

DIGITS = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"
X = np.load(EXAMPLES / "digits_data.npz")["x"][:5]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runrep")
    np.save(tmp / "x.npy", X)
    return tmp


def run(work, board, profile, *extra):
    r = cli("run", "--board", board, "--profile", profile, "--model", DIGITS, "--calib", CALIB, "--input",
            work / "x.npy", "--json", *extra, cwd=work)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r


@pytest.fixture(scope="module")
def host_build(work):
    """The digits CNN run on host with -o: the kept library and the outputs of `cuvil-sdk run`."""
    report, _ = run(work, "host", "lite", "--output", work / "host.npy", "-o", work / "host")
    return report


def test_output_is_exactly_the_file_named(work, host_build):
    assert host_build["outputs"] == str(work / "host.npy")
    assert (work / "host.npy").is_file() and not (work / "host.npy.npz").exists()
    assert np.load(work / "host.npy")["logits"].shape == (5, 1, 10)  # (N, *output shape), stacked


def test_host_run_reports_time_per_inference(host_build):
    assert host_build["time_per_inference_us"] > 0 and host_build["timing_repeats"] >= 3
    assert "wall-clock" in host_build["timing_note"]
    assert "instructions" not in host_build


def test_host_run_reports_the_kernel_variant_the_library_chose(work, host_build):
    """run --json's isa is what the library itself says (runtime model.isa) on this CPU."""
    from cuvil_sdk import runtime
    with runtime.load(next((work / "host" / "build").glob("lib*.so"))) as model:
        assert host_build["isa"] == model.isa and model.isa in ("amx", "avx512vnni", "avxvnni", "avx2")


def test_runtime_returns_the_array_and_takes_a_sample_axis(work, host_build):
    from cuvil_sdk import runtime
    cli_logits = np.load(work / "host.npy")["logits"]
    with runtime.load(host_build["artifacts"]["so"]) as model:
        one = model(X[0:1])  # the input's own shape: one sample, and outputs without a sample axis
        assert isinstance(one, np.ndarray) and one.shape == (1, 10)
        batch = model(X)  # (5, 1, 8, 8): five samples, as on the CLI, stacked as (N, *output shape)
        assert isinstance(batch, np.ndarray) and batch.shape == (5, 1, 10)
        assert cli_logits.shape == (5, 1, 10) and np.array_equal(batch, cli_logits)
        assert np.array_equal(np.argmax(model(X), axis=-1), np.argmax(cli_logits, axis=-1))
        stacked = model(X[:, None])  # (5, 1, 1, 8, 8): (N, *input shape), the same outputs
        assert stacked.shape == (5, 1, 10) and np.array_equal(stacked, cli_logits)
        assert list(model.run(X)) == ["logits"] and np.array_equal(model.run(X)["logits"], cli_logits)
        from cuvil_sdk.errors import ModelError
        with pytest.raises(ModelError, match=r"shape \(5, 8, 8\), expected \(1, 1, 8, 8\) or \(N, 1, 8, 8\)"):
            model(X[:, 0])


def test_runtime_batch_is_one_c_call_and_out_writes_in_place(work, host_build):
    """A batch runs in one call of <name>_run_batch and equals the samples run one by one;
    out= fills the caller's array (and is what the call returns); int8 batches likewise."""
    from cuvil_sdk import runtime
    from cuvil_sdk.errors import UsageError
    with runtime.load(host_build["artifacts"]["so"]) as model:
        calls = []
        batch_fn = model._run_fn
        model._run_fn = lambda *args: calls.append(args[1]) or batch_fn(*args)
        batch = model(X)
        assert calls == [len(X)]
        assert np.array_equal(batch, np.stack([model(X[i:i + 1]) for i in range(len(X))]))
        out = np.full((len(X), 1, 10), np.nan, dtype=np.float32)
        assert model(X, out=out) is out and np.array_equal(out, batch)
        with pytest.raises(UsageError, match="out= for 'logits' must be"):
            model(X, out=np.empty((len(X), 1, 9), dtype=np.float32))
        frozen = np.array(X)
        frozen.setflags(write=False)  # a read-only input takes the slower pointer path, same result
        assert np.array_equal(model(frozen), batch)
        assert model(X[:0]).shape == (0, 1, 10)
        q = np.clip(np.round(X / model.input_scales[0][0]) + model.input_scales[0][1], -128, 127).astype(np.int8)
        raw = model.run_int8(q)["logits"]
        assert raw.dtype == np.int8 and np.array_equal(raw[2], model.run_int8(q[2:3])["logits"])


def test_runtime_reuses_the_pointers_of_refilled_arrays(host_build):
    """The fast path keeps the pointers of the last input and out= arrays: refilled in place,
    they run on their new contents; model(x) returns a distinct array each call; an array
    reshaped in place, or the same out= array for another batch size, is checked again; a
    closed model says so instead of crashing."""
    from cuvil_sdk import runtime
    from cuvil_sdk.errors import ModelError, UsageError
    with runtime.load(host_build["artifacts"]["so"]) as model:
        want = model(X)  # (5, 1, 10): each sample's output (1, 10)
        x, y = np.empty((1, 1, 8, 8), dtype=np.float32), np.empty((1, 10), dtype=np.float32)
        for i in range(len(X)):
            x[...] = X[i:i + 1]
            assert model(x, out=y) is y and np.array_equal(y, want[i])
        # model(x)'s new arrays come from slabs: each handed out once, kept ones never overwritten
        kept = [model(X[i % 5][None]) for i in range(3 * runtime.SLAB_ARRAYS)]
        assert all(np.array_equal(k, want[i % 5]) for i, k in enumerate(kept))
        assert len({k.ctypes.data for k in kept}) == len(kept)
        with pytest.raises(UsageError, match="out= for 'logits' must be"):
            model(np.array(X), out=y)  # five samples into a one-sample array
        x.shape = (1, 64)
        with pytest.raises(ModelError, match=r"shape \(1, 64\)"):
            model(x)
    with pytest.raises(UsageError, match="the model is closed"):
        model(X[0:1])


def test_runtime_threads_each_get_an_arena(host_build):
    from cuvil_sdk import runtime
    with runtime.load(host_build["artifacts"]["so"]) as model:
        want = [model(x[None]) for x in X]
        got: dict[int, list] = {}

        def worker(k: int) -> None:
            got[k] = [model(X[(i + k) % 5][None]) for i in range(50)]
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k, results in got.items():
        assert all(np.array_equal(r, want[(i + k) % 5]) for i, r in enumerate(results))


def two_output_model(path):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 8)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w"], ["scores"], transB=1, name="fc"),
             helper.make_node("Relu", ["scores"], ["positive"], name="relu")]
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 6]),
                               helper.make_tensor_value_info("positive", TensorProto.FLOAT, [1, 6])],
                              [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.standard_normal((16, 8)).astype(np.float32)


def test_runtime_returns_a_dict_for_several_outputs(work):
    from cuvil_sdk import runtime
    x = two_output_model(work / "two.onnx")
    np.save(work / "two_calib.npy", x)
    np.save(work / "two_x.npy", x[:3])
    r = cli("run", "--board", "host", "--profile", "standard", "--model", work / "two.onnx", "--calib",
            work / "two_calib.npy", "--input", work / "two_x.npy", "--output", work / "two_y.npz", "-o",
            work / "two", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    want = np.load(work / "two_y.npz")
    with runtime.load(json.loads(r.stdout)["artifacts"]["so"]) as model:
        got = model(x[:3])
    assert isinstance(got, dict) and list(got) == ["scores", "positive"]
    assert all(np.array_equal(got[k], want[k]) for k in got)


def chromium_dom(html, profile_dir) -> str:
    chromium = shutil.which("chromium")
    assert chromium, "chromium missing: apt-get install chromium"
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile_dir}", "--dump-dom", html.as_uri()],
                          capture_output=True, text=True, timeout=120).stdout


def test_m7_run_with_out_dir_rewrites_the_report_with_the_profile(work, host_build):
    report, r = run(work, "cortex-m7", "lite", "--output", work / "m7.npz", "-o", work / "m7")
    assert report["report_html"] == str(work / "m7" / "report.html")
    saved = json.loads((work / "m7" / "report.json").read_text())
    assert saved["profiled"] is True
    assert [l.get("instructions") for l in saved["layers"]] == [l["instructions"] for l in report["layers"]]
    # int8 outputs are bit-identical across targets: the firmware's equal the host library's
    assert np.array_equal(np.load(work / "m7.npz")["logits"], np.load(work / "host.npy")["logits"])
    memory = {row["what"]: row for row in saved["memory"]["summary"]["rows"]}
    assert memory["flash"]["budget_kib"] == 2048.0 and memory["RAM"]["budget_kib"] == 512.0
    assert memory["flash"]["share_percent"] == round(100 * saved["memory"]["flash_bytes"] / (2048 * 1024), 2)
    assert 0 < memory["flash"]["harness_kib"] < memory["flash"]["model_kib"]
    weights = saved["weights"]
    assert weights["stored_bytes"] > weights["int8_layout_bytes"] > 0 and "int16" in weights["note"]
    dom = chromium_dom(work / "m7" / "report.html", work / "chrome-m7")
    assert 'id="profile-chart"' in dom and "Not profiled" not in dom
    assert "guest instructions</text>" in dom and "layer (index in the table below)</text>" in dom
    assert "bytes live in the arena</text>" in dom and re.search(r">\d+\.\d KiB</text>", dom)
    assert "share of budget" in dom and "int16" in dom


def test_long_layer_names_are_shortened_with_the_full_name_on_hover(work):
    r = cli("build", "--board", "host", "--profile", "lite", "--model", EXAMPLES / "resnet8_fp32.onnx", "--calib",
            "random", "-o", work / "r8", cwd=work)
    assert r.returncode == 0, r.stderr
    names = [l["name"] for l in json.loads((work / "r8" / "report.json").read_text())["layers"]]
    long_name = max(names, key=len)
    assert len(long_name) > 40
    dom = chromium_dom(work / "r8" / "report.html", work / "chrome-r8")
    shown = dict(re.findall(r'<td class="t name" title="([^"]*)">([^<]*)</td>', dom))  # title -> text
    assert set(shown) == set(names)  # every layer has its full name as the cell's title
    assert len(shown[long_name]) == 36 and "\u2026" in shown[long_name]
    assert all(shown[n] == n for n in names if len(n) <= 36)


def test_rpi5_run_reports_emulated_time(work):
    report, _ = run(work, "rpi5", "standard", "--output", work / "rpi5.npz")
    assert report["time_per_inference_us"] > 0 and report["timing_repeats"] == 10
    assert "emulated" in report["timing_note"] and "qemu-aarch64" in report["timing_note"]


def test_build_without_model_says_it_builds_the_example(work):
    r = cli("build", "--board", "host", "--profile", "lite", "-o", work / "example", cwd=work)
    assert r.returncode == 0, r.stderr
    assert "cuvil-sdk: note: no --model given: building the bundled example digits_cnn.onnx" in r.stderr
