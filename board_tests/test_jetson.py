"""The CUDA backend of the jetson boards, tested without a GPU.

- Every CUDA kernel template compiles for compute capability 8.7 with nvcc (SASS) and with
  nvcc -ptx + ptxas (skipped, with the reason, only where nvcc is absent).
- A jetson build is an aarch64 library with sm_87 SASS and compute_87 PTX embedded in its
  .nv_fatbin section (read back here, and with cuobjdump where it is installed).
- Under qemu-aarch64 there is no CUDA driver: the library runs its CPU path, says so
  (<name>_backend() == "cpu"), and its outputs equal the host build's bit for bit.
- The GPU path itself runs on the CPU emulation of the driver API
  (cuvil_sdk/codegen/cuda_emulator.py: the same kernel sources compiled as C, run thread by
  thread, with bounds and guard checks): the jetson library under qemu-aarch64, and the
  kernel grid of kernel_cases.py (odd sizes, so launches whose thread count is no multiple of
  the block) in an x86-64 CUDA build, int8 bit for bit against the numpy reference.
  What only a GPU shows (real scheduling, timing, the driver's JIT) is benchmarks/gpu_check.py.

The jetson CPU path of resnet8 is also in test_rpi5.py.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernel_cases as kc
from cuda_cases import GRID_IDS, make_grid_net
from math_cases import MATH_INT8_KERNELS
from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk import cuda_tools
from cuvil_sdk.codegen import cuda
from cuvil_sdk.kernels.portable.declarations import CPU_ONLY
from cuvil_sdk.kernels.contract import declarations
from cuvil_sdk.kernels.kernel_sets import KERNEL_SETS
from cuvil_sdk.codegen.cuda_emulator import build_emulator
from cuvil_sdk.commands import do_build
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.errors import ToolError
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float, run_int, run_quantized_model
from test_rpi5 import DIGITS, EM_AARCH64, RESNET8, assert_identical, elf_header, run_cli

NVCC = cuda_tools.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) not found: the CUDA kernels cannot "
                                                      "be compiled here (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
SYSROOT = "/usr/aarch64-linux-gnu"
EMULATED_ARCH = "sm_90"  # the x86-64 CUDA builds below: one architecture keeps nvcc quick
INT8_SAMPLES = 4


# --- templates ---------------------------------------------------------------------------------
def cubin_kernels(cubin: Path) -> set[str]:
    """Kernel names in a cubin (its .text.<name> sections)."""
    data = cubin.read_bytes()
    names = set(re.findall(rb"\.text\.([A-Za-z_][A-Za-z0-9_]*)\x00", data))
    return {n.decode() for n in names}


@needs_nvcc
def test_every_cuda_template_compiles_for_sm87(tmp_path):
    """nvcc -cubin for sm_87, and nvcc -ptx + ptxas for sm_87, of every kernel template."""
    names = cuda.kernel_names()
    assert len(names) >= 25, names
    source = tmp_path / "all_kernels.cu"
    source.write_text(cuda.render_kernels("all", names, "every template"))
    flags = ["-O3", "--fmad=false", "-Werror", "all-warnings"]
    subprocess.run([NVCC, "-cubin", "-arch=sm_87", *flags, "-o", str(tmp_path / "all.cubin"), str(source)],
                   check=True, capture_output=True, text=True)
    assert cubin_kernels(tmp_path / "all.cubin") == set(names)
    subprocess.run([NVCC, "-ptx", "-arch=compute_87", *flags, "-o", str(tmp_path / "all.ptx"), str(source)],
                   check=True, capture_output=True, text=True)
    ptx = (tmp_path / "all.ptx").read_text()
    assert ".target sm_87" in ptx
    for name in names:
        assert f".entry {name}(" in ptx, name
    ptxas = cuda_tools.find_cuda_tool("ptxas")
    assert ptxas, "ptxas not found beside nvcc"
    subprocess.run([ptxas, "-arch=sm_87", "-O3", "-o", str(tmp_path / "ptxas.cubin"), str(tmp_path / "all.ptx")],
                   check=True, capture_output=True, text=True)
    assert cubin_kernels(tmp_path / "ptxas.cubin") == set(names)


def test_every_portable_kernel_has_a_cuda_rule():
    """Every portable kernel but those of integer and bool tensors (CPU_ONLY: a model that uses one
    runs on the CPU path of a jetson board), which have none."""
    missing = sorted(set(declarations("portable")) - set(KERNEL_SETS["cuda"].rules) - CPU_ONLY)
    assert not missing, f"portable kernels without a CUDA version: {missing}"
    assert not CPU_ONLY & set(declarations("cuda"))


@pytest.mark.parametrize("threads", [1, 5, 127, 128, 129, 255, 256, 1000, 8976, 2**20 + 3])
def test_launch_geometry_is_ceiling_division(threads):
    grid, block = cuda.geometry(threads)
    assert block == cuda.BLOCK
    assert grid * block >= threads > (grid - 1) * block


# --- the jetson library ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("jetson")


@pytest.fixture(scope="module")
def digits():
    data = np.load(kc.ROOT / "sdk" / "examples" / "digits_data.npz")
    return data["x"][:12], data["calib"]


@pytest.fixture(scope="module")
def digits_host(work, digits):
    x, calib = digits
    return run_cli(work, "digits-host", "host", DIGITS, x, calib)[0]


@pytest.fixture(scope="module")
def digits_jetson(work, digits):
    assert "CUVIL_LIBCUDA" not in os.environ
    x, calib = digits
    return run_cli(work, "digits-jetson", "jetson", DIGITS, x, calib, keep=True)


@pytest.fixture(scope="module")
def backend_probe(digits_jetson, work) -> Path:
    """An aarch64 program that prints digits_cnn_backend() and its reason (under qemu-aarch64)."""
    so = Path(digits_jetson[1]["artifacts"]["so"])
    source = work / "probe.c"
    source.write_text('#include <stdio.h>\n#include "digits_cnn_backend.h"\n'
                      'int main(void) { printf("%s|%s\\n", digits_cnn_backend(), digits_cnn_backend_reason()); '
                      'return 0; }\n')
    exe = so.parent / "probe"
    subprocess.run(["aarch64-linux-gnu-gcc", "-std=c99", "-Wall", "-Werror", "-I", str(so.parents[1] / "src"),
                    "-o", str(exe), str(source), "-L", str(so.parent), "-ldigits_cnn", "-Wl,-rpath,$ORIGIN"],
                   check=True, capture_output=True, text=True)
    return exe


def probe(exe: Path, env: dict | None = None) -> tuple[str, str]:
    out = subprocess.run(["qemu-aarch64", "-cpu", "max", "-L", SYSROOT, str(exe)], capture_output=True, text=True,
                         check=True, env={**os.environ, **(env or {})}, timeout=120).stdout.strip()
    backend, _, reason = out.partition("|")
    return backend, reason


@needs_nvcc
def test_jetson_library_is_aarch64_with_sm87_code(digits_jetson):
    _, report = digits_jetson
    so = Path(report["artifacts"]["so"])
    assert elf_header(so) == (2, 3, EM_AARCH64)
    embedded = cuda_tools.embedded_device_code(so)
    assert ("sass", "sm_87") in {(e.kind, e.arch) for e in embedded}, embedded
    assert ("ptx", "compute_87") in {(e.kind, e.arch) for e in embedded}, embedded
    spec = (so.parents[1] / "cuda.json").read_text()
    assert '"sm_87"' in spec
    symbols = subprocess.run(["aarch64-linux-gnu-nm", "-D", "--defined-only", str(so)], capture_output=True,
                             text=True, check=True).stdout.split()
    for api in ("digits_cnn_run", "digits_cnn_run_int8", "digits_cnn_backend", "digits_cnn_backend_reason",
                "digits_cnn_backend_release"):
        assert api in symbols, api
    assert "digits_cnn_layers_hook" not in symbols and "digits_cnn_cuda_fatbin" not in symbols  # hidden
    # loads with old glibc (Jetson Linux on Ubuntu 20.04): GLIBC_2.17 symbols only, dl/pthread NEEDED
    versions = subprocess.run(["aarch64-linux-gnu-readelf", "-V", "-d", str(so)], capture_output=True, text=True,
                              check=True).stdout
    assert set(re.findall(r"Name: (GLIBC_[0-9.]+)", versions)) == {"GLIBC_2.17"}, versions
    assert "libdl.so.2" in versions


@needs_nvcc
def test_cuobjdump_lists_sm87(digits_jetson):
    cuobjdump = cuda_tools.find_cuda_tool("cuobjdump")
    assert cuobjdump, "cuobjdump not found (scripts/setup.sh installs NVIDIA's nvidia-cuda-cuobjdump wheel into .venv)"
    so = digits_jetson[1]["artifacts"]["so"]
    listed = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True, check=True).stdout
    assert "sm_87" in listed, listed
    ptx = subprocess.run([cuobjdump, "--list-ptx", so], capture_output=True, text=True, check=True).stdout
    assert "sm_87" in ptx, ptx


def test_jetson_cpu_fallback_identical_to_host(digits_jetson, digits_host, backend_probe):
    """No CUDA driver under qemu-aarch64: the CPU path runs, bit-identical to the host."""
    ours, report = digits_jetson
    assert report["board"] == "jetson" and report["precision"] == "int8"
    assert_identical(ours, digits_host)
    backend, reason = probe(backend_probe, {"CUVIL_LIBCUDA": ""})
    assert backend == "cpu" and "no CUDA driver" in reason and "libcuda.so.1" in reason, reason


def test_jetson_backend_forced_to_cpu(backend_probe, tmp_path_factory):
    emulator = build_emulator(tmp_path_factory.mktemp("emu_a64"), cc="aarch64-linux-gnu-gcc")
    backend, reason = probe(backend_probe, {"CUVIL_LIBCUDA": str(emulator), "CUVIL_BACKEND": "cpu"})
    assert (backend, reason) == ("cpu", "CPU path: CUVIL_BACKEND=cpu")


def test_jetson_gpu_path_emulated_under_qemu(work, digits, digits_jetson, digits_host, backend_probe,
                                            tmp_path_factory, monkeypatch):
    """The library's GPU path on the aarch64 CPU emulation of the driver: the driver found by
    dlopen, the fat binary accepted for sm_87, every launch run; outputs equal the host's."""
    emulator = build_emulator(tmp_path_factory.mktemp("emu_a64_run"), cc="aarch64-linux-gnu-gcc")
    backend, reason = probe(backend_probe, {"CUVIL_LIBCUDA": str(emulator)})
    assert backend == "cuda" and reason == "CUDA: cuvil-sdk CPU emulation (sm_87)", reason
    log = work / "emu.log"
    monkeypatch.setenv("CUVIL_LIBCUDA", str(emulator))
    monkeypatch.setenv("CUVIL_EMU_LOG", str(log))
    from cuvil_sdk.runners.linux_qemu import run_on_qemu_user
    x, _ = digits
    so = Path(digits_jetson[1]["artifacts"]["so"])
    manifest = json.loads((so.parents[1] / "manifest.json").read_text())
    result = run_on_qemu_user(get_board("jetson"), {**manifest, "artifacts": {"so": str(so)}},
                              [{"image": s[None]} for s in x], False)
    got = np.stack([r["logits"] for r in result["outputs"]]).reshape(len(x), -1)
    assert np.array_equal(got, digits_host["logits"].reshape(len(x), -1))
    counts = dict(zip(*[iter(log.read_text().split())] * 2))
    launches = manifest["cuda"]["launches"]
    assert int(counts["launches"]) == launches * len(x) and int(counts["errors"]) == 0, counts


