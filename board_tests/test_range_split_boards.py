"""The range-split rule on every kind of board: the YOLOv8-style fixture (tests/fixtures/yolo_head,
boxes in 0..320 and sigmoid scores in one output) built by the real CLI for the x86-64 host (AVX2
and portable), rpi5 (under qemu-aarch64) and cortex-m7 (under qemu-system-arm). The int8 codes
of every board equal the numpy integer reference's, so the outputs (each segment dequantized with
its own scale) are equal to the last bit; the detections equal ONNX Runtime's float model's.

A missing tool makes the tests fail, never skip.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.kernels.segments import dequantize_entry
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model
from cuvil_sdk.request import CompileRequest
from models import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "yolo_head"
MODEL, CALIB = FIXTURE / "yolo_head.onnx", FIXTURE / "calib.npy"
BOARDS = {"host": "standard", "host-portable": "standard", "rpi5": "standard", "cortex-m7": "lite"}

sys.path.insert(0, str(ROOT / "tests"))
from test_range_split import ort_run, same_detections  # noqa: E402


def run_on(work: Path, board: str, *extra: str) -> tuple[np.ndarray, dict]:
    x = np.load(FIXTURE / "test.npz")["x"]
    np.save(work / "x.npy", x)
    out = work / f"y-{board}{''.join(extra)}.npz"
    r = cli("run", "--board", board, "--profile", BOARDS[board], "--model", MODEL, "--calib", CALIB,
            "--input", work / "x.npy", "--output", out, "--json", *extra, cwd=work)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    y = np.load(out)["output0"]  # (N, 1, 64, 7): run stacks the samples; the reference concatenates batches of 1
    return y.reshape(y.shape[0], *y.shape[2:]), json.loads(r.stdout)


def reference(board: str, *options) -> tuple[np.ndarray, np.ndarray]:
    """(int8 codes, float outputs) of the numpy integer reference of the same compilation."""
    req = CompileRequest(model=MODEL, board=get_board(board), profile=get_profile(BOARDS[board]), calib=str(CALIB),
                         **dict(options))
    g = frontend_and_passes(req)
    quantize(g, req)
    x = np.load(FIXTURE / "test.npz")["x"]
    runs = [run_quantized_model(g, {"x": x[i:i + 1]}) for i in range(len(x))]
    return (np.concatenate([raw["output0"] for raw, _ in runs]), np.concatenate([out["output0"] for _, out in runs]))


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("range-split")


@pytest.fixture(scope="module")
def host_y(work) -> np.ndarray:
    return run_on(work, "host")[0]


@pytest.mark.parametrize("board", list(BOARDS))
def test_outputs_equal_the_reference_and_every_board(work, board, host_y):
    y, _ = run_on(work, board)
    codes, want = reference(board)
    assert np.array_equal(y, want), f"{board}: outputs differ from the numpy integer reference"
    assert np.array_equal(y, host_y), f"{board}: outputs differ from the host's"
    float_y = ort_run(MODEL, np.load(FIXTURE / "test.npz")["x"])
    assert same_detections(y, float_y), f"{board}: detections differ from the float model's"
    assert len(np.unique(codes[..., 4:])) > 20  # the scores keep their steps


def test_cortex_m7_old_way_is_one_scale_and_loses_detections(work):
    y, _ = run_on(work, "cortex-m7", "--no-range-split")
    _, want = reference("cortex-m7", ("range_split", 0.0))
    assert np.array_equal(y, want)
    assert not same_detections(y, ort_run(MODEL, np.load(FIXTURE / "test.npz")["x"]))


DEQUANTIZE_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "yolo_head.h"

/* codes.bin -> floats.bin through the generated yolo_head_dequantize_output, buffer by buffer */
int main(int argc, char **argv)
{
    static int8_t q[YOLO_HEAD_OUTPUT_0_SIZE];
    static float y[YOLO_HEAD_OUTPUT_0_SIZE];
    FILE *in = argc == 3 ? fopen(argv[1], "rb") : NULL, *out = argc == 3 ? fopen(argv[2], "wb") : NULL;
    if (!in || !out) return 2;
    while (fread(q, 1, sizeof q, in) == sizeof q) {
        yolo_head_dequantize_output(0, q, y);
        fwrite(y, sizeof(float), YOLO_HEAD_OUTPUT_0_SIZE, out);
    }
    fclose(in);
    return fclose(out) != 0;
}
"""


def test_rpi5_c_dequantization_of_the_segments_equals_the_reference(work):
    """The generated C dequantize_output (what <name>_run applies) of an aarch64 build, under
    qemu-aarch64, on every code of every segment, equals kernels/segments.py's numpy."""
    out = work / "rpi5-build"
    r = cli("build", "--board", "rpi5", "--profile", "standard", "--model", MODEL, "--calib", CALIB, "-o", out,
            "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    entry = json.loads((out / "manifest.json").read_text())["outputs"][0]
    (work / "main.c").write_text(DEQUANTIZE_MAIN)
    exe = work / "dequantize"
    subprocess.run(["aarch64-linux-gnu-gcc", "-O2", "-mcpu=cortex-a76", work / "main.c", "-I", out / "src",
                    "-L", out / "build", "-lyolo_head", "-o", exe], check=True, timeout=300)
    # 256 codes x 7 indices along the axis: 4 buffers of 448 hold every (code, index) pair once
    codes = np.tile(np.arange(-128, 128, dtype=np.int8), 7).reshape(4, 448)
    codes.tofile(work / "codes.bin")
    subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-E", f"LD_LIBRARY_PATH={out / 'build'}", exe,
                    work / "codes.bin", work / "floats.bin"], check=True, timeout=300)
    got = np.fromfile(work / "floats.bin", dtype=np.float32).reshape(4, 1, 64, 7)
    assert entry["segments"] and entry["segment_axis"] == 2
    assert np.array_equal(got, dequantize_entry(codes.reshape(4, 1, 64, 7), entry))
