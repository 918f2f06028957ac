"""--precision fp16 on the boards that have it (rpi5: NEON half precision under qemu-aarch64
-cpu max; jetson: the CUDA kernels on the CPU emulation of the driver, under qemu-aarch64),
through the real CLI, against ONNX Runtime's float model by cosine; and the boards without
fp16 refusing it with one line.

fp16 is not bit-exact with anything (half storage, float32 sums in another order): the
outputs are compared with ONNX Runtime's float outputs, cosine >= 0.999 per sample.
A missing tool (cross compiler, qemu-aarch64, nvcc) makes the tests fail, never skip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk import cuda_tools
from cuvil_sdk.codegen.cuda_emulator import build_emulator
from cuvil_sdk.quant.half import FLOAT_LAYER_REASON

import simd_cases as sc
from models import EXAMPLES, cli, cli_run, cosine, ort_outputs
from test_simd_rpi5 import float_grid_run
from tools import missing_tools

RESNET8 = EXAMPLES / "resnet8_fp32.onnx"
MOBILENETV2 = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "zoo" / "mobilenetv2_small.onnx"
TOOLS = ["aarch64-linux-gnu-gcc", "qemu-aarch64", "scons"]
COSINE = 0.999


@pytest.fixture(scope="module", autouse=True)
def tools_present():
    assert not missing_tools(TOOLS), f"missing tools: {missing_tools(TOOLS)}"


def samples(shape: tuple[int, ...], n: int = 2, seed: int = 15) -> np.ndarray:
    return np.random.default_rng(seed).random((n, *shape), dtype=np.float32)


def per_sample_cosines(got: np.ndarray, want: np.ndarray) -> list[float]:
    return [cosine(got[i:i + 1], want[i:i + 1]) for i in range(len(want))]


def fp32_weight_bytes(tmp: Path, model: Path, board: str) -> int:
    r = cli("compile", model, "--board", board, "--profile", "standard", "--precision", "fp32", "-o", tmp / "fp32",
            "--json", cwd=tmp)
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout)["weight_bytes"]


@pytest.mark.slow
def test_rpi5_fp16_resnet8_matches_onnxruntime_with_half_the_weight_bytes(tmp_path):
    x = samples((3, 32, 32))
    outs, report = cli_run(tmp_path, "rpi5", "standard", RESNET8, x, None, "--precision", "fp16")
    cosines = per_sample_cosines(next(iter(outs.values())), ort_outputs(RESNET8, x))
    assert min(cosines) >= COSINE, cosines
    assert report["precision"] == "fp16"
    fp32 = fp32_weight_bytes(tmp_path, RESNET8, "rpi5")
    # the conv/FC weights as fp16; the biases stay float32 (a few hundred values)
    assert 0.45 * fp32 <= report["weight_bytes"] <= 0.52 * fp32, (report["weight_bytes"], fp32)
    # Softmax has no fp16 kernel: computed in fp32, and said so
    assert {(f["op"], f["reason"]) for f in report["fallbacks"]} >= {("Softmax", FLOAT_LAYER_REASON)}


# fp16 storage of every activation and weight against the float32 reference: each output within
# this fraction of its largest magnitude (11-bit significands, roundings through the layers)
GRID_TOLERANCE = 1e-2
FP16_MAX = 65504.0
# the SIMD float cases (the neon fp16 kernels' blocks and tails) and one case of each other f16
# family, plus layers computed in fp32 inside the build (Softmax; GRU with its scratch tensor)
GRID_IDS = sc.FP32_IDS + ["conv_depthwise_mult2", "matmul_3d", "add_bcast_both", "maxpool_ceil",
                          "avgpool_ceil_include_pad", "concat_channels", "pad_value", "transpose_0321", "sigmoid",
                          "softmax_rows", "seq_gru_forward"]


@pytest.mark.slow
def test_rpi5_fp16_kernel_grid_matches_run_float(tmp_path):
    """The float kernel grid (odd channel counts, strides, padding, depthwise multipliers, tails of
    the 8-lane blocks, LSTM/GRU, softmax, ...) in one fp16 build: the SIMD float cases on the neon
    fp16 kernels, every output close to the float32 reference."""
    net, info, got, want, ids = float_grid_run(tmp_path, "fp16", GRID_IDS)
    chosen = sc.main_layer_kernels(info, net)
    for cid in sc.FP32_IDS:
        assert chosen[cid] == f"{sc.EXPECT[cid]}_f16_neon", f"{cid}: {chosen[cid]}"
    for cid in ids:
        for y in net.outputs[cid]:
            for i, (a, b) in enumerate(zip(got, want)):
                a = a[y].reshape(b[y].shape)
                if np.abs(b[y]).max() > FP16_MAX:  # beyond fp16: the stored value is infinite
                    assert np.isinf(a[np.abs(b[y]) > FP16_MAX * 1.001]).all(), f"{cid} {y} sample {i}"
                    continue
                err = float(np.abs(a - b[y]).max())
                assert err <= GRID_TOLERANCE * max(1.0, float(np.abs(b[y]).max())), f"{cid} {y} sample {i}: {err}"


@pytest.mark.slow
def test_rpi5_fp16_mobilenetv2_matches_onnxruntime(tmp_path):
    x = samples((3, 48, 48), seed=16)
    outs, report = cli_run(tmp_path, "rpi5", "standard", MOBILENETV2, x, None, "--precision", "fp16")
    cosines = per_sample_cosines(outs["y"], ort_outputs(MOBILENETV2, x))
    assert min(cosines) >= COSINE, cosines
    # the depthwise, pointwise and FC layers take the NEON fp16 kernels, not the portable loops
    slow = [f for f in report["fallbacks"] if f["kernel"] in ("conv2d_f16", "fc_f16")]
    assert not slow, slow


@pytest.mark.slow
def test_jetson_fp16_resnet8_gpu_path_emulated(tmp_path, monkeypatch):
    """The jetson fp16 library: its device code built by nvcc for sm_87 (the build fails without
    nvcc), every layer on the CUDA path (half kernels), run under qemu-aarch64 on the CPU
    emulation of the driver; the outputs against ONNX Runtime's float model."""
    assert cuda_tools.find_nvcc(), "nvcc (CUDA toolkit) not found: the jetson fp16 build needs it"
    emulator = build_emulator(tmp_path / "emu", cc="aarch64-linux-gnu-gcc")
    log = tmp_path / "emu.log"
    monkeypatch.setenv("CUVIL_LIBCUDA", str(emulator))
    monkeypatch.setenv("CUVIL_EMU_LOG", str(log))
    x = samples((3, 32, 32), n=1, seed=17)
    outs, report = cli_run(tmp_path, "jetson", "standard", RESNET8, x, None, "--precision", "fp16")
    cosines = per_sample_cosines(next(iter(outs.values())), ort_outputs(RESNET8, x))
    assert min(cosines) >= COSINE, cosines
    cuda = report["cuda"]
    assert "disabled" not in cuda, cuda["disabled"]
    assert {"conv2d_f16", "add_f16", "avgpool_f16", "fc_f16", "convert_f16_f32"} <= set(cuda["kernels"])
    counts = dict(zip(*[iter(log.read_text().split())] * 2))
    assert int(counts["launches"]) >= cuda["launches"] * len(x) and int(counts["errors"]) == 0, counts


@pytest.mark.parametrize("board, profile", [("host", "standard"), ("cortex-m7", "lite"), ("cortex-m7", "standard")])
def test_boards_without_fp16_refuse_it_in_one_line(tmp_path, board, profile):
    r = cli("build", "--board", board, "--profile", profile, "--precision", "fp16", "--model", RESNET8, "-o",
            tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "fp16" in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
