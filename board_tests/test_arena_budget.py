"""--arena-budget (planner/budget.py, passes/row_bands.py) end to end: the first layers run in row
bands when the arena would be over the budget, and the outputs stay the default build's bit for
bit on every kernel set (cortex_m_dsp under QEMU, avx2 on the host, neon under qemu-aarch64); a
budget nothing reaches is refused with exit 4 naming the smallest arena found, before a file is
written; cuvil.toml's arena-budget is the same option. A missing tool fails, never skips."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest
from models import EXAMPLES, cli

pytestmark = pytest.mark.slow
RESNET8 = EXAMPLES / "resnet8_fp32.onnx"
HALF_TFLM = 27504  # issue 28: half of TFLite Micro's arena for ResNet-8 (55,008 B)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("budget")
    rng = np.random.default_rng(3)
    np.save(tmp / "calib.npy", rng.random((8, 3, 32, 32), dtype=np.float32))
    np.save(tmp / "x.npy", rng.random((2, 3, 32, 32), dtype=np.float32))
    return tmp


def run(work: Path, tag: str, *extra) -> dict:
    r = cli("run", "--board", "cortex-m7", "--profile", "lite", "--model", RESNET8, "--calib", work / "calib.npy",
            "--input", work / "x.npy", "--output", work / f"{tag}.npz", "-o", work / tag, "--json", *extra, cwd=work)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_resnet8_within_half_of_tflms_arena_gives_the_same_bits_on_cortex_m7(work):
    default = run(work, "default")
    banded = run(work, "banded", "--arena-budget", HALF_TFLM)
    assert default["arena_bytes"] > HALF_TFLM >= banded["arena_bytes"]
    manifest = json.loads((work / "banded" / "manifest.json").read_text())
    tiling = manifest["tiling"]
    assert tiling["bands"] >= 2 and len(tiling["region"]) >= 2 and tiling["recompute_macs"] > 0
    assert sum(b - a for a, b in tiling["band_rows"]) == 32  # the region's output rows, each once
    for name, value in np.load(work / "default.npz").items():
        assert np.array_equal(value, np.load(work / "banded.npz")[name]), name
    assert banded["instructions"] > default["instructions"]  # the rows bands share are computed again
    page = (work / "banded" / "report.html").read_text()
    assert "row bands" in page and f"{tiling['recompute_macs']:,}" in page


@pytest.mark.parametrize("board", ["host", "rpi5"])
def test_bands_give_the_same_bits_on_the_simd_sets(work, board):
    outputs = {}
    for budget in (None, 30000):
        req = CompileRequest(model=RESNET8, board=get_board(board), profile=get_profile("standard"),
                             calib=str(work / "calib.npy"), arena_budget=budget)
        info = do_build(req, work / f"{board}-{budget}", 2)
        assert (budget is None) != bool(info.get("tiling")) and (budget is None or info["arena_bytes"] <= budget)
        x = np.load(work / "x.npy")
        outputs[budget] = run_samples(req.board, info, [{info["inputs"][0]["name"]: x[i:i + 1]} for i in range(2)],
                                      False)["outputs"]
    for whole, banded in zip(outputs[None], outputs[30000]):
        for name in whole:
            assert np.array_equal(whole[name], banded[name]), name


def test_a_budget_nothing_reaches_is_exit_4_naming_the_smallest_arena(work):
    out = work / "never"
    r = cli("build", "--board", "cortex-m7", "--profile", "lite", "--model", RESNET8, "--calib", work / "calib.npy",
            "--arena-budget", 4096, "-o", out, cwd=work)
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("cuvil-sdk: error: the arena cannot be brought within the budget of 4096 B: the smallest "
                           "arena found is ") and "Traceback" not in r.stderr
    smallest = int(line.split("smallest arena found is ")[1].split()[0])
    assert 4096 < smallest < HALF_TFLM
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()


def test_cuvil_toml_arena_budget_and_a_bad_value(work):
    project = work / "project"
    project.mkdir()
    (project / "cuvil.toml").write_text(f'model = "{RESNET8}"\nboard = "host"\nprofile = "standard"\n'
                                        f'calib = "{work / "calib.npy"}"\narena-budget = 30000\n')
    r = cli("build", "--json", cwd=project)
    assert r.returncode == 0, r.stderr
    built = json.loads(r.stdout)
    assert built["arena_bytes"] <= 30000 and built["tiling"]["budget"] == 30000
    r = cli("build", "--arena-budget", "0", "--json", cwd=project)
    assert r.returncode == 2 and json.loads(r.stdout)["error"] == "--arena-budget 0: expected a positive number of bytes"
