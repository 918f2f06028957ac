"""The three front-ends write the same sources: for one board of each family (Cortex-M7
firmware, the host .so, the Raspberry Pi 5 .so, the Jetson .so with CUDA), building
sdk/examples/digits_cnn.onnx through the Python API (`cuvil_sdk.build`, in this process),
`cuvil-sdk build` (a subprocess) and a cuvil.toml project (`cuvil-sdk build` in its folder)
writes byte-identical generated sources, equal to the digests recorded in
tests/fixtures/generated_sources.json for the same case (`compile`'s output; `build` adds
build/, report.json and report.html, which the comparison leaves out). The output folders
differ; the digests make each one's absolute path a placeholder."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cuvil_sdk
from cuvil_sdk import cuda_tools
from tools import missing_tools

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:  # board_tests run without tests/ on sys.path: generated_sources lives there
    sys.path.append(str(TESTS))

from generated_sources import FIXTURE, digest_tree  # noqa: E402

pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "sdk" / "examples"
MODEL = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"
CLI = Path(sys.executable).parent / "cuvil-sdk"
# board -> (profile, the tools its build needs)
BOARDS = {"cortex-m7": ("lite", ["arm-none-eabi-gcc", "scons"]),
          "host": ("standard", ["gcc", "scons"]),
          "rpi5": ("standard", ["aarch64-linux-gnu-gcc", "scons"]),
          "jetson": ("standard", ["aarch64-linux-gnu-gcc", "scons"])}  # nvcc: cuda_tools.find_nvcc, as the SDK finds it
BUILD_ONLY = ("build/", "report.json", "report.html")  # what `build` writes beyond `compile`


def cli(cwd: Path, *args: str) -> None:
    r = subprocess.run([str(CLI), *args], capture_output=True, text=True, cwd=cwd, timeout=900)
    assert r.returncode == 0, f"cuvil-sdk {' '.join(args)} (in {cwd}): exit {r.returncode}\n{r.stderr}"


def build_api(board: str, profile: str, out: Path) -> Path:
    cuvil_sdk.build(MODEL, board=board, profile=profile, calib=str(CALIB), out_dir=out)
    return out


def build_cli(board: str, profile: str, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    cli(out.parent, "build", "--model", str(MODEL), "--board", board, "--profile", profile, "--calib", str(CALIB),
        "-o", str(out))
    return out


def build_project(board: str, profile: str, out: Path) -> Path:
    folder = out.parent / "project"
    folder.mkdir(parents=True)
    (folder / "cuvil.toml").write_text(f'board = "{board}"\nprofile = "{profile}"\nout-dir = "../{out.name}"\n\n'
                                       f'[[models]]\nmodel = {json.dumps(str(MODEL))}\n'
                                       f'calib = {json.dumps(str(CALIB))}\n')
    cli(folder, "build")
    return out


FRONTENDS = {"api": build_api, "cli": build_cli, "project": build_project}


@pytest.mark.parametrize("board", list(BOARDS))
def test_the_three_frontends_write_the_recorded_sources(board, tmp_path):
    profile, tools = BOARDS[board]
    if board == "jetson" and cuda_tools.find_nvcc() is None:  # as test_jetson.py: only a missing CUDA toolkit skips
        pytest.skip("nvcc (CUDA toolkit) not found: the CUDA kernels cannot be built")
    missing = missing_tools(tools)
    assert not missing, f"{board}: missing tools {missing}"
    if not CLI.exists():
        pytest.fail(f"{CLI} not found: the venv's cuvil-sdk (pip install -e .)")
    recorded = json.loads(FIXTURE.read_text())[f"digits_cnn/{board}"]
    assert "refused" not in recorded, recorded
    generated = {}
    for name, frontend in FRONTENDS.items():
        digests = digest_tree(frontend(board, profile, tmp_path / name / "out"))
        missing_files = sorted(set(recorded) - set(digests))
        assert not missing_files, f"{name}: the recorded files {missing_files} were not written"
        extra = sorted(p for p in set(digests) - set(recorded) if not p.startswith(BUILD_ONLY))
        assert not extra, f"{name}: files the recorded case lacks: {extra}"
        generated[name] = {path: digests[path] for path in recorded}
    for name in ("cli", "project"):
        differ = sorted(p for p in recorded if generated[name][p] != generated["api"][p])
        assert not differ, f"{board}: {name} and the Python API wrote different {differ}"
    differ = sorted(p for p in recorded if generated["api"][p] != recorded[p])
    assert not differ, f"{board}: the generated {differ} differ from tests/fixtures/generated_sources.json"