@needs_nvcc
def test_xavier_board_needs_a_toolkit_with_sm72(tmp_path):
    """jetson-xavier is the same board with cuda_arch sm_72: built where nvcc has sm_72 (CUDA
    up to 12.x), a tool error that says so where it has not (CUDA 13)."""
    board = get_board("jetson-xavier")
    assert cuda.board_arches(board) == (["sm_72"], "compute_72")
    req = CompileRequest(model=DIGITS, board=board, profile=get_profile("standard"),
                         calib=str(kc.ROOT / "sdk" / "examples" / "digits_calib.npy"))
    if "sm_72" in cuda_tools.nvcc_arches(NVCC):
        info = do_build(req, tmp_path / "out", 2)
        assert ("sass", "sm_72") in {(e.kind, e.arch) for e in cuda_tools.embedded_device_code(Path(info["artifacts"]["so"]))}
        return
    with pytest.raises(ToolError, match="cannot compile for sm_72"):
        do_build(req, tmp_path / "out", 2)


def test_model_without_cuda_kernel_keeps_the_cpu_path(tmp_path, monkeypatch):
    """A layer without a CUDA kernel: the library is rendered with the CUDA part disabled
    and a reason naming the layer (the CPU path runs everything)."""
    monkeypatch.delitem(KERNEL_SETS["cuda"].rules, "maxpool_s8")
    req = CompileRequest(model=DIGITS, board=get_board("jetson"), profile=get_profile("standard"),
                         calib=str(kc.ROOT / "sdk" / "examples" / "digits_calib.npy"))
    from cuvil_sdk.commands import do_compile
    info = do_compile(req, tmp_path / "out")
    host = (tmp_path / "out" / "src" / "digits_cnn_cuda.c").read_text()
    assert "#define ENABLED 0" in host and "(maxpool_s8)" in host
    assert "maxpool_s8" in info["cuda"]["disabled"]


