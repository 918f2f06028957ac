"""What a new user hit (issue 26), each fixed and kept fixed: channels-last data through run,
validate and the Python API; a project's model picked by its name or stem; data of the wrong
dtype or under the wrong key; output paths under a file; the dynamic-shape hint typed as
printed; interrupts; the weights placement in --json; a project's build --json.
Everything runs on the host board (the bundled digits CNN builds in about a second)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
DIGITS = EXAMPLES / "digits_cnn.onnx"
DATA = np.load(EXAMPLES / "digits_data.npz")
HOST = ["--board", "host", "--profile", "standard"]


def cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def error_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("cuvil-sdk: error: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return lines[-1][len("cuvil-sdk: error: "):]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Calibration and input data in both layouts, and the wrong kinds of data."""
    d = tmp_path_factory.mktemp("data")
    calib, x = DATA["calib"][:32], DATA["x"][:6]
    np.save(d / "cal.npy", calib)
    np.save(d / "x.npy", x)
    np.save(d / "cal_nhwc.npy", calib.transpose(0, 2, 3, 1))
    np.save(d / "x_nhwc.npy", x.transpose(0, 2, 3, 1))
    np.savez(d / "val.npz", x=DATA["x"][:40], y=DATA["y"][:40])
    np.savez(d / "val_nhwc.npz", x=DATA["x"][:40].transpose(0, 2, 3, 1), y=DATA["y"][:40])
    return d


def run_digits(files: Path, cwd: Path, x: str, out: str, *extra, calib: str = "cal.npy") -> subprocess.CompletedProcess:
    return cli(cwd, "run", *HOST, "--model", DIGITS, "--calib", files / calib, "--input", files / x,
               "--output", cwd / out, *extra)


@pytest.fixture(scope="module")
def nchw_outputs(files, tmp_path_factory) -> np.ndarray:
    d = tmp_path_factory.mktemp("nchw")
    r = run_digits(files, d, "x.npy", "a.npz")
    assert r.returncode == 0, r.stderr
    return np.load(d / "a.npz")["logits"]


# --- 1. --input-layout nhwc takes channels-last data everywhere ---------------------------
def test_run_nhwc_on_nhwc_data_equals_the_nchw_build(files, tmp_path, nchw_outputs):
    r = run_digits(files, tmp_path, "x_nhwc.npy", "b.npz", "--input-layout", "nhwc", calib="cal_nhwc.npy")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "b.npz")["logits"], nchw_outputs)


def test_nchw_data_for_an_nhwc_build_names_the_layout(files, tmp_path):
    r = run_digits(files, tmp_path, "x.npy", "b.npz", "--input-layout", "nhwc", calib="cal_nhwc.npy")
    assert r.returncode == 3
    assert error_line(r).endswith("that is NCHW data, but this build takes NHWC (--input-layout nhwc)")
    r = run_digits(files, tmp_path, "x_nhwc.npy", "b.npz")
    assert r.returncode == 3
    assert error_line(r).endswith("channels-last data? build with --input-layout nhwc")


def test_validate_nhwc_gives_the_metrics_of_the_nchw_build(files, tmp_path):
    def metrics(data: str, calib: str, *extra) -> dict:
        r = cli(tmp_path, "validate", *HOST, "--model", DIGITS, "--calib", files / calib, "--data", files / data,
                "--json", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    nchw = metrics("val.npz", "cal.npy")
    nhwc = metrics("val_nhwc.npz", "cal_nhwc.npy", "--input-layout", "nhwc")
    assert nhwc["outputs"] == nchw["outputs"] and nhwc["accuracy"] == nchw["accuracy"]
    assert nchw["outputs"]["logits"]["cosine"] > 0.999  # the reference really was fed the same images


def test_python_api_run_takes_nhwc_data(files, tmp_path, nchw_outputs):
    import cuvil_sdk
    b = cuvil_sdk.build(DIGITS, board="host", profile="standard", calib=str(files / "cal_nhwc.npy"),
                        input_layout="nhwc", out_dir=tmp_path / "b")
    y = b.run(np.load(files / "x_nhwc.npy"))["logits"]
    assert np.array_equal(y, nchw_outputs)


# --- 2. a one-model project: --model by name, file name or stem; its input-layout key -----
@pytest.fixture
def project(files, tmp_path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "digits_cnn.onnx").write_bytes(DIGITS.read_bytes())
    for f in ("cal.npy", "x.npy", "cal_nhwc.npy", "x_nhwc.npy"):
        (p / f).write_bytes((files / f).read_bytes())
    (p / "cuvil.toml").write_text('board = "host"\nprofile = "standard"\n\n[[models]]\nmodel = "digits_cnn.onnx"\n'
                                  'name = "digits"\ncalib = "cal.npy"\n')
    return p


@pytest.mark.parametrize("chosen", ["digits", "digits_cnn", "digits_cnn.onnx"])
def test_model_by_name_or_stem_in_a_one_model_project(project, chosen, nchw_outputs):
    r = cli(project, "run", "--model", chosen, "--input", "x.npy", "--output", "y.npz")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(project / "y.npz")["logits"], nchw_outputs)


