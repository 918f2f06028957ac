"""Per-layer instruction profile of Cortex-M7 firmware under QEMU (docs/internals.md, instruction counts):
`cuvil-sdk run --board cortex-m7 --json` reports `layers` (index, name, op, kernel, MACs,
guest instructions, instructions per MAC) and `layers_total`, and prints a table on stderr.

The firmware reads SysTick around each layer when built with -D<NAME>_PROFILE, which the
SConscript adds for boards whose file sets firmware.profile_layers (cortex-m7 does,
cortex-m7-small does not); the harness writes layers.txt and the runner reads it.
A missing tool makes these tests fail, never skip.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes
from cuvil_sdk.errors import TargetError
from cuvil_sdk.runners.firmware import layer_macs, layer_profile, layer_table
from cuvil_sdk.runners.qemu_m7 import _read_dumps, _read_layers
from models import EXAMPLES, cli, request

DIGITS = np.load(EXAMPLES / "digits_data.npz")
TICK = 40  # instructions per SysTick tick (board.toml firmware.instructions_per_tick)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("profile")
    np.save(tmp / "calib.npy", DIGITS["calib"])
    np.save(tmp / "x.npy", DIGITS["x"][:2])
    return tmp


def run(work: Path, board: str, *extra: str):
    r = cli("run", "--board", board, "--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx", "--input",
            work / "x.npy", "--output", work / f"out-{board}.npz", "--calib", work / "calib.npy", *extra, cwd=work)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r


@pytest.fixture(scope="module")
def first(work):
    r = run(work, "cortex-m7", "--json", "-o", work / "kept")
    return json.loads(r.stdout), r.stderr


@pytest.mark.slow
def test_report_html_names_each_layers_kernel_variant(work, first):
    """`run -o DIR` keeps DIR/report.html, whose layer table names the variant the kernel's rule
    chose for each layer (tile shape, loop order, weight layout)."""
    report, _ = first
    page = (work / "kept" / "report.html").read_text()
    variants = [(layer["kernel"], layer["variant"]) for layer in report["layers"] if layer.get("variant")]
    assert len(variants) >= 4  # digits: three convs and the FC on the DSP set
    for kernel, variant in variants:
        assert f'{kernel} <span class="variant">({html.escape(variant)})</span>' in page, (kernel, variant)


@pytest.mark.slow
def test_run_json_reports_every_layer(work, first):
    report, _ = first
    manifest_layers = report["layers"]
    g = frontend_and_passes(request("digits_cnn.onnx", "cortex-m7", "lite", work / "calib.npy"))
    macs = layer_macs(g)
    assert [layer["name"] for layer in manifest_layers] == [n.name for n in g.nodes]
    for layer in manifest_layers:
        assert set(layer) - {"variant"} == {"index", "name", "op", "kernel", "macs", "instructions",
                                            "instructions_per_mac"}
        if layer["kernel"] == "conv2d_s8_dsp":  # the variant its rule picked (tile shape, weight layout)
            assert "x2 w8" in layer.get("variant", ""), layer
        assert layer["macs"] == macs[layer["name"]]
        if layer["kernel"] == "(alias)":
            assert layer["instructions"] == 0
            continue
        assert layer["instructions"] > 0 and layer["instructions"] % TICK == 0, layer
        if layer["op"] in ("Conv", "Gemm"):
            assert layer["macs"] > 0 and layer["kernel"].endswith(("_dsp", "_dsp_dw", "_dsp_dw3x3")), layer
            assert layer["instructions_per_mac"] == round(layer["instructions"] / layer["macs"], 3)
        else:
            assert layer["macs"] == 0 and layer["instructions_per_mac"] is None
    total = report["layers_total"]
    assert total["macs"] == sum(macs.values()) == 198976
    assert total["instructions"] == report["instructions"] == report["instructions_per_sample"][0]
    # the layers are nearly all of an inference (the rest: copying inputs and outputs)
    assert 0.9 * total["instructions"] < total["layers_instructions"] <= total["instructions"]
    assert total["instructions_per_mac"] == round(total["instructions"] / total["macs"], 3)
    assert "not cycles" in total["note"]


@pytest.mark.slow
def test_table_on_stderr(first):
    report, stderr = first
    assert "instructions" in stderr and "/MAC" in stderr and "total (whole inference)" in stderr
    for layer in report["layers"]:
        assert layer["kernel"] in stderr
    assert f"{report['layers_total']['instructions']}" in stderr


@pytest.mark.slow
def test_two_runs_give_identical_counts(work, first):
    report, _ = first
    again = json.loads(run(work, "cortex-m7", "--json").stdout)
    assert again["layers"] == report["layers"]
    assert again["layers_total"] == report["layers_total"]
    assert again["instructions_per_sample"] == report["instructions_per_sample"]


@pytest.mark.slow
def test_human_run_prints_the_table_and_boards_without_profiling_report_none(work):
    human = run(work, "cortex-m7")
    assert "total (whole inference)" in human.stderr and "guest instructions per inference" in human.stdout
    assert not get_board("cortex-m7-small").get("firmware.profile_layers", False)
    small = json.loads(run(work, "cortex-m7-small", "--json").stdout)
    assert small["instructions"] > 0 and "layers" not in small and "layers_total" not in small


# --- host-only ------------------------------------------------------------------------------------
def test_layers_file_is_parsed_and_checked(tmp_path):
    path = tmp_path / "layers.txt"
    path.write_text("sample 0 layer 1 instructions 400\nsample 0 layer 3 instructions 80\n"
                    "sample 1 layer 1 instructions 440\n")
    assert _read_layers(path, 2) == [{1: 400, 3: 80}, {1: 440}]
    assert _read_layers(tmp_path / "missing.txt", 2) is None
    path.write_text("sample 0 layer one instructions 400\n")
    with pytest.raises(TargetError, match="layers.txt line 1"):
        _read_layers(path, 1)
    path.write_text("sample 2 layer 1 instructions 400\n")
    with pytest.raises(TargetError, match="layers.txt line 1"):
        _read_layers(path, 2)


def test_debug_dumps_file_is_parsed_and_checked(tmp_path):
    """dumps.bin of debug builds (validate --per-layer): [sample][layer][bytes] records."""
    import struct
    path = tmp_path / "dumps.bin"
    path.write_bytes(struct.pack("<III", 0, 2, 3) + b"abc" + struct.pack("<III", 1, 2, 1) + b"z")
    assert _read_dumps(path, 2) == [{2: b"abc"}, {2: b"z"}]
    assert _read_dumps(tmp_path / "missing.bin", 2) is None
    path.write_bytes(struct.pack("<III", 0, 2, 9) + b"abc")
    with pytest.raises(TargetError, match="dumps.bin record at byte 0"):
        _read_dumps(path, 1)


def test_profile_and_table_from_counts():
    info = {"layers": [{"index": 0, "name": "a", "op": "Conv", "kernel": "conv2d_s8_dsp", "calls": 1},
                       {"index": 1, "name": "b", "op": "Reshape", "kernel": "(alias)", "calls": 0},
                       {"index": 2, "name": "c", "op": "Softmax", "kernel": "softmax_s8", "calls": 1}]}
    profile = layer_profile(info, {0: 800, 2: 120}, {"a": 1000, "b": 0, "c": 0}, 1000)
    assert [layer["instructions"] for layer in profile["layers"]] == [800, 0, 120]
    assert profile["layers"][0]["instructions_per_mac"] == 0.8 and profile["layers"][2]["instructions_per_mac"] is None
    assert profile["layers_total"]["layers_instructions"] == 920
    assert profile["layers_total"]["instructions_per_mac"] == 1.0
    table = layer_table(profile)
    assert "conv2d_s8_dsp" in table and "0.80" in table and table.count("\n") == 5