# --- the GPU path on the CPU emulation: kernel grid and models (x86-64 CUDA builds) -------------
def cuda_host_board(arch: str = EMULATED_ARCH):
    board = get_board("host-cuda")
    return dataclasses.replace(board, data={**board.data, "cuda_arch": arch})


def build_cuda_host(net: kc.Net, out: Path, precision: str) -> dict:
    req = CompileRequest(model=net.path, board=cuda_host_board(), profile=get_profile("standard"),
                         precision=precision, calib=str(net.calib) if precision == "int8" else None, name=net.name)
    return do_build(req, out, 2)


class Emulated:
    """A host-cuda library loaded in this process with the CPU emulation as its driver."""

    def __init__(self, so: str, emulator: Path) -> None:
        self.lib = ctypes.CDLL(so)
        self.name = Path(so).stem.removeprefix("lib")
        self.emulator = emulator
        for fn in ("backend", "backend_reason"):
            getattr(self.lib, f"{self.name}_{fn}").restype = ctypes.c_char_p

    def start(self, **env: str) -> tuple[str, str]:
        """(Re)initialise the backend with these environment variables (CUVIL_LIBCUDA set)."""
        getattr(self.lib, f"{self.name}_backend_release")()
        saved = dict(os.environ)
        os.environ.update({"CUVIL_LIBCUDA": str(self.emulator), "CUVIL_EMU_SM": str(cuda_tools.sm_number(EMULATED_ARCH)),
                           **env})
        try:
            return (getattr(self.lib, f"{self.name}_backend")().decode(),
                    getattr(self.lib, f"{self.name}_backend_reason")().decode())
        finally:
            os.environ.clear()
            os.environ.update(saved)