def test_the_project_files_input_layout_is_not_overridden_by_the_option_default(project, nchw_outputs):
    toml = (project / "cuvil.toml").read_text().replace('profile = "standard"\n', 'profile = "standard"\n'
                                                         'input-layout = "nhwc"\n')
    (project / "cuvil.toml").write_text(toml.replace('calib = "cal.npy"', 'calib = "cal_nhwc.npy"'))
    r = cli(project, "run", "--input", "x_nhwc.npy", "--output", "y.npz")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(project / "y.npz")["logits"], nchw_outputs)


# --- 3. data types and keys ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.bool_])
def test_integer_or_bool_data_for_a_float_input_is_refused(files, tmp_path, dtype):
    np.save(tmp_path / "x_int.npy", (DATA["x"][:4] * 16).astype(dtype))
    r = run_digits(files, tmp_path, tmp_path / "x_int.npy", "c.npz")
    assert r.returncode == 3
    line = error_line(r)
    assert f"has dtype {np.dtype(dtype).name}, expected float32" in line
    assert ("scaling" in line) == (dtype is not np.bool_)
    assert not (tmp_path / "c.npz").exists()


def test_integer_calibration_data_is_refused_too(files, tmp_path):
    np.save(tmp_path / "cal_u8.npy", (DATA["calib"][:8] * 16).astype(np.uint8))
    r = cli(tmp_path, "build", *HOST, "--model", DIGITS, "--calib", tmp_path / "cal_u8.npy", "-o", tmp_path / "b")
    assert r.returncode == 3 and "calibration data: array for 'image' has dtype uint8" in error_line(r)


def test_float64_data_is_converted_with_a_note(files, tmp_path, nchw_outputs):
    np.save(tmp_path / "x64.npy", DATA["x"][:6].astype(np.float64))
    r = run_digits(files, tmp_path, tmp_path / "x64.npy", "d.npz")
    assert r.returncode == 0, r.stderr
    assert "cuvil-sdk: note: input data: 'image' is float64, converted to float32" in r.stderr.splitlines()
    assert np.array_equal(np.load(tmp_path / "d.npz")["logits"], nchw_outputs)


def test_an_npz_whose_keys_name_no_input_is_refused(files, tmp_path):
    np.savez(tmp_path / "x_key.npz", pixels=DATA["x"][:4])
    r = run_digits(files, tmp_path, tmp_path / "x_key.npz", "e.npz")
    assert r.returncode == 3
    assert error_line(r) == "'x_key.npz' has arrays ['pixels'], expected the model's input keys 'image' (or 'x')"


