"""Whole example models as Cortex-M7 firmware under QEMU (lite profile)."""
import json
import shutil
import subprocess

import numpy as np
import onnx
import pytest

from cuvil_sdk.reference import run_quantized_model

from models import EXAMPLES, cli, cli_run, reference_graph, request

RNG = np.random.default_rng(5)
DIGITS = np.load(EXAMPLES / "digits_data.npz")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("m7-models")
    np.save(tmp / "digits_calib.npy", DIGITS["calib"])
    np.save(tmp / "r8_calib.npy", RNG.random((16, 3, 32, 32), dtype=np.float32))
    np.save(tmp / "ad_calib.npy", RNG.random((16, 640), dtype=np.float32))
    return tmp


def reference_outputs(req, x):
    g = reference_graph(req)
    return np.stack([run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])


def test_digits_firmware_equals_host_lite_and_reference(work):
    x, y = DIGITS["x"][:120], DIGITS["y"][:120]
    m7, report = cli_run(work, "cortex-m7", "lite", "digits_cnn.onnx", x, work / "digits_calib.npy")
    host, _ = cli_run(work, "host", "lite", "digits_cnn.onnx", x, work / "digits_calib.npy")
    assert np.array_equal(m7["logits"], host["logits"])
    ref = reference_outputs(request("digits_cnn.onnx", "cortex-m7", "lite", work / "digits_calib.npy"), x)
    assert np.array_equal(m7["logits"], ref)
    assert (m7["logits"].argmax(-1).ravel() == y).mean() == (host["logits"].argmax(-1).ravel() == y).mean()
    assert report["instructions"] > 0 and report["flash_bytes"] > report["weight_bytes"]
    assert 0 < report["arena_bytes"] <= report["ram_bytes"]


def test_instruction_counts_are_deterministic(work):
    x = DIGITS["x"][:3]
    _, first = cli_run(work, "cortex-m7", "lite", "digits_cnn.onnx", x, work / "digits_calib.npy")
    _, second = cli_run(work, "cortex-m7", "lite", "digits_cnn.onnx", x, work / "digits_calib.npy")
    assert first["instructions_per_sample"] == second["instructions_per_sample"]
    assert first["instructions"] == second["instructions"] > 0


@pytest.mark.parametrize("model,calib,shape", [("resnet8_fp32.onnx", "r8_calib.npy", (3, 32, 32)),
                                               ("ad_fp32.onnx", "ad_calib.npy", (640,))])
def test_mlperf_tiny_models_fit_and_run_bit_exact(work, model, calib, shape):
    x = RNG.random((2, *shape), dtype=np.float32)
    outs, report = cli_run(work, "cortex-m7", "lite", model, x, work / calib)
    assert report["fits"] if "fits" in report else report["flash_bytes"] <= 2 * 1024 * 1024
    assert report["ram_bytes"] <= 512 * 1024
    ref = reference_outputs(request(model, "cortex-m7", "lite", work / calib), x)
    assert np.array_equal(list(outs.values())[0], ref)


def test_too_large_for_the_small_board_fails_with_a_size_report(work):
    small = ["build", "--board", "cortex-m7-small", "--profile", "lite", "--model", EXAMPLES / "resnet8_fp32.onnx",
             "--calib", work / "r8_calib.npy", "-o", work / "small"]
    # the arena cannot fit the board's RAM even in row bands: said before any C is built
    r = cli(*small, cwd=work)
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("cuvil-sdk: error: the model does not fit board 'cortex-m7-small': its arena needs "), line
    assert "the board's RAM leaves 12288 B" in line and "Traceback" not in r.stderr  # 16 KiB less the 4 KiB stack
    assert not (work / "small").exists() and not (work / "small.partial").exists()
    # an arena budget above the RAM: the link overflows; the build is removed, but its link map
    # (what took the space) is kept, and the error says where
    r = cli(*small, "--arena-budget", "1000000", cwd=work)
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("cuvil-sdk: error: the model does not fit board 'cortex-m7-small': "), line
    assert "RAM overflowed by " in line and "resnet8_fp32_arena" in line and "Traceback" not in r.stderr
    kept = work / "small" / "failed-build" / "resnet8_fp32.map"
    assert line.endswith(f"; the link map is kept in {kept}") and kept.is_file()
    assert "Memory Configuration" in kept.read_text()
    assert [p.name for p in (work / "small").iterdir()] == ["failed-build"] and not (work / "small.partial").exists()
    # the folder is still ours: the next build into it replaces it
    ok = cli("build", "--board", "cortex-m7-small", "--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx",
             "--calib", work / "digits_calib.npy", "-o", work / "small", cwd=work)
    assert ok.returncode == 0, ok.stderr
    assert not (work / "small" / "failed-build").exists() and (work / "small" / "manifest.json").is_file()


def test_lite_refuses_float_precision_and_dynamic_shapes(work):
    r = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx",
            "--precision", "fp32", cwd=work)
    assert r.returncode == 2 and "fp32" in r.stderr and "lite" in r.stderr
    model = onnx.load(EXAMPLES / "digits_cnn.onnx")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(model, work / "dynamic.onnx")
    r = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", work / "dynamic.onnx", "--calib",
            work / "digits_calib.npy", cwd=work)
    assert r.returncode == 3 and "image" in r.stderr and "--input-shape" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_firmware_has_no_malloc_free_or_printf(work):
    r = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx",
            "--calib", work / "digits_calib.npy", "-o", work / "fw", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    elf = json.loads(r.stdout)["artifacts"]["elf"]
    nm = shutil.which("arm-none-eabi-nm")
    assert nm, "arm-none-eabi-nm missing: apt-get install binutils-arm-none-eabi"
    symbols = {line.split()[-1] for line in subprocess.run([nm, elf], capture_output=True, text=True,
                                                           check=True).stdout.splitlines() if line.strip()}
    assert not symbols & {"malloc", "free", "calloc", "realloc", "_sbrk", "printf", "_malloc_r", "_free_r"}
    assert "digits_cnn_run_int8" in symbols and "digits_cnn_arena" in symbols