def emulator_counts(emulator: Path) -> dict[str, int]:
    lib = ctypes.CDLL(str(emulator))
    values = [ctypes.c_long() for _ in range(4)]
    lib.cuvil_emu_counts(*[ctypes.byref(v) for v in values])
    return dict(zip(("launches", "live", "contexts", "errors"), (v.value for v in values)))


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Path:
    return build_emulator(tmp_path_factory.mktemp("emu_x86"))


@pytest.fixture(scope="module")
def grid(tmp_path_factory, emulator):
    """Every kernel case in one int8 model, built for host-cuda (sm_90) and run on the emulation."""
    folder = tmp_path_factory.mktemp("cuda_grid")
    net = kc.save_net(make_grid_net("k_cuda", GRID_IDS), folder)
    g = kc.reference_graph(net, "host-cuda", "standard", "int8")
    info = build_cuda_host(net, folder / "out", "int8")
    q_samples = kc.int8_samples(g, INT8_SAMPLES, seed=21)
    f_samples = kc.float_samples(net, 2, seed=22)
    emu = Emulated(info["artifacts"]["so"], emulator)
    before = emulator_counts(emulator)["launches"]
    assert emu.start() == ("cuda", "CUDA: cuvil-sdk CPU emulation (sm_90)")
    with runtime.load(info["artifacts"]["so"]) as model:
        got = [model.run_int8(s) for s in q_samples]
        float_got = [model.run(s) for s in f_samples]
    counts = emulator_counts(emulator)
    assert counts["launches"] - before == info["cuda"]["launches"] * (len(q_samples) + len(f_samples))
    assert counts["errors"] == 0
    return {"net": net, "g": g, "info": info, "got": got, "want": [run_int(g, s) for s in q_samples],
            "float_got": float_got, "float_want": [run_quantized_model(g, s)[1] for s in f_samples], "emu": emu}


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("cid", GRID_IDS)
def test_cuda_kernel_bit_exact_emulated(grid, cid):
    for y in grid["net"].outputs[cid]:
        for i, (got, want) in enumerate(zip(grid["got"], grid["want"])):
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, int8 sample {i}: {kc.mismatch(got[y], want[y])}"
        for i, (got, want) in enumerate(zip(grid["float_got"], grid["float_want"])):
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, float sample {i}"


