"""Hostile or wrong input files (issue 38, defects 6, 7, 9 and 12), each refused in one line with
its exit code before any build: a forged .npy header that claims far more data than the file
holds, an .npz whose arrays do not fit the model, a negative external-data offset or length,
labels that are no class indices, and a model of an opset newer than the SDK implements."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
DIGITS = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"
DATA = EXAMPLES / "digits_data.npz"  # x (N, 1, 8, 8) float32, y (N,) int64 class indices of 10


def cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def one_error_line(r: subprocess.CompletedProcess, code: int) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code, r.stderr
    assert lines and lines[-1].startswith("cuvil-sdk: error: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    return lines[-1][len("cuvil-sdk: error: "):]


def forged_npy(path: Path, shape: tuple, body: int = 64) -> Path:
    """A .npy whose header declares `shape` of float32 but holds `body` bytes."""
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (118 - len(header)) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * body)
    return path


def run_on(tmp: Path, data: Path) -> subprocess.CompletedProcess:
    return cli(tmp, "run", "--board", "host", "--profile", "standard", "--model", DIGITS, "--calib", CALIB,
               "--input", data, "--output", tmp / "o.npz", "--json")


def test_a_header_claiming_238_gib_is_refused_before_reading(tmp_path):
    started = time.monotonic()
    r = run_on(tmp_path, forged_npy(tmp_path / "huge.npy", (100000000, 1, 8, 8)))
    message = one_error_line(r, 3)
    assert "huge.npy" in message and "(100000000, 1, 8, 8)" in message and "holds 64 bytes" in message
    assert json.loads(r.stdout)["exit_code"] == 3
    assert time.monotonic() - started < 60 and not (tmp_path / "o.npz").exists()


def test_a_calibration_file_with_a_forged_header_is_refused(tmp_path):
    r = cli(tmp_path, "compile", DIGITS, "--board", "host", "--profile", "standard", "--calib",
            forged_npy(tmp_path / "cal.npy", (2**40, 64)), "-o", tmp_path / "out")
    assert "cal.npy" in one_error_line(r, 3) and not (tmp_path / "out").exists()


def test_arrays_of_the_wrong_shape_are_refused_by_their_header_naming_file_and_shape(tmp_path):
    np.save(tmp_path / "wrong.npy", np.zeros((5, 3, 8, 8), np.float32))
    message = one_error_line(run_on(tmp_path, tmp_path / "wrong.npy"), 3)
    assert "wrong.npy" in message and "(5, 3, 8, 8)" in message and "(1, 1, 8, 8) or (N, 1, 8, 8)" in message


def test_an_npz_that_expands_past_the_bound_is_refused_unread(tmp_path, monkeypatch):
    """0.5 MiB on disk, 64 MiB once inflated: over a bound of 16 MiB (CUVIL_MAX_DATA_BYTES; by
    default half the machine's memory) it is refused by its declared sizes, never inflated."""
    x = np.zeros((262144, 1, 8, 8), np.float32)
    np.savez_compressed(tmp_path / "bomb.npz", x=x)
    assert (tmp_path / "bomb.npz").stat().st_size < 1 << 20
    monkeypatch.setenv("CUVIL_MAX_DATA_BYTES", str(16 << 20))
    message = one_error_line(run_on(tmp_path, tmp_path / "bomb.npz"), 3)
    assert "bomb.npz" in message and "split it" in message


def test_an_npz_member_whose_header_claims_more_than_its_size_is_refused(tmp_path):
    header_file = forged_npy(tmp_path / "x.npy", (1000000, 1, 8, 8))
    with zipfile.ZipFile(tmp_path / "forged.npz", "w") as z:
        z.write(header_file, "x.npy")
    message = one_error_line(run_on(tmp_path, tmp_path / "forged.npz"), 3)
    assert "forged.npz" in message and "array 'x'" in message


def external_model(tmp: Path, offset: str, length: str | None) -> Path:
    m = onnx.load(str(DIGITS))
    t = m.graph.initializer[0]
    raw = numpy_helper.to_array(t).tobytes()
    (tmp / "w.bin").write_bytes(raw)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.bin"), ("offset", offset), ("length", length or str(len(raw)))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    onnx.save(m, str(tmp / "ext.onnx"))
    return tmp / "ext.onnx"


@pytest.mark.parametrize("offset,length,said", [("-16", None, "offset -16"), ("0", "-4", "length -4"),
                                                ("abc", None, "offset 'abc'"), ("8", None, "past the end")])
def test_external_data_out_of_its_file_is_a_model_error(tmp_path, offset, length, said):
    model = external_model(tmp_path, offset, length)
    r = cli(tmp_path, "compile", model, "--board", "host", "--profile", "standard", "--calib", CALIB,
            "-o", tmp_path / "out")
    message = one_error_line(r, 3)
    assert said in message and "w.bin" in message


def validate_with_labels(tmp: Path, y: np.ndarray) -> subprocess.CompletedProcess:
    data = np.load(DATA)
    np.savez(tmp / "val.npz", x=data["x"][:20], y=y)
    return cli(tmp, "validate", "--board", "host", "--profile", "standard", "--model", DIGITS, "--calib", CALIB,
               "--data", tmp / "val.npz", "--json")


@pytest.mark.parametrize("labels,said", [
    (np.full(20, 0.5, np.float32), "float32: class indices are integers"),
    (np.full(20, 3.0, np.float64), "float64: class indices are integers"),
    (np.full(20, -1, np.int64), "label -1 of sample 0 is not a class"),
    (np.r_[np.zeros(19, np.int64), 10], "label 10 of sample 19 is not a class"),
    (np.zeros((20, 10), np.float32), "not one-hot rows"),
    (np.zeros((20, 3), np.int64), "have shape (20, 3)"),
    (np.zeros(19, np.int64), "19 labels for 20 samples"),
])
def test_labels_that_are_no_class_indices_are_refused_before_the_build(tmp_path, labels, said):
    started = time.monotonic()
    message = one_error_line(validate_with_labels(tmp_path, labels), 3)
    assert said in message and "val.npz" in message
    assert time.monotonic() - started < 30  # refused before any build (a build takes longer)
    assert not list(tmp_path.glob("cuvil-build*"))


@pytest.mark.slow
def test_one_hot_labels_are_taken_as_their_class_indices(tmp_path):
    y = np.load(DATA)["y"][:20]
    one_hot = validate_with_labels(tmp_path, np.eye(10, dtype=np.float32)[y])
    indices = validate_with_labels(tmp_path, y)
    assert one_hot.returncode == 0 and indices.returncode == 0, one_hot.stderr + indices.stderr
    assert "one-hot" in one_hot.stderr
    assert json.loads(one_hot.stdout)["accuracy"] == json.loads(indices.stdout)["accuracy"] > 0.8


@pytest.mark.parametrize("opset,said", [(22, "declares opset 22;"), (99, "opset 99, which no ONNX release defines")])
def test_a_model_of_a_newer_opset_builds_with_a_warning(tmp_path, opset, said):
    m = onnx.load(str(DIGITS))
    m.opset_import[0].version = opset
    onnx.save(m, str(tmp_path / "newer.onnx"))
    r = cli(tmp_path, "compile", tmp_path / "newer.onnx", "--board", "host", "--profile", "standard", "--calib", CALIB,
            "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    warnings = [l for l in r.stderr.splitlines() if l.startswith("cuvil-sdk: warning:") and "opset" in l]
    assert len(warnings) == 1 and said in warnings[0] and "up to opset 21" in warnings[0]


def test_a_model_of_an_implemented_opset_builds_without_that_warning(tmp_path):
    assert onnx.load(str(DIGITS)).opset_import[0].version <= 21
    r = cli(tmp_path, "compile", DIGITS, "--board", "host", "--profile", "standard", "--calib", CALIB,
            "-o", tmp_path / "out")
    assert r.returncode == 0 and "opset" not in r.stderr, r.stderr
