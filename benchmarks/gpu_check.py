#!/usr/bin/env python3
"""GPU check of the CUDA backend (the jetson boards' kernels) on the GPU of this machine.

It builds the example models for this x86-64 host with the CUDA backend (board host-cuda,
its kernels compiled by nvcc for the GPU found here: SASS for its compute capability plus
PTX), runs them on that GPU through the library's own driver-API path, compares every int8
output bit for bit with the numpy reference (and fp32 builds with the float reference), and
prints per-model latency on the GPU and, for comparison, on the same library's CPU path.
With --grid (the default when board_tests/ is beside it) it does the same for the kernel
grid of board_tests/kernel_cases.py + cuda_cases.py: every int8 kernel on odd sizes.

    python benchmarks/gpu_check.py                 # everything, on GPU 0
    python benchmarks/gpu_check.py --models digits_cnn --repeat 1000
    python benchmarks/gpu_check.py --emulate       # no GPU: the CPU emulation of the driver

Where there is no CUDA driver or GPU it says so and exits 0 (so CI without a GPU passes
over it); --require-gpu makes that exit 2. Exit 1: a result differs or a run failed;
5: a tool is missing (nvcc). Environment: CUVIL_CUDA_DEVICE picks the GPU (default 0),
CUVIL_LIBCUDA the driver library (default libcuda.so.1).

Latency is wall time per inference of <name>_run_int8_arena (or _run_arena for fp32) as
called through ctypes: input copy to the GPU, every kernel launch, output copy back and the
stream synchronisation; median and 90th percentile over --repeat runs after a warm-up.
"""
from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
try:
    import cuvil_sdk  # noqa: F401
except ModuleNotFoundError:  # a plain checkout: the package is the sdk/ folder
    sys.path.insert(0, str(ROOT))
    import sdk

    sys.modules["cuvil_sdk"] = sdk

from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk import cuda_tools  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.compiler import CompileRequest, frontend_and_passes, quantize  # noqa: E402
from cuvil_sdk.errors import CuvilError  # noqa: E402
from cuvil_sdk.profiles import get_profile  # noqa: E402
from cuvil_sdk.reference import run_float, run_int, run_quantized_model  # noqa: E402

EXAMPLES = ROOT / "sdk" / "examples"
HAS_16X8 = "int16_layers" in {f.name for f in dataclasses.fields(CompileRequest)}
FP32_RTOL = 1e-4


class NoGpu(Exception):
    pass


@dataclasses.dataclass
class Gpu:
    name: str
    major: int
    minor: int
    driver: str

    @property
    def arch(self) -> str:
        return f"sm_{self.major}{self.minor}"


def find_gpu(ordinal: int) -> Gpu:
    """The GPU the CUDA driver sees (NoGpu with the reason when there is none)."""
    path = os.environ.get("CUVIL_LIBCUDA") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise NoGpu(f"no CUDA driver ({exc})") from None
    rc = lib.cuInit(0)
    if rc != 0:
        raise NoGpu(f"cuInit failed with CUDA error {rc}")
    count, device = ctypes.c_int(0), ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        raise NoGpu("the CUDA driver sees no device")
    if lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
        raise NoGpu(f"no CUDA device {ordinal} (there are {count.value})")
    major, minor, name = ctypes.c_int(0), ctypes.c_int(0), ctypes.create_string_buffer(256)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)
    lib.cuDeviceGetName(name, 255, device)
    return Gpu(name.value.decode(errors="replace"), major.value, minor.value, path)


def choose_arches(gpu: Gpu, nvcc: str) -> tuple[list[str], str, str]:
    """(SASS list, PTX arch, note): the GPU's own architecture when this nvcc knows it, else
    the newest it knows below it (SASS) and its PTX, which the driver compiles for the GPU."""
    known = cuda_tools.nvcc_arches(nvcc)
    if not known or gpu.arch in known:
        return [gpu.arch], f"compute_{gpu.major}{gpu.minor}", ""
    below = [a for a in known if cuda_tools.sm_number(a) <= cuda_tools.sm_number(gpu.arch)]
    if not below:
        raise CuvilError(f"nvcc knows only {sorted(known)}: none runs on {gpu.arch}")
    best = max(below, key=cuda_tools.sm_number)
    ptx = f"compute_{cuda_tools.sm_number(best)}"
    return [best], ptx, f"nvcc has no {gpu.arch}: {best} SASS (not loadable there) + {ptx} PTX, JIT-compiled by the driver"