@needs_nvcc
@pytest.mark.slow
def test_cuda_grid_uses_every_int8_kernel(grid):
    """The grid exercises every int8 CUDA kernel, dp4a variants included, and launches of
    many blocks whose thread count is no multiple of the block."""
    used = set(grid["info"]["cuda"]["kernels"])
    # not in the grid: copy_bytes (alias ops need no copy), the float/int8 conversions, the fp16 kernels and the
    # 16x8 kernels (mixed-precision builds; the template test compiles them)
    # the math kernels (opset 21 cases): test_math_kernels.py's CUDA build
    # and lstm_s8_s16state (--input-precision h=int16 c=int16: tests/test_input_precision.py's builds)
    int8_kernels = {k for k in cuda.kernel_names() if not k.endswith(("_f32", "_f16", "_s16", "_s16state"))} - {
        "quantize_f32_s8", "copy_bytes", "requant_s8_s16", "requant_s16_s8"} - set(MATH_INT8_KERNELS)
    assert int8_kernels <= used, sorted(int8_kernels - used)
    host = (Path(grid["info"]["out_dir"]) / "src" / "k_cuda_cuda.c").read_text()
    threads = [int(t) for t in re.findall(r"/\* \w+, (\d+) threads \*/", host)]
    assert max(threads) > 10 * cuda.BLOCK and any(t % cuda.BLOCK for t in threads if t > cuda.BLOCK)


@needs_nvcc
@pytest.mark.slow
def test_cuda_launch_failure_falls_back_to_cpu(grid):
    """A launch that fails: this run and the next ones run on the CPU, still bit-exact, and
    the reason says why; after release the GPU path is tried again."""
    emu, sample = grid["emu"], kc.int8_samples(grid["g"], 1, seed=23, extremes=False)[0]
    assert emu.start(CUVIL_EMU_FAIL="launch")[0] == "cuda"
    os.environ["CUVIL_EMU_FAIL"] = "launch"
    try:
        with runtime.load(grid["info"]["artifacts"]["so"]) as model:
            got = model.run_int8(sample)
    finally:
        del os.environ["CUVIL_EMU_FAIL"]
    want = run_int(grid["g"], sample)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    reason = getattr(emu.lib, f"{emu.name}_backend_reason")().decode()
    assert "a CUDA launch or copy failed" in reason and "CUDA_ERROR_LAUNCH_FAILED" in reason, reason
    assert emulator_counts(emu.emulator)["live"] == 0  # device memory freed on the way to the CPU path
    assert emu.start()[0] == "cuda"


@needs_nvcc
@pytest.mark.slow
def test_cuda_no_code_for_the_device_falls_back_to_cpu(grid):
    """An sm_90 + compute_90 library on an sm_89 device: no SASS, PTX too new -> CPU, and
    the reason names the device's architecture and what the library has."""
    backend, reason = grid["emu"].start(CUVIL_EMU_SM="89")
    assert backend == "cpu"
    assert "sm_89" in reason and "sm_90 SASS and compute_90 PTX" in reason and "NO_BINARY_FOR_GPU" in reason, reason
    assert grid["emu"].start()[0] == "cuda"