def test_the_runtime_refuses_integers_and_warns_on_float64(files, tmp_path, nchw_outputs):
    from cuvil_sdk import runtime
    r = cli(tmp_path, "build", *HOST, "--model", DIGITS, "--calib", files / "cal.npy", "-o", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    model = runtime.load(tmp_path / "b" / "build" / "libdigits_cnn.so")
    x = DATA["x"][:6]
    with pytest.raises(TypeError, match="has dtype uint8, expected float32; image data usually needs scaling"):
        model((x * 16).astype(np.uint8))
    with pytest.raises(TypeError, match="has dtype int64, expected float32"):
        model.run({"image": x.astype(np.int64)})
    with pytest.raises(TypeError, match="has dtype float32, expected int8"):
        model.run_int8(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = model(x.astype(np.float64))
    assert [str(w.message) for w in caught] == ["input: 'image' is float64, converted to float32"]
    assert caught[0].filename == __file__  # the warning names the caller's line
    assert np.array_equal(y, nchw_outputs)


# --- 4. output paths checked before any work -----------------------------------------------
@pytest.mark.parametrize("how", ["--output", "-o under a file", "-o is a file"])
def test_an_output_path_under_a_file_is_refused_before_the_build(files, tmp_path, how):
    (tmp_path / "afile").write_text("x")
    if how == "--output":
        args = ["run", *HOST, "--model", DIGITS, "--calib", files / "cal.npy", "--input", files / "x.npy",
                "--output", tmp_path / "afile" / "o.npz"]
        want = f"--output '{tmp_path / 'afile' / 'o.npz'}': '{tmp_path / 'afile'}' is a file, not a folder"
    elif how == "-o under a file":
        args = ["build", *HOST, "--model", DIGITS, "--calib", files / "cal.npy", "-o", tmp_path / "afile" / "out"]
        want = f"-o '{tmp_path / 'afile' / 'out'}': '{tmp_path / 'afile'}' is a file, not a folder"
    else:
        args = ["compile", DIGITS, *HOST, "--calib", files / "cal.npy", "-o", tmp_path / "afile"]
        want = f"-o '{tmp_path / 'afile'}' is a file; -o names the output folder"
    t0 = time.monotonic()
    r = cli(tmp_path, *args)
    assert r.returncode == 2 and error_line(r) == want
    assert time.monotonic() - t0 < 60  # refused up front, not after a build (a generous bound)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing written


def test_the_python_api_checks_out_dir_before_any_work(tmp_path):
    import cuvil_sdk
    from cuvil_sdk.errors import UsageError
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        cuvil_sdk.build(DIGITS, board="host", profile="standard", calib="random", out_dir=tmp_path / "afile" / "b")


# --- 6. the dynamic-dimension hint works as typed ------------------------------------------
def test_the_dynamic_batch_hint_works_when_typed_as_printed(files, tmp_path):
    m = onnx.load(str(DIGITS))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    onnx.save(m, tmp_path / "dyn.onnx")
    r = cli(tmp_path, "build", *HOST, "--model", tmp_path / "dyn.onnx", "--calib", files / "cal.npy")
    assert r.returncode == 3
    hint = re.search(r"--input-shape (\S+)", error_line(r)).group(1)
    assert hint == "image=1x1x8x8"
    r = cli(tmp_path, "build", *HOST, "--model", tmp_path / "dyn.onnx", "--calib", files / "cal.npy",
            "--input-shape", hint, "-o", tmp_path / "b")
    assert r.returncode == 0, r.stderr


def test_another_dynamic_dimension_is_a_placeholder_not_a_wrong_number(files, tmp_path):
    m = onnx.load(str(DIGITS))
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    onnx.save(m, tmp_path / "dyn.onnx")
    r = cli(tmp_path, "build", *HOST, "--model", tmp_path / "dyn.onnx", "--calib", files / "cal.npy")
    assert r.returncode == 3
    assert error_line(r).endswith("fix it with --input-shape image=1x1x<height>x8 (<height>: the size of your data)")


# --- 10. interrupts: one line, exit 130/143, no staging folder left ------------------------
CONSOLE_SCRIPT = "import sys; from cuvil_sdk.entry import main; sys.exit(main())"  # what the cuvil-sdk script runs


def before_sdk_code(err: str) -> bool:
    """Whether what a process killed by the signal printed comes from before any SDK code ran:
    nothing, or a KeyboardInterrupt raised in the interpreter's own start-up or import machinery
    (between Python installing its SIGINT handler and the first line of cuvil_sdk.entry no
    program can catch it; seen on a loaded CI machine at 0.05 s)."""
    if "Traceback" not in err:
        return True
    frames = re.findall(r'^\s*File "([^"]+)"', err, re.MULTILINE)
    return err.strip().endswith("KeyboardInterrupt") and all(f == "<string>" or f.startswith("<frozen ")
                                                             for f in frames)


@pytest.mark.slow
@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_an_interrupt_at_any_moment_is_clean(files, tmp_path, sig, code, word):
    """From the first imports to the middle of the build: the console script's own process."""
    for delay in (0.05, 0.3, 0.8, 1.5):
        out = tmp_path / f"out{delay}"
        p = subprocess.Popen([sys.executable, "-c", CONSOLE_SCRIPT, "build", "--board", "cortex-m7", "--profile", "lite",
                              "--model", str(DIGITS), "--calib", str(files / "cal.npy"), "-o", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        assert not out.with_name(out.name + ".partial").exists()  # never a staging folder left
        # a KeyboardInterrupt inside the interpreter's site initialization (the .pth files, before
        # any SDK code) makes Python itself exit 1 with this fatal error: seen on a loaded machine
        in_site = p.returncode == 1 and "Fatal Python error: init_import_site" in err
        if p.returncode in (0, -sig) or in_site:  # the build beat the signal, or the signal beat Python's
            assert p.returncode == 0 or in_site or before_sdk_code(err), err  # start-up (killed before any work)
            assert p.returncode == 0 or not out.exists()
            continue
        assert p.returncode == code and err.strip().splitlines()[-1] == f"cuvil-sdk: {word}", err
        assert "Traceback" not in err
        # stopped mid-work: nothing written; an interrupt Python swallowed (in a __del__) lets
        # the build finish, whole, and is still reported
        assert not out.exists() or (out / "manifest.json").is_file()


# --- 11. --weights file is not in an ELF section ------------------------------------------
@pytest.mark.parametrize("placement,section", [("file", None), ("linked", ".rodata.digits_cnn_weights")])
def test_build_json_section_matches_the_weights_placement(files, tmp_path, placement, section):
    r = cli(tmp_path, "build", *HOST, "--model", DIGITS, "--calib", files / "cal.npy", "--weights", placement,
            "-o", tmp_path / "b", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["weights"]["section"] == section
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["weights"]["section"] == section


# --- 13. a project of several models on a Linux board: build --json as the README says -----
def test_a_multi_model_linux_project_prints_the_models_the_readme_describes(files, tmp_path):
    for name in ("digits_cnn.onnx", "ad_fp32.onnx"):
        (tmp_path / name).write_bytes((EXAMPLES / name).read_bytes())
    (tmp_path / "cal.npy").write_bytes((files / "cal.npy").read_bytes())
    (tmp_path / "cuvil.toml").write_text('board = "host"\nprofile = "standard"\n\n[[models]]\nmodel = "digits_cnn.onnx"\n'
                                         'calib = "cal.npy"\n\n[[models]]\nmodel = "ad_fp32.onnx"\ncalib = "random"\n')
    r = cli(tmp_path, "build", "--json")
    assert r.returncode == 0, r.stderr
    models = json.loads(r.stdout)["models"]
    assert [m["name"] for m in models] == ["digits_cnn", "ad_fp32"]
    for m in models:
        assert Path(m["out_dir"]) == tmp_path / "cuvil-build" / f"{m['name']}-host-standard"
        assert Path(m["artifacts"]["so"]).is_file()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert '`build --json` then prints `{"models": [...]}`, one object per model' in readme
    assert "cuvil-build/<model>-<board>-<profile>/" in readme
    assert os.path.sep not in models[0]["name"]


# --- a model name that is a standard header's: no shadowed <string.h> ---------------------
@pytest.mark.parametrize("board,name", [("cortex-m7", "string"), ("host", "math")])
def test_a_model_named_like_a_standard_header_builds(files, tmp_path, board, name):
    r = cli(tmp_path, "build", "--board", board, "--profile", "lite", "--model", DIGITS, "--calib", files / "cal.npy",
            "--name", name, "-o", tmp_path / "b", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["name"] == f"m_{name}" and not (tmp_path / "b" / "src" / f"{name}.h").exists()
