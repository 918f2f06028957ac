"""The project file (cuvil.toml): parsing, keys and their lines in errors, exit codes, the
command line over the file over the defaults, `cuvil-sdk init`, and the Python API's option
checks. Nothing here builds: the cases stop before SCons (board_tests/test_project_boards.py
builds and runs)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.cli import build_parser
from cuvil_sdk.errors import ModelError, UsageError
from cuvil_sdk.project_file import KEYS, STARTER, key_lines, plan_command, read_project

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
DIGITS = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"


def cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def error_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("cuvil-sdk: error: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    return lines[-1][len("cuvil-sdk: error: "):]


def plan(tmp: Path, monkeypatch, *argv):
    """The models a command works on, as the CLI merges them (no work done)."""
    from cuvil_sdk.boards import get_board
    monkeypatch.chdir(tmp)
    args = build_parser().parse_args([str(a) for a in argv])
    return plan_command(args, lambda b: get_board(b).kind)


def project(tmp: Path, text: str) -> Path:
    (tmp / "cuvil.toml").write_text(text)
    return tmp / "cuvil.toml"


# --- init ---------------------------------------------------------------------------------
def test_init_writes_a_commented_starter_that_parses_and_refuses_to_overwrite(tmp_path):
    r = cli(tmp_path, "init")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "cuvil.toml").read_text()
    assert text == STARTER and text.count("\n#") > 10
    p = read_project(tmp_path / "cuvil.toml")
    assert p.top["board"] == "cortex-m7" and p.models[0]["model"] == str(tmp_path / "model.onnx")
    r = cli(tmp_path, "init")
    assert r.returncode == 2 and "exists" in error_line(r)
    assert cli(tmp_path, "init", "--force").returncode == 0


def test_the_starter_mentions_every_key():
    for name in KEYS:
        assert f"# {name} =" in STARTER or f"\n{name} =" in STARTER, name


def test_the_starter_edited_builds_what_it_names(tmp_path, monkeypatch):
    """init, then edit model and calib: the plan names them, resolved beside the file."""
    assert cli(tmp_path, "init").returncode == 0
    text = (tmp_path / "cuvil.toml").read_text().replace('"model.onnx"', '"m/digits.onnx"')
    (tmp_path / "cuvil.toml").write_text(text)
    p = plan(tmp_path, monkeypatch, "build")
    assert [r.model for r in p.runs] == [str(tmp_path / "m" / "digits.onnx")]
    assert p.runs[0].calib == str(tmp_path / "calib.npy") and p.runs[0].board == "cortex-m7"


# --- unknown keys, wrong types, bad TOML: exit 2 naming the key and its line ---------------------------
def test_a_misspelt_top_level_key_is_exit_2_naming_it_and_its_line(tmp_path):
    project(tmp_path, 'boardd = "host"\nprofile = "standard"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == "cuvil.toml line 1: unknown key 'boardd'; did you mean 'board'?"


def test_a_misspelt_key_in_the_second_models_table_names_its_line(tmp_path):
    project(tmp_path, 'board = "cortex-m7"\nprofile = "lite"\n\n[[models]]\nmodel = "a.onnx"\n\n'
                      '[[models]]\n# a comment\nmodel = "b.onnx"\ncalib_method = "mse"\n')
    r = cli(tmp_path, "build", "--json")
    assert r.returncode == 2
    assert error_line(r) == ("cuvil.toml line 10 ([[models]] #2): unknown key 'calib_method'; "
                             "did you mean 'calib-method'?")
    assert '"exit_code": 2' in r.stdout


@pytest.mark.parametrize("line, message", [
    ('threads = "4"', "key 'threads' must be an integer, not a string ('4')"),
    ("threads = 2.0", "key 'threads' must be an integer, not a number (2.0)"),
    ("threads = true", "key 'threads' must be an integer, not a boolean (True)"),
    ("board = 7", "key 'board' must be a string, not an integer (7)"),
    ("accuracy-target = \"0.9\"", "key 'accuracy-target' must be a number, not a string ('0.9')"),
    ("shared-arena = 1", "key 'shared-arena' must be true or false, not an integer (1)"),
    ("plugins = [1]", "key 'plugins' must be a string or a list of strings, not a list ([1])"),
])
def test_a_value_of_the_wrong_type_names_key_line_and_expected_type(tmp_path, line, message):
    project(tmp_path, f'profile = "lite"\n{line}\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == f"cuvil.toml line 2: {message}"


def test_a_project_wide_key_inside_models_is_refused(tmp_path):
    project(tmp_path, '[[models]]\nmodel = "a.onnx"\njobs = 2\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == ("cuvil.toml line 3 ([[models]] #1): key 'jobs' applies to the whole project: set it "
                             "at the top of the file, not in [[models]]")


def test_models_must_be_an_array_of_tables_and_other_tables_are_unknown(tmp_path):
    project(tmp_path, 'models = "a.onnx"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2 and "line 1" in error_line(r) and "[[models]]" in error_line(r)
    project(tmp_path, 'board = "host"\n\n[model]\npath = "a.onnx"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == "cuvil.toml line 3: key 'model' must be a string, not a table ({'path': 'a.onnx'})"
    project(tmp_path, 'board = "host"\n\n[model.x]\npath = "a.onnx"\n[[modells]]\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2 and error_line(r).startswith("cuvil.toml line 3: key 'model' must be a string")


def test_bad_toml_is_exit_2_with_its_line(tmp_path):
    project(tmp_path, 'board = "host"\nprofile = standard\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r).startswith("cuvil.toml is not valid TOML") and "line 2" in error_line(r)


def test_key_lines_follow_models_headers_and_quoted_keys():
    text = 'a = 1\n"b" = 2\n[[models]]\nc = [\n  "x = 1",\n]\n[[ models ]]\n  d=3\n'
    lines = key_lines(text)
    assert lines[(-1, "a")] == 1 and lines[(-1, "b")] == 2 and lines[(0, "c")] == 4 and lines[(1, "d")] == 8


def test_a_missing_config_file_is_exit_3_like_every_missing_input_file(tmp_path):
    r = cli(tmp_path, "build", "--config", tmp_path / "nope.toml")
    assert r.returncode == 3
    assert error_line(r) == f"--config file '{tmp_path / 'nope.toml'}' does not exist"


# --- merging: command line over [[models]] over top level over defaults ----------------------------------
def test_top_level_defaults_model_tables_and_the_command_line(tmp_path, monkeypatch):
    project(tmp_path, 'board = "cortex-m7"\nprofile = "lite"\ncalib-method = "mse"\n'
                      '[[models]]\nmodel = "a.onnx"\ncalib = "a.npy"\nname = "first"\n')
    p = plan(tmp_path, monkeypatch, "build")
    run = p.runs[0]
    assert (run.board, run.profile, run.calib_method, run.name) == ("cortex-m7", "lite", "mse", "first")
    assert run.model == str(tmp_path / "a.onnx") and run.calib == str(tmp_path / "a.npy")
    assert run.threads == 1 and run.shared_arena is True and not p.image
    p = plan(tmp_path, monkeypatch, "build", "--board", "host", "--profile", "standard", "--calib-method", "minmax",
             "--name", "other")
    run = p.runs[0]
    assert (run.board, run.profile, run.calib_method, run.name) == ("host", "standard", "minmax", "other")
    assert run.model == str(tmp_path / "a.onnx")


def test_paths_are_relative_to_the_file_not_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    (tmp_path / "elsewhere").mkdir()
    project(tmp_path / "proj", 'board = "host"\nprofile = "lite"\nplugins = ["ops/x.py", "my.module"]\n'
                               'calib = "random"\nout-dir = "out"\n[[models]]\nmodel = "../m.onnx"\n')
    p = plan(tmp_path / "elsewhere", monkeypatch, "build", "--config", tmp_path / "proj" / "cuvil.toml")
    run = p.runs[0]
    assert run.model == str(tmp_path / "m.onnx") and run.calib == "random"
    assert run.plugin == [str(tmp_path / "proj" / "ops" / "x.py"), "my.module"]
    assert run.out_dir == str(tmp_path / "proj" / "out")


def test_list_keys_take_a_string_or_a_list(tmp_path, monkeypatch):
    project(tmp_path, 'board = "host"\nprofile = "lite"\nint16-layers = ["c1", "c2"]\ninput-shape = "x=1x3x8x8"\n'
                      '[[models]]\nmodel = "a.onnx"\n')
    run = plan(tmp_path, monkeypatch, "build").runs[0]
    assert run.int16_layers == "c1,c2" and run.input_shape == ["x=1x3x8x8"]


def test_input_precision_key_reaches_the_request(tmp_path, monkeypatch):
    """cuvil.toml input-precision (issue 39): a list of NAME=PRECISION; the command line's replaces it."""
    from cuvil_sdk.commands import make_request
    project(tmp_path, 'board = "host"\nprofile = "standard"\ninput-precision = ["audio=float", "h=float"]\n'
                      '[[models]]\nmodel = "a.onnx"\n')
    run = plan(tmp_path, monkeypatch, "build").runs[0]
    assert run.input_precision == ["audio=float", "h=float"]
    assert make_request(run).input_precision == {"audio": "float", "h": "float"}
    run = plan(tmp_path, monkeypatch, "build", "--input-precision", "c=int16").runs[0]
    assert make_request(run).input_precision == {"c": "int16"}


def test_two_models_on_one_firmware_board_are_one_image(tmp_path, monkeypatch):
    project(tmp_path, 'board = "cortex-m7"\nprofile = "lite"\nshared-arena = false\n'
                      '[[models]]\nmodel = "a.onnx"\n[[models]]\nmodel = "b.onnx"\nname = "bee"\n')
    p = plan(tmp_path, monkeypatch, "build")
    assert p.image and [r.model for r in p.runs] == [str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")]
    assert all(r.shared_arena is False for r in p.runs)
    # run --model selects one model of the image, by path, file name, stem or name
    for given in ("b.onnx", "b", "bee", str(tmp_path / "b.onnx")):
        p = plan(tmp_path, monkeypatch, "run", "--model", given, "--input", "x.npy", "--output", "y.npz")
        assert p.image and p.selected == 1 and len(p.runs) == 2
    # build --model: that model alone
    p = plan(tmp_path, monkeypatch, "build", "--model", "b.onnx")
    assert not p.image and len(p.runs) == 1 and p.runs[0].name == "bee"
    # a model the file does not name: alone, with the top-level defaults only
    p = plan(tmp_path, monkeypatch, "build", "--model", "c.onnx")
    assert len(p.runs) == 1 and p.runs[0].model == "c.onnx" and p.runs[0].name is None


def test_models_on_a_linux_board_are_built_each_on_its_own(tmp_path, monkeypatch):
    project(tmp_path, 'board = "host"\nprofile = "standard"\n[[models]]\nmodel = "a.onnx"\n'
                      '[[models]]\nmodel = "b.onnx"\n')
    p = plan(tmp_path, monkeypatch, "build")
    assert not p.image and len(p.runs) == 2


def test_run_in_a_project_of_several_models_needs_model(tmp_path):
    project(tmp_path, 'board = "cortex-m7"\nprofile = "lite"\n[[models]]\nmodel = "a.onnx"\n'
                      '[[models]]\nmodel = "b.onnx"\n')
    r = cli(tmp_path, "run", "--input", "x.npy", "--output", "y.npz")
    assert r.returncode == 2
    assert error_line(r) == "the project has 2 models (a.onnx, b.onnx): choose the one to run with --model"


def test_required_options_after_the_file_is_read(tmp_path):
    project(tmp_path, 'profile = "lite"\n[[models]]\nmodel = "a.onnx"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == "the following arguments are required: --board (see `cuvil-sdk build --help`)"
    r = cli(tmp_path, "run", "--board", "host")
    assert r.returncode == 2 and "--input, --output" in error_line(r)


def test_without_a_project_file_the_cli_is_unchanged(tmp_path):
    r = cli(tmp_path, "build", "--profile", "lite")
    assert r.returncode == 2
    assert error_line(r) == "the following arguments are required: --board (see `cuvil-sdk build --help`)"


def test_an_image_refuses_two_models_with_one_name_before_any_work(tmp_path):
    (tmp_path / "b").mkdir()
    for d in (tmp_path, tmp_path / "b"):
        shutil.copy(DIGITS, d / "digits_cnn.onnx")
    project(tmp_path, 'board = "cortex-m7"\nprofile = "lite"\ncalib = "random"\n'
                      '[[models]]\nmodel = "digits_cnn.onnx"\n[[models]]\nmodel = "b/digits_cnn.onnx"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2
    assert error_line(r) == ("digits_cnn.onnx and model digits_cnn.onnx are both named 'digits_cnn': give the "
                             "model another `name` in its [[models]] table")
    assert not (tmp_path / "cuvil-build").exists()


def test_an_image_on_a_board_without_a_multi_model_harness_is_refused(tmp_path):
    project(tmp_path, 'board = "nucleo-f767zi"\nprofile = "lite"\n[[models]]\nmodel = "a.onnx"\n'
                      '[[models]]\nmodel = "b.onnx"\n')
    r = cli(tmp_path, "build")
    assert r.returncode == 2 and "cannot hold several models in one image" in error_line(r)


# --- the Python API's options go through the same checks -----------------------------------------------
def test_python_api_refuses_unknown_options_and_keeps_the_cli_messages(tmp_path):
    import cuvil_sdk
    with pytest.raises(UsageError, match="unknown option 'calibb'"):
        cuvil_sdk.build(DIGITS, board="host", calibb=1)
    with pytest.raises(UsageError, match="no board named|unknown board|board 'nope'"):
        cuvil_sdk.build(DIGITS, board="nope")
    with pytest.raises(ModelError, match=f"model file '{tmp_path / 'missing.onnx'}' does not exist"):
        cuvil_sdk.build(tmp_path / "missing.onnx", board="host", calib=np.zeros((2, 1, 8, 8), np.float32),
                        out_dir=tmp_path / "out")
    assert cuvil_sdk.BuildResult.__name__ == "BuildResult"


def test_the_farm_keys_reach_run_and_validate(tmp_path, monkeypatch):
    project(tmp_path, 'model = "m.onnx"\nboard = "cortex-m7-app"\nprofile = "lite"\nplace = ["a", "b"]\n'
                      'coordinator = "127.0.0.1:9"\n')
    args = plan(tmp_path, monkeypatch, "validate", "--data", "d.npz").runs[0]
    assert args.place == ["a", "b"] and args.coordinator == "127.0.0.1:9" and args.port is None
    project(tmp_path, 'model = "m.onnx"\nboard = "cortex-m7-app"\nprofile = "lite"\nport = "/dev/ttyACM0"\n'
                      'flash-port = "/dev/ttyUSB0"\n')
    args = plan(tmp_path, monkeypatch, "run", "--input", "x.npy", "--output", "y.npz", "--port", "/dev/ttyACM1").runs[0]
    assert args.port == "/dev/ttyACM1" and args.flash_port == "/dev/ttyUSB0"  # the command line wins