# --- building and checking one model ---------------------------------------------------------
@dataclasses.dataclass
class Job:
    label: str
    model: Path
    precision: str
    calib: Path | None
    float_samples: list  # list of {input: float array}
    int8_count: int
    wide: bool = False  # build the second and the last Conv/Gemm as 16x8 layers (int16 activations)


@dataclasses.dataclass
class Result:
    label: str
    precision: str
    launches: int
    kernels: list
    samples: int
    ok: bool
    detail: str
    gpu_ms: tuple[float, float] | None = None
    cpu_ms: float | None = None
    backend: str = ""


def board_for(sass: list[str], ptx: str):
    board = get_board("host-cuda")
    return dataclasses.replace(board, data={**board.data, "cuda_arch": sass, "cuda_ptx": ptx})


def int8_samples(g, count: int, seed: int) -> list[dict]:
    """All -128, all 127, then random int8 codes over the whole range."""
    rng = np.random.default_rng(seed)
    shapes = {n: g.tensors[n].shape for n in g.inputs}
    fixed = [{n: np.full(s, v, np.int8) for n, s in shapes.items()} for v in (-128, 127)]
    return fixed + [{n: rng.integers(-128, 128, s, dtype=np.int8) for n, s in shapes.items()} for _ in range(count)]


class Library:
    """A built library: ctypes calls with preallocated buffers, and its backend functions."""

    def __init__(self, so: str, info: dict) -> None:
        self.lib = ctypes.CDLL(so)
        self.name = info["name"]
        self.int8 = info["precision"] == "int8"
        for fn in ("backend", "backend_reason"):
            getattr(self.lib, f"{self.name}_{fn}").restype = ctypes.c_char_p
        self.info = info

    def backend(self) -> tuple[str, str]:
        return (getattr(self.lib, f"{self.name}_backend")().decode(),
                getattr(self.lib, f"{self.name}_backend_reason")().decode())

    def restart(self, **env: str) -> tuple[str, str]:
        getattr(self.lib, f"{self.name}_backend_release")()
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return self.backend()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def latency_ms(self, sample: dict, repeat: int, warmup: int = 5) -> tuple[float, float]:
        dtype = np.int8 if self.int8 else np.float32
        fn = getattr(self.lib, f"{self.name}_run_int8_arena" if self.int8 else f"{self.name}_run_arena")
        ins = [np.ascontiguousarray(sample[t["name"]], dtype=dtype) for t in self.info["inputs"]]
        outs = [np.empty(t["shape"], dtype=dtype) for t in self.info["outputs"]]
        arena = np.zeros(int(self.info["arena_bytes"]) + 64, np.uint8)
        arena_p = ctypes.c_void_p(arena.ctypes.data + (-arena.ctypes.data) % 64)
        in_p = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
        out_p = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
        for _ in range(warmup):
            fn(arena_p, in_p, out_p)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter_ns()
            fn(arena_p, in_p, out_p)
            times.append(time.perf_counter_ns() - t0)
        return float(np.median(times)) / 1e6, float(np.percentile(times, 90)) / 1e6


def compare(got: dict, want: dict, exact: bool) -> str:
    """'' when equal (exactly, or within FP32_RTOL of the output's magnitude), else what differs."""
    for k, w in want.items():
        a = np.asarray(got[k])
        if a.shape != np.shape(w):
            return f"{k}: shape {a.shape} vs reference {np.shape(w)}"
        if exact:
            if not np.array_equal(a, w):
                diff = np.argwhere(a != w)
                return f"{k}: {len(diff)}/{a.size} values differ, first at {tuple(diff[0])}: {a[tuple(diff[0])]} vs {w[tuple(diff[0])]}"
        else:
            tol = FP32_RTOL * max(float(np.abs(w).max()), 1e-30)
            worst = float(np.abs(a.astype(np.float64) - w).max())
            if worst > tol:
                return f"{k}: max |diff| {worst:.3g} above {tol:.3g}"
    return ""


