"""Project files and the Python API on the boards: a host project builds from cuvil.toml; the
Python API's loaded model and runner give `cuvil-sdk run`'s outputs; two models in one
Cortex-M7 firmware image (one .elf, one arena the size of the larger model's, each model's
outputs equal to its single-model build's, under QEMU)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tools import missing_tools

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"
M7_TOOLS = ["arm-none-eabi-gcc", "qemu-system-arm", "scons"]
ALIGN = 16


def cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, timeout=900)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("project")
    data = np.load(EXAMPLES / "digits_data.npz")
    shutil.copy(EXAMPLES / "digits_cnn.onnx", d)
    shutil.copy(EXAMPLES / "ad_fp32.onnx", d)
    np.save(d / "calib.npy", data["calib"][:64].astype(np.float32))
    np.save(d / "x.npy", data["x"][:4].astype(np.float32))
    rng = np.random.default_rng(0)
    np.save(d / "ad_calib.npy", rng.random((32, 640), dtype=np.float32))
    np.save(d / "ad_x.npy", rng.random((3, 640), dtype=np.float32))
    return d


def single_run(folder: Path, board: str, profile: str, model: str, calib: str, x: str, name: str) -> tuple[dict, dict]:
    """`cuvil-sdk run` of one model built on its own: (its outputs, its --json report)."""
    r = cli(folder, "run", "--board", board, "--profile", profile, "--model", model, "--calib", calib,
            "--input", x, "--output", f"{name}.npz", "--json")
    return dict(np.load(folder / f"{name}.npz")), json.loads(r.stdout)


# --- host: the project file and the Python API ----------------------------------------------
def test_a_host_project_builds_from_its_file(folder):
    d = folder / "host_project"
    d.mkdir()
    (d / "cuvil.toml").write_text('board = "host"\nprofile = "standard"\n\n[[models]]\n'
                                  'model = "../digits_cnn.onnx"\ncalib = "../calib.npy"\n')
    report = json.loads(cli(d, "build", "--json").stdout)
    assert Path(report["artifacts"]["so"]).is_file() and report["name"] == "digits_cnn"
    assert report["out_dir"] == str(d / "cuvil-build" / "digits_cnn-host-standard")


def test_python_api_load_and_run_equal_cuvil_sdk_run(folder):
    import cuvil_sdk
    ref, _ = single_run(folder, "host", "standard", "digits_cnn.onnx", "calib.npy", "x.npy", "y_host")
    x = np.load(folder / "x.npy")
    b = cuvil_sdk.build(folder / "digits_cnn.onnx", board="host", profile="standard",
                        calib=np.load(folder / "calib.npy"), out_dir=folder / "api_host")
    assert b.report["arena_bytes"] > 0 and Path(b.artifacts["so"]).is_file()
    with b.load() as model:
        assert np.array_equal(model(x), ref["logits"])
    assert np.array_equal(b.run(x)["logits"], ref["logits"])


# --- cortex-m7: several models in one firmware image ----------------------------------------
@pytest.fixture(scope="module")
def singles(folder):
    if missing_tools(M7_TOOLS):
        pytest.fail(f"missing tools: {missing_tools(M7_TOOLS)}")
    return {"digits_cnn": single_run(folder, "cortex-m7", "lite", "digits_cnn.onnx", "calib.npy", "x.npy", "s_digits"),
            "ad_fp32": single_run(folder, "cortex-m7", "lite", "ad_fp32.onnx", "ad_calib.npy", "ad_x.npy", "s_ad")}


def image_folder(folder: Path, name: str, extra: str = "") -> Path:
    d = folder / name
    d.mkdir()
    (d / "cuvil.toml").write_text(
        f'board = "cortex-m7"\nprofile = "lite"\n{extra}\n'
        '[[models]]\nmodel = "../digits_cnn.onnx"\ncalib = "../calib.npy"\ninput = "../x.npy"\noutput = "digits.npz"\n\n'
        '[[models]]\nmodel = "../ad_fp32.onnx"\ncalib = "../ad_calib.npy"\ninput = "../ad_x.npy"\noutput = "ad.npz"\n')
    return d


def test_two_models_share_one_image_and_the_larger_arena(folder, singles):
    d = image_folder(folder, "image")
    report = json.loads(cli(d, "build", "--json").stdout)
    elfs = list((d / "cuvil-build").rglob("*.elf"))
    assert [Path(report["artifacts"]["elf"])] == elfs
    arenas = {name: rep["arena_bytes"] for name, (_, rep) in singles.items()}
    assert max(arenas.values()) <= report["arena_bytes"] < max(arenas.values()) + ALIGN
    assert report["shared_arena"] is True and report["fits"] is True
    models = {m["name"]: m for m in report["models"]}
    assert list(models) == ["digits_cnn", "ad_fp32"]
    for name, m in models.items():
        assert m["arena_bytes"] - arenas[name] in range(ALIGN) and m["arena_shared"] is True
        assert 0 < m["weights_bytes"] <= m["flash_bytes"]
        assert m["flash_bytes"] == m["weights_bytes"] + m["code_bytes"]
    assert sum(m["flash_bytes"] for m in models.values()) < report["flash_bytes"]
    # the report of each model beside the image's
    assert (d / "cuvil-build" / "firmware-cortex-m7-lite" / "report-ad_fp32.html").is_file()


@pytest.mark.parametrize("model, single, output", [("digits_cnn.onnx", "digits_cnn", "digits.npz"),
                                                   ("ad_fp32", "ad_fp32", "ad.npz")])
def test_each_model_of_the_image_gives_its_single_build_outputs(folder, singles, model, single, output):
    d = folder / "image"
    if not d.exists():
        image_folder(folder, "image")
    report = json.loads(cli(d, "run", "--model", model, "--json").stdout)
    assert report["model"] == single and report["samples"] == len(next(iter(singles[single][0].values())))
    ours = dict(np.load(d / output))
    assert ours.keys() == singles[single][0].keys()
    for key, value in singles[single][0].items():
        assert np.array_equal(ours[key], value), key
    assert report["instructions"] > 0


def test_separate_arenas_for_models_that_run_concurrently(folder, singles):
    d = image_folder(folder, "separate", "shared-arena = false\nimage = \"pair\"")
    report = json.loads(cli(d, "run", "--model", "ad_fp32", "--json", "-o", d / "out").stdout)
    arenas = [rep["arena_bytes"] for _, rep in singles.values()]
    assert report["shared_arena"] is False and report["artifacts"]["elf"].endswith("pair.elf")
    assert sum(arenas) <= report["arena_bytes"] < sum(arenas) + 2 * ALIGN
    for key, value in singles["ad_fp32"][0].items():
        assert np.array_equal(np.load(d / "ad.npz")[key], value)


def test_python_api_runs_a_firmware_build_under_qemu(folder, singles):
    import cuvil_sdk
    from cuvil_sdk.errors import UsageError
    b = cuvil_sdk.build(folder / "ad_fp32.onnx", board="cortex-m7", calib=str(folder / "ad_calib.npy"),
                        out_dir=folder / "api_m7")
    assert b.report["arena_bytes"] == singles["ad_fp32"][1]["arena_bytes"] and "elf" in b.artifacts
    y = b.run(np.load(folder / "ad_x.npy"))
    for key, value in singles["ad_fp32"][0].items():
        assert np.array_equal(y[key], value)
    with pytest.raises(UsageError, match="do not load on this machine"):
        b.load()
