"""The everyday commands without traps: one exit code and message per kind of bad input,
refusals before any work, --json errors, closed pipes, and data that is not finite.
Nothing here builds: every case fails (or compiles) before SCons would run."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
DIGITS = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"


def cli(cwd: Path, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cuvil-sdk: error: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    return lines[0][len("cuvil-sdk: error: "):]


def run_host(tmp: Path, *extra) -> subprocess.CompletedProcess:
    return cli(tmp, "run", "--board", "host", "--profile", "lite", "--model", DIGITS, "--calib", CALIB, *extra)


# --- missing and unreadable files: exit 3, one message form -------------------------------
@pytest.mark.parametrize("option", ["--calib", "--input", "--data", "model"])
def test_every_missing_input_file_is_exit_3_with_one_message(tmp_path, option):
    missing = tmp_path / "missing.npz"
    if option == "--calib":
        r = cli(tmp_path, "compile", DIGITS, "--board", "host", "--profile", "lite", "--calib", missing)
    elif option == "--input":
        r = run_host(tmp_path, "--input", missing, "--output", tmp_path / "y.npz")
    elif option == "--data":
        r = cli(tmp_path, "validate", "--board", "host", "--profile", "lite", "--model", DIGITS, "--calib", CALIB,
                "--data", missing)
    else:
        r = cli(tmp_path, "compile", missing, "--board", "host", "--profile", "lite", "--calib", CALIB)
    assert r.returncode == 3
    what = "model" if option == "model" else option
    assert one_error_line(r) == f"{what} file '{missing}' does not exist"


def test_a_text_file_named_npy_is_not_a_numpy_file(tmp_path):
    (tmp_path / "calib.npy").write_text("1 2 3\n")
    r = cli(tmp_path, "compile", DIGITS, "--board", "host", "--profile", "lite", "--calib", tmp_path / "calib.npy")
    assert r.returncode == 3
    assert one_error_line(r) == "'calib.npy' is not a NumPy file (.npy or .npz)"


# --- data that is not finite --------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_calibration_data_is_refused_naming_the_sample(tmp_path, bad):
    calib = np.load(CALIB)
    calib[17, 0, 4, 4] = bad
    calib[30, 0, 0, 0] = bad
    np.save(tmp_path / "calib.npy", calib)
    r = cli(tmp_path, "compile", DIGITS, "--board", "host", "--profile", "lite", "--calib", tmp_path / "calib.npy",
            "-o", tmp_path / "out")
    assert r.returncode == 3
    assert one_error_line(r) == "'calib.npy': sample 17 has NaN or Inf values; data must be finite"
    assert not (tmp_path / "out").exists()
    assert "RuntimeWarning" not in r.stderr


def test_non_finite_run_input_is_refused_before_the_build(tmp_path):
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:4].copy()
    x[2, 0, 1, 1] = np.inf
    np.save(tmp_path / "x.npy", x)
    r = run_host(tmp_path, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npz", "-o", tmp_path / "out")
    assert r.returncode == 3
    assert one_error_line(r) == "'x.npy': sample 2 has NaN or Inf values; data must be finite"
    assert not (tmp_path / "y.npz").exists() and not (tmp_path / "out").exists()


def test_non_finite_validation_data_is_refused(tmp_path):
    data = np.load(EXAMPLES / "digits_data.npz")
    x = data["x"][:6].copy()
    x[5, 0, 7, 7] = np.nan
    np.savez(tmp_path / "val.npz", x=x, y=data["y"][:6])
    r = cli(tmp_path, "validate", "--board", "host", "--profile", "lite", "--model", DIGITS, "--calib", CALIB,
            "--data", tmp_path / "val.npz")
    assert r.returncode == 3
    assert one_error_line(r) == "'val.npz': array 'x' sample 5 has NaN or Inf values; data must be finite"


# --- shapes -------------------------------------------------------------------------------
def test_shape_errors_use_plain_notation(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 8, 8), np.float32))
    r = run_host(tmp_path, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npz")
    assert r.returncode == 3
    assert one_error_line(r) == ("input data 'x.npy': array for 'image' has shape (3, 8, 8), expected (1, 1, 8, 8) or "
                                 "(N, 1, 8, 8)")


def batch4_model(path: Path) -> Path:
    """The digits CNN with a dynamic batch dimension, to be fixed with --input-shape."""
    model = onnx.load(DIGITS)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    for output in model.graph.output:
        output.type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("shape", [(4, 1, 8, 8), (3, 4, 1, 8, 8)], ids=["one-sample", "three-samples"])
def test_calibration_matching_input_shape_is_accepted(tmp_path, shape):
    model = batch4_model(tmp_path / "b.onnx")
    np.save(tmp_path / "calib.npy", np.load(CALIB)[:int(np.prod(shape[:-3]))].reshape(shape))
    r = cli(tmp_path, "compile", model, "--board", "host", "--profile", "lite", "--calib", tmp_path / "calib.npy",
            "--input-shape", "image=4x1x8x8", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    np.save(tmp_path / "bad.npy", np.zeros((2, 1, 8, 8), np.float32))
    r = cli(tmp_path, "compile", model, "--board", "host", "--profile", "lite", "--calib", tmp_path / "bad.npy",
            "--input-shape", "image=4x1x8x8", "-o", tmp_path / "out2")
    assert r.returncode == 3
    assert one_error_line(r).endswith("has shape (2, 1, 8, 8), expected (4, 1, 8, 8) or (N, 4, 1, 8, 8)")


# --- refused before any work --------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["validate", "--board", "rpi5", "--profile", "standard", "--data", "d.npz", "--per-layer"],
     "--per-layer needs per-layer dumps, which board 'rpi5' cannot give yet"),
    (["run", "--board", "nucleo-f767zi", "--profile", "lite", "--input", "x.npy", "--output", "y.npz"],
     "run needs a board that runs here; board 'nucleo-f767zi' does not"),
    (["build", "--board", "host", "--profile", "lite", "--output", "out"],
     "`build` takes its output folder as -o/--out-dir DIR; --output names the outputs file of `cuvil-sdk run`"),
    (["build", "--board", "host", "--profile", "standard", "--precision", "fp32", "--accuracy-target", "0.99"],
     "--accuracy-target applies to int8 builds, not --precision fp32"),
    (["build", "--board", "host", "--profile", "lite", "--run"],
     "--run runs the bundled example; use `cuvil-sdk run` for your own model"),
])
def test_impossible_combinations_are_refused_before_any_work(tmp_path, args, needle):
    if "--run" in args:
        args = args + ["--model", DIGITS]
    elif args[0] in ("run", "validate"):
        args = args + ["--model", DIGITS]  # the data files do not exist: refused before they are read
    start = time.monotonic()
    r = cli(tmp_path, *args)
    assert r.returncode == 2
    assert one_error_line(r).startswith(needle)
    assert time.monotonic() - start < 20  # no build ran
    assert list(tmp_path.iterdir()) == []  # and nothing was written


def test_run_output_that_is_a_folder_is_refused_before_the_build(tmp_path):
    (tmp_path / "outs").mkdir()
    np.save(tmp_path / "x.npy", np.load(EXAMPLES / "digits_data.npz")["x"][:2])
    r = run_host(tmp_path, "--input", tmp_path / "x.npy", "--output", tmp_path / "outs")
    assert r.returncode == 2 and "is a folder" in one_error_line(r)


# --- --json failures, closed pipes --------------------------------------------------------
@pytest.mark.parametrize("args, code", [
    (["compile", "missing.onnx", "--board", "host", "--profile", "lite", "--json"], 3),
    (["build", "--board", "nowhere", "--profile", "lite", "--json"], 2),
    (["build", "--json", "--board", "host"], 2),  # a parse error (no --profile)
])
def test_json_failure_prints_error_and_exit_code_on_stdout(tmp_path, args, code):
    r = cli(tmp_path, *args)
    assert r.returncode == code
    message = one_error_line(r)
    assert json.loads(r.stdout) == {"error": message, "exit_code": code}


def test_closed_pipe_ends_quietly(tmp_path):
    exe = [sys.executable, "-m", "cuvil_sdk.cli", "boards"]
    r = subprocess.run(" ".join(exe) + " | head -1", shell=True, capture_output=True, text=True, cwd=tmp_path,
                       executable="/bin/bash")
    assert r.stdout.startswith("cortex-m") and len(r.stdout.splitlines()) == 1  # the first board of the list
    assert r.stderr == ""
    r = subprocess.run("set -o pipefail; " + " ".join(exe) + " --json | head -c 10", shell=True, capture_output=True,
                       text=True, cwd=tmp_path, executable="/bin/bash")
    assert r.returncode == 0 and r.stdout == '{\n  "board'  # (with --json the human listing goes to stderr)
    assert "error" not in r.stderr and "Traceback" not in r.stderr


# --- models whose numbers cannot be represented --------------------------------------------
def huge_weight_model(path: Path) -> Path:
    """A Gemm with weights of 1e12: on all-zero calibration data its output scale stays the
    default while input x weight scale is ~1e12 / 255, far beyond an int32 multiplier."""
    w = np.full((4, 16), 1e12, np.float32)
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="huge_fc")], "huge",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_unrepresentable_requantization_is_a_model_error_naming_the_layer(tmp_path):
    model = huge_weight_model(tmp_path / "huge.onnx")
    np.save(tmp_path / "zeros.npy", np.zeros((4, 16), np.float32))
    r = cli(tmp_path, "compile", model, "--board", "host", "--profile", "lite", "--calib", tmp_path / "zeros.npy")
    assert r.returncode == 3
    message = one_error_line(r)
    assert message.startswith("layer 'huge_fc' (Gemm): requantization factor ") and "too large" in message


@pytest.mark.slow
def test_mutated_models_give_clean_exit_codes_and_no_numpy_warnings(tmp_path, monkeypatch):
    """Random byte mutations of the example model: accepted (0) or rejected (3), never an
    internal error, and no numpy warning reaches the user. In-process: 40 compiles."""
    import contextlib
    import io
    import random
    import warnings
    from cuvil_sdk.cli import main
    monkeypatch.chdir(tmp_path)
    data = DIGITS.read_bytes()
    rng = random.Random(0)
    for i in range(40):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        (tmp_path / "m.onnx").write_bytes(bytes(mutated))
        err, out = io.StringIO(), io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            code = main(["compile", "m.onnx", "--board", "host", "--profile", "lite", "--calib", str(CALIB),
                         "-o", f"out{i}"])
        assert code in (0, 3), f"mutation {i}: exit {code}: {err.getvalue()}"
        assert not caught, f"mutation {i}: {[str(w.message) for w in caught]}"


def steep_sigmoid_model(path: Path) -> Path:
    """Sigmoid(1000 x): exp overflows inside the op for negative x, yet every value is finite."""
    graph = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["s"], name="scale"),
                               helper.make_node("Sigmoid", ["s"], ["y"], name="sigmoid")], "steep",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              [numpy_helper.from_array(np.array(1000.0, np.float32), "k")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_overflow_inside_an_op_with_a_finite_result_is_not_refused(tmp_path):
    model = steep_sigmoid_model(tmp_path / "steep.onnx")
    np.save(tmp_path / "calib.npy", np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))
    r = cli(tmp_path, "compile", model, "--board", "host", "--profile", "standard", "--calib", tmp_path / "calib.npy",
            "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr
