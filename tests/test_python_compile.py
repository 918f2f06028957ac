"""cuvil_sdk.compile(model, example_inputs, board=...): the seeds' form of the Python API. Its
callable gives exactly what `cuvil-sdk run` gives for the same model and calibration; a model
of the wrong kind, and a torch.nn.Module without torch, are one clear UsageError each."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import cuvil_sdk
from cuvil_sdk.errors import UsageError

# sdk/examples/digits_cnn.onnx and digits_data.npz: the bundled example (trained digits CNN)
EXAMPLES = Path(cuvil_sdk.PACKAGE_DIR) / "examples"
CLI = Path(sys.executable).with_name("cuvil-sdk")


def test_compile_of_a_model_proto_equals_cuvil_sdk_run(tmp_path, monkeypatch):
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:16].astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    model = tmp_path / "digits_cnn.onnx"
    shutil.copy(EXAMPLES / "digits_cnn.onnx", model)
    # the CLI, calibrated on the same samples the Python call takes as its example inputs
    subprocess.run([str(CLI), "run", "--board", "host", "--profile", "standard", "--model", str(model),
                    "--calib", str(tmp_path / "x.npy"), "--input", str(tmp_path / "x.npy"),
                    "--output", str(tmp_path / "y.npz"), "-o", str(tmp_path / "cli")], check=True,
                   capture_output=True)
    want = dict(np.load(tmp_path / "y.npz"))
    monkeypatch.chdir(tmp_path)  # compile() builds under ./cuvil-build by default, as `build` does
    compiled = cuvil_sdk.compile(onnx.load(str(model)), x, board="host")
    got = compiled(x)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].shape == want[name].shape
        np.testing.assert_array_equal(got[name], want[name])
    assert (tmp_path / "cuvil-build" / "model-host-standard" / "model" / "model.onnx").is_file()
    one = compiled(x[3][None])  # one sample, shaped exactly as the input
    np.testing.assert_array_equal(one[next(iter(want))][0], want[next(iter(want))][3])


def test_compile_refuses_a_model_of_another_kind(tmp_path):
    with pytest.raises(UsageError, match="model must be an ONNX file path, an onnx.ModelProto or a "
                                         "torch.nn.Module, not int"):
        cuvil_sdk.compile(42, np.zeros((1, 1, 8, 8), np.float32), board="host", out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_a_torch_module_without_torch_names_the_missing_package(tmp_path, monkeypatch):
    # a class that looks like torch.nn.Module by its ancestry, in a Python where torch will not import
    module_base = type("Module", (), {"__module__": "torch.nn.modules.module"})
    net = type("Net", (module_base,), {})()
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(UsageError, match=r"compiling a torch.nn.Module needs PyTorch: pip install torch onnxscript"):
        cuvil_sdk.compile(net, np.zeros((1, 1, 8, 8), np.float32), board="host", out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_compile_options_are_checked_like_the_cli(tmp_path):
    with pytest.raises(UsageError, match=r"precision 'int4' is not allowed by profile 'standard' "
                                         r"\(allowed: int8, fp32, fp16\)"):
        cuvil_sdk.compile(EXAMPLES / "digits_cnn.onnx", np.zeros((1, 1, 8, 8), np.float32), board="host",
                          precision="int4", out_dir=tmp_path / "o")
    with pytest.raises(UsageError, match="unknown option 'calibration'"):
        cuvil_sdk.build(EXAMPLES / "digits_cnn.onnx", board="host", calibration="random")