def check(job: Job, board, out_dir: Path, repeat: int, seed: int) -> Result:
    req = CompileRequest(model=job.model, board=board, profile=get_profile("standard"), precision=job.precision,
                         calib=str(job.calib) if job.calib else None, name=job.label.replace("-", "_"))
    if job.wide:
        g_float = frontend_and_passes(dataclasses.replace(req, precision="fp32"))
        layers = [n.name for n in g_float.nodes if n.op in ("Conv", "Gemm", "MatMul")]
        req = dataclasses.replace(req, int16_layers=[layers[1], layers[-1]])
    info = do_build(req, out_dir, 2)
    g = frontend_and_passes(req)
    if job.precision == "int8":
        quantize(g, req)
    lib = Library(info["artifacts"]["so"], info)
    backend, reason = lib.restart(CUVIL_BACKEND="")
    result = Result(job.label, job.precision, info["cuda"]["launches"], info["cuda"]["kernels"], 0, False, reason,
                    backend=backend)
    if backend != "cuda":
        result.detail = f"not on the GPU: {reason}"
        return result
    from cuvil_sdk import runtime
    problems = []
    with runtime.load(info["artifacts"]["so"]) as model:
        if job.precision == "int8":
            for i, s in enumerate(int8_samples(g, job.int8_count, seed)):
                problem = compare(model.run_int8(s), run_int(g, s), exact=True)
                if problem:
                    problems.append(f"int8 sample {i}: {problem}")
                result.samples += 1
            for i, s in enumerate(job.float_samples):
                problem = compare(model(s), run_quantized_model(g, s)[1], exact=True)
                if problem:
                    problems.append(f"float sample {i}: {problem}")
                result.samples += 1
        else:
            for i, s in enumerate(job.float_samples):
                problem = compare(model.run(s), run_float(g, s), exact=False)
                if problem:
                    problems.append(f"sample {i}: {problem}")
                result.samples += 1
    backend_after, reason_after = lib.backend()
    if backend_after != "cuda":
        problems.append(f"fell back to the CPU during the runs: {reason_after}")
    if job.precision == "int8":
        timing_sample = int8_samples(g, 1, seed)[2]
    else:
        timing_sample = job.float_samples[0]
    result.gpu_ms = lib.latency_ms(timing_sample, repeat)
    lib.restart(CUVIL_BACKEND="cpu")
    result.cpu_ms = lib.latency_ms(timing_sample, max(10, repeat // 10), warmup=1)[0]
    lib.restart(CUVIL_BACKEND="")
    result.ok = not problems
    result.detail = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "") \
        if problems else ("bit-exact" if job.precision == "int8" else f"within {FP32_RTOL:g}")
    return result


def model_jobs(names: list[str], samples: int, work: Path) -> list[Job]:
    rng = np.random.default_rng(7)

    def uniform(shape, n, lo=0.0, hi=1.0):
        return (rng.random((n, *shape[1:]), dtype=np.float32) * (hi - lo) + lo).astype(np.float32)

    digits = np.load(EXAMPLES / "digits_data.npz")
    np.save(work / "resnet8_calib.npy", uniform((1, 3, 32, 32), 32))
    np.save(work / "ad_calib.npy", uniform((1, 640), 32, -1.0, 1.0))
    resnet_x = [{"input_1": x[None]} for x in uniform((1, 3, 32, 32), 4)]
    ad_x = [{"input_1": x[None]} for x in uniform((1, 640), 4, -1.0, 1.0)]
    digit_x = [{"image": x[None]} for x in digits["x"][:8]]
    jobs = {
        "digits_cnn": [Job("digits_cnn", EXAMPLES / "digits_cnn.onnx", "int8", EXAMPLES / "digits_calib.npy",
                           digit_x, samples),
                       Job("digits_cnn-fp32", EXAMPLES / "digits_cnn.onnx", "fp32", None, digit_x, 0)]
        + ([Job("digits_cnn-16x8", EXAMPLES / "digits_cnn.onnx", "int8", EXAMPLES / "digits_calib.npy", digit_x,
                samples, wide=True)] if HAS_16X8 else []),
        "resnet8_fp32": [Job("resnet8", EXAMPLES / "resnet8_fp32.onnx", "int8", work / "resnet8_calib.npy",
                             resnet_x, samples),
                         Job("resnet8-fp32", EXAMPLES / "resnet8_fp32.onnx", "fp32", None, resnet_x, 0)],
        "resnet8_qdq": [Job("resnet8_qdq", EXAMPLES / "resnet8_qdq.onnx", "int8", None, resnet_x, samples)],
        "ad_fp32": [Job("ad", EXAMPLES / "ad_fp32.onnx", "int8", work / "ad_calib.npy", ad_x, samples)],
    }
    unknown = [n for n in names if n not in jobs]
    if unknown:
        raise SystemExit(f"gpu_check: unknown model(s) {unknown}; known: {sorted(jobs)}")
    return [j for n in names for j in jobs[n]]


def grid_jobs(work: Path, samples: int) -> list[Job]:
    """The kernel grid of board_tests (int8: every case; fp32: kernel_cases.FP32_CASES)."""
    tests = ROOT / "board_tests"
    if not (tests / "kernel_cases.py").exists():
        return []
    sys.path.insert(0, str(tests))
    import kernel_cases as kc
    from cuda_cases import GRID_IDS, make_grid_net
    jobs = []
    for label, ids, precision in (("kernel-grid", GRID_IDS, "int8"), ("kernel-grid-fp32", kc.FP32_CASES, "fp32")):
        net = kc.save_net(make_grid_net(label.replace("-", "_"), ids), work / label)
        jobs.append(Job(label, net.path, precision, net.calib, kc.float_samples(net, 3, seed=12), samples))
    return jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="digits_cnn,resnet8_fp32,resnet8_qdq,ad_fp32",
                        help="comma-separated example models (default: all)")
    parser.add_argument("--samples", type=int, default=16, help="random int8 samples per model (plus -128s, 127s)")
    parser.add_argument("--repeat", type=int, default=200, help="timed runs per model")
    parser.add_argument("--grid", dest="grid", action="store_true", default=True, help="also the kernel grid")
    parser.add_argument("--no-grid", dest="grid", action="store_false")
    parser.add_argument("--emulate", action="store_true",
                        help="no GPU: use the CPU emulation of the driver (checks everything but the GPU)")
    parser.add_argument("--arch", default="sm_90", help="with --emulate: the emulated device (default sm_90)")
    parser.add_argument("--require-gpu", action="store_true", help="exit 2 (not 0) when there is no GPU")
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print

    if platform.machine() != "x86_64":
        say(f"gpu_check: this script builds for an x86-64 host; this is {platform.machine()}")
        return 2 if args.require_gpu else 0
    if args.emulate:
        from cuvil_sdk.codegen.cuda_emulator import build_emulator
        emu_dir = Path(tempfile.mkdtemp(prefix="cuvil-gpu-emu-"))
        os.environ["CUVIL_LIBCUDA"] = str(build_emulator(emu_dir))
        os.environ["CUVIL_EMU_SM"] = str(cuda_tools.sm_number(args.arch))
    ordinal = int(os.environ.get("CUVIL_CUDA_DEVICE", "0") or 0)
    try:
        gpu = find_gpu(ordinal)
    except NoGpu as exc:
        say(f"gpu_check: no CUDA GPU here ({exc}); nothing to check. "
            f"Run it on a machine with an NVIDIA GPU and its driver (or use --emulate).")
        if args.json:
            print(json.dumps({"gpu": None, "reason": str(exc)}))
        return 2 if args.require_gpu else 0
    nvcc = cuda_tools.find_nvcc()
    if nvcc is None:
        say("gpu_check: nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): install the CUDA toolkit")
        return 5
    sass, ptx, note = choose_arches(gpu, nvcc)
    say(f"gpu_check: {gpu.name} ({gpu.arch}) via {gpu.driver}; kernels for {', '.join(sass)} SASS + {ptx} PTX"
        + (f" ({note})" if note else "") + (" [CPU EMULATION: latencies are not the GPU's]" if args.emulate else ""))
    board = board_for(sass, ptx)

    with tempfile.TemporaryDirectory(prefix="cuvil-gpu-check-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        jobs = model_jobs([m for m in args.models.split(",") if m], args.samples, work)
        if args.grid:
            jobs += grid_jobs(work, args.samples)
        results = []
        for i, job in enumerate(jobs):
            say(f"  [{i + 1}/{len(jobs)}] {job.label} ({job.precision}) ...")
            try:
                results.append(check(job, board, work / f"build-{job.label}", args.repeat, seed=100 + i))
            except CuvilError as exc:
                results.append(Result(job.label, job.precision, 0, [], 0, False, f"{type(exc).__name__}: {exc}"))

    header = f"{'model':<18} {'precision':<9} {'launches':>8} {'samples':>7}  {'GPU ms median/p90':>18}  {'CPU ms':>8}  result"
    say(header)
    say("-" * len(header))
    for r in results:
        gpu_ms = f"{r.gpu_ms[0]:.3f}/{r.gpu_ms[1]:.3f}" if r.gpu_ms else "-"
        cpu_ms = f"{r.cpu_ms:.3f}" if r.cpu_ms is not None else "-"
        say(f"{r.label:<18} {r.precision:<9} {r.launches:>8} {r.samples:>7}  {gpu_ms:>18}  {cpu_ms:>8}  "
            f"{'OK' if r.ok else 'FAIL'}: {r.detail}")
    failed = [r for r in results if not r.ok]
    say(f"gpu_check: {len(results) - len(failed)} passed, {len(failed)} failed")
    if args.json:
        print(json.dumps({"gpu": dataclasses.asdict(gpu) | {"arch": gpu.arch}, "sass": sass, "ptx": ptx,
                          "emulated": args.emulate, "results": [dataclasses.asdict(r) for r in results]}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