@pytest.fixture(scope="module")
def fp32_grid(tmp_path_factory, emulator):
    folder = tmp_path_factory.mktemp("cuda_fp32")
    net = kc.save_net(make_grid_net("k_cuda_fp32", kc.FP32_CASES), folder)
    g = kc.reference_graph(net, "host-cuda", "standard", "fp32")
    info = build_cuda_host(net, folder / "out", "fp32")
    samples = kc.float_samples(net, 3, seed=24)
    emu = Emulated(info["artifacts"]["so"], emulator)
    assert emu.start()[0] == "cuda"
    with runtime.load(info["artifacts"]["so"]) as model:
        got = [model.run(s) for s in samples]
    return net, got, [run_float(g, s) for s in samples]


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("cid", kc.FP32_CASES)
def test_cuda_fp32_kernel_matches_run_float_emulated(fp32_grid, cid):
    net, got, want = fp32_grid
    for y in net.outputs[cid]:
        for i, (a, b) in enumerate(zip(got, want)):
            atol = 1e-5 * float(np.abs(b[y]).max())
            np.testing.assert_allclose(a[y], b[y], rtol=1e-5, atol=atol, err_msg=f"{cid} output {y}, sample {i}")


@needs_nvcc
@pytest.mark.slow
def test_resnet8_cuda_emulated_bit_exact(tmp_path, emulator):
    """resnet8 (dp4a convolutions, residual adds, average pool, dp4a FC, softmax) through the
    GPU path, int8 bit for bit against the numpy reference."""
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(4).random((16, 3, 32, 32), dtype=np.float32))
    net = kc.Net("resnet8_fp32", None, {}, {}, path=RESNET8, calib=calib)  # type: ignore[arg-type]
    g = kc.reference_graph(net, "host-cuda", "standard", "int8")
    info = build_cuda_host(net, tmp_path / "out", "int8")
    assert {"conv2d_s8_dp4a", "fc_s8_dp4a", "add_s8", "avgpool_s8", "softmax_s8"} <= set(info["cuda"]["kernels"])
    emu = Emulated(info["artifacts"]["so"], emulator)
    assert emu.start()[0] == "cuda"
    samples = kc.int8_samples(g, 2, seed=25)
    with runtime.load(info["artifacts"]["so"]) as model:
        for s in samples:
            got, want = model.run_int8(s), run_int(g, s)
            assert all(np.array_equal(got[k], want[k]) for k in want)


@needs_nvcc
@pytest.mark.slow
def test_16x8_layers_cuda_emulated_bit_exact(tmp_path, emulator):
    """digits with a convolution and the FC as 16x8 layers (int16 activations): the s16
    kernels and the int8 <-> int16 requantizations on the GPU path, bit for bit."""
    calib = kc.ROOT / "sdk" / "examples" / "digits_calib.npy"
    net = kc.Net("digits_cnn", None, {}, {}, path=DIGITS, calib=calib)  # type: ignore[arg-type]
    names = [n.name for n in kc.reference_graph(net, "host-cuda", "standard", "fp32").nodes
             if n.op in ("Conv", "Gemm", "MatMul")]
    req = CompileRequest(model=DIGITS, board=cuda_host_board(), profile=get_profile("standard"), calib=str(calib),
                         int16_layers=[names[1], names[-1]])
    info = do_build(req, tmp_path / "out", 2)
    assert {"conv2d_s16", "fc_s16", "requant_s8_s16", "requant_s16_s8"} <= set(info["cuda"]["kernels"])
    from cuvil_sdk.compiler import frontend_and_passes, quantize
    g = frontend_and_passes(req)
    quantize(g, req)
    emu = Emulated(info["artifacts"]["so"], emulator)
    assert emu.start()[0] == "cuda"
    with runtime.load(info["artifacts"]["so"]) as model:
        for s in kc.int8_samples(g, 3, seed=26):
            got, want = model.run_int8(s), run_int(g, s)
            assert all(np.array_equal(got[k], want[k]) for k in want)


def test_gpu_check_without_a_gpu_says_so(tmp_path):
    """benchmarks/gpu_check.py where there is no CUDA driver: a clear message, exit 0 (CI skips)."""
    script = kc.ROOT / "benchmarks" / "gpu_check.py"
    env = {**os.environ, "CUVIL_LIBCUDA": str(tmp_path / "no-such-libcuda.so.1")}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "no CUDA GPU" in result.stdout + result.stderr
    strict = subprocess.run([sys.executable, str(script), "--require-gpu"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert strict.returncode == 2


if shutil.which("qemu-aarch64") is None:  # the board tests never skip for a missing QEMU
    raise RuntimeError("qemu-aarch64 not found: install the Debian package qemu-user")
