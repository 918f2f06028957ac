#!/usr/bin/env python3
"""Compile time, peak memory and sizes of the full-size PyTorch exports (ResNet-50,
MobileNetV2-1.0 224x224, the YOLOv3-tiny-style detector at 320x320: export_torch_models.py)
built for host, rpi5 and jetson (int8, standard profile, a few random calibration samples),
and whether the boards' int8 outputs agree.

Each build runs in a fresh process (so its peak memory is its own) that times the stages of
`cuvil-sdk build`: frontend and passes, calibration (the numpy float reference), the rest of
quantization, arena planning, lowering (kernel selection, weight packing), rendering (the C
text and the weight blob), the C build (SCons and the compiler), and reports the peak RSS of
the Python process before the C build and at the end (not of the compiler: a child process's
peak RSS starts from its parent's at the fork).
Sizes: the library, and the weight blob in it (every constant array of the kernels: weights,
biases, requantization tables) against the int8 parameter bytes (one byte per float parameter
of the model).

Then, on ResNet-50 and MobileNetV2 (or --compare), the same samples run on host (ctypes), on
rpi5 under qemu-aarch64 (timed) and on jetson under qemu-aarch64 with the CPU-emulated libcuda
(its GPU path; --jetson-cpu: its CPU path): int8 outputs compared with host's, bit for bit.
A benchmark, not a test: it prints a table (or --json) and asserts nothing.

    .venv/bin/python benchmarks/bench_compile.py MODELDIR [--boards host,rpi5,jetson]
        [--models resnet50,mobilenet_v2,yolo_tiny] [--calib 4] [--samples 2] [--work DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MODELS = ("resnet50", "mobilenet_v2", "yolo_tiny")
BOARDS = ("host", "rpi5", "jetson")
COMPARED = ("resnet50", "mobilenet_v2")
STAGES = ("frontend+passes", "calibration", "quantization", "planning", "lowering", "rendering", "c-build")


# --- one build, in its own process ---------------------------------------------------------------

class StageClock:
    """Wraps the pipeline's functions (module attributes the stages call) to time them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {s: 0.0 for s in STAGES}

    def wrap(self, module, attr: str, stage: str, minus: str | None = None) -> None:
        inner = getattr(module, attr)

        def timed(*args, **kwargs):
            before = self.seconds[minus] if minus else 0.0
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                nested = (self.seconds[minus] - before) if minus else 0.0
                self.seconds[stage] += time.perf_counter() - t0 - nested
        setattr(module, attr, timed)


def peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def build_one(model: Path, board_name: str, calib: Path, out: Path) -> dict:
    from cuvil_sdk import commands, compiler
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.codegen import emit
    from cuvil_sdk.profiles import get_profile
    clock = StageClock()
    clock.wrap(compiler, "frontend_and_passes", "frontend+passes")
    clock.wrap(compiler, "calibrate", "calibration")
    clock.wrap(compiler, "quantize", "quantization", minus="calibration")
    clock.wrap(compiler, "plan_arena", "planning")
    clock.wrap(emit, "lower_graph", "lowering")
    clock.wrap(compiler, "generate", "rendering", minus="lowering")
    before_c = {}

    def scons(*args, **kwargs):
        before_c["python_peak_mb"] = peak_mb(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        try:
            return run_scons(*args, **kwargs)
        finally:
            clock.seconds["c-build"] += time.perf_counter() - t0
    run_scons, commands.run_scons = commands.run_scons, scons
    req = compiler.CompileRequest(model=model, board=get_board(board_name), profile=get_profile("standard"),
                                  precision="int8", calib=str(calib), name=model.stem)
    t0 = time.perf_counter()
    info = commands.do_build(req, out, 2)
    total = time.perf_counter() - t0
    # (no figure for the compiler processes: a child's peak RSS starts from its parent's at fork)
    return {"seconds": clock.seconds, "total_s": total, "python_peak_before_c_mb": before_c.get("python_peak_mb"),
            "python_peak_mb": peak_mb(resource.RUSAGE_SELF), "children_peak_mb": peak_mb(resource.RUSAGE_CHILDREN),
            "so": info["artifacts"]["so"], "name": info["name"], "library_bytes": Path(info["artifacts"]["so"]).stat().st_size}


# --- the driver ----------------------------------------------------------------------------------

def parameter_count(model: Path) -> int:
    """Float parameters of the model (initializers), without reading their data."""
    import onnx
    proto = onnx.load(str(model), load_external_data=False)
    return sum(int(np.prod(t.dims)) for t in proto.graph.initializer if t.data_type == onnx.TensorProto.FLOAT)


def weight_bytes(so: str) -> int:
    """Bytes of the weight blob the library carries (or maps): the build manifest's account."""
    manifest = json.loads((Path(so).parent.parent / "manifest.json").read_text())
    return int(manifest["weights"]["bytes"])


def run_build(model: Path, board: str, calib: Path, work: Path) -> dict:
    out = work / f"{model.stem}-{board}"
    cmd = [sys.executable, __file__, "--one", str(model), board, str(calib), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["weights_bytes"] = weight_bytes(result["so"])
    return result


def outputs_on(board: str, build: dict, samples: list[dict], env: dict | None = None) -> tuple[dict, float]:
    """int8 outputs per sample on the board, and the seconds the run took."""
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.commands import run_samples
    manifest = json.loads((Path(build["so"]).parent.parent / "manifest.json").read_text())
    info = {**manifest, "artifacts": {"so": build["so"]}}
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        t0 = time.perf_counter()
        result = run_samples(get_board(board), info, samples, False)
        return result["outputs"], time.perf_counter() - t0
    finally:
        os.environ.clear()
        os.environ.update(saved)


def compare(model: Path, builds: dict[str, dict], samples: list[dict], work: Path, jetson_cpu: bool) -> dict:
    """Each board's outputs against host's: bit-identical, or the count of differing values."""
    if "host" not in builds or "error" in builds["host"]:
        return {}
    reference, _ = outputs_on("host", builds["host"], samples)
    found = {}
    for board in ("rpi5", "jetson"):
        if board not in builds or "error" in builds[board]:
            continue
        env = {}
        if board == "jetson" and not jetson_cpu:
            from cuvil_sdk.codegen.cuda_emulator import build_emulator
            env["CUVIL_LIBCUDA"] = str(build_emulator(work / "emulator", cc="aarch64-linux-gnu-gcc"))
        try:
            got, seconds = outputs_on(board, builds[board], samples, env)
        except Exception as exc:  # a benchmark reports a failed run and goes on
            found[board] = {"error": str(exc).splitlines()[0][:200]}
            continue
        differing = sum(int(np.count_nonzero(np.asarray(a[k]) != np.asarray(b[k])))
                        for a, b in zip(got, reference) for k in a)
        found[board] = {"identical": differing == 0, "differing_values": differing, "run_s": seconds,
                        "path": "cpu" if board == "rpi5" or jetson_cpu else "gpu (emulated libcuda)"}
    return found


def random_samples(model: Path, count: int, seed: int) -> np.ndarray:
    import onnx
    proto = onnx.load(str(model), load_external_data=False)
    dims = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(seed).standard_normal((count, *dims[1:])).astype(np.float32)


def print_table(results: dict) -> None:
    head = f"{'model':13} {'board':7} " + " ".join(f"{s[:9]:>9}" for s in STAGES) + \
        f" {'total s':>8} {'py MB':>6} {'pyC MB':>6} {'lib MB':>7} {'w MB':>6} {'w/int8':>6}"
    print(head)
    for model, entry in results.items():
        for board, b in entry["builds"].items():
            if "error" in b:
                print(f"{model:13} {board:7} error: {b['error']}")
                continue
            ratio = b["weights_bytes"] / entry["int8_parameter_bytes"]
            print(f"{model:13} {board:7} " + " ".join(f"{b['seconds'][s]:9.1f}" for s in STAGES) +
                  f" {b['total_s']:8.1f} {b['python_peak_before_c_mb']:6.0f} {b['python_peak_mb']:6.0f}"
                  f" {b['library_bytes'] / 2**20:7.1f} {b['weights_bytes'] / 2**20:6.1f}"
                  f" {ratio:6.2f}")
        print(f"{'':13} model file {entry['model_file_mb']:.1f} MB, {entry['int8_parameter_bytes'] / 2**20:.1f} MB "
              f"int8 parameters")
        for board, c in entry.get("outputs_vs_host", {}).items():
            if "error" in c:
                print(f"{'':13} {board} outputs: error: {c['error']}")
            else:
                print(f"{'':13} {board} int8 outputs vs host: {'bit-identical' if c['identical'] else 'DIFFER'} "
                      f"({c['differing_values']} values differ; {c['path']}; run {c['run_s']:.1f} s under qemu)")
    print("py MB: peak RSS of the build's Python process before the C build (pyC: at the end); w/int8: weight "
          "bytes in the library / int8 parameter bytes")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":  # a single build, in its own process
        model, board, calib, out = sys.argv[2:6]
        print(json.dumps(build_one(Path(model), board, Path(calib), Path(out))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modeldir", type=Path, help="the folder export_torch_models.py wrote")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--compare", default=",".join(COMPARED), help="models whose outputs are compared across boards")
    ap.add_argument("--calib", type=int, default=4, help="random calibration samples")
    ap.add_argument("--samples", type=int, default=2, help="samples run on each board for the comparison")
    ap.add_argument("--jetson-cpu", action="store_true", help="compare jetson's CPU path instead of its GPU path")
    ap.add_argument("--work", type=Path, help="build folder (default: a temporary one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-compile-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.models.split(","):
        model = args.modeldir / f"{name}.onnx"
        calib = work / f"{name}_calib.npy"
        np.save(calib, random_samples(model, args.calib, 0))
        size = model.stat().st_size + sum(p.stat().st_size for p in model.parent.glob(f"{name}.onnx.data"))
        entry = {"model_file_mb": size / 2**20, "int8_parameter_bytes": parameter_count(model), "builds": {}}
        for board in args.boards.split(","):
            print(f"building {name} for {board}", file=sys.stderr, flush=True)
            entry["builds"][board] = run_build(model, board, calib, work)
            (work / "results.json").write_text(json.dumps({**results, name: entry}, indent=1))
        if name in args.compare.split(","):
            samples = [{"input": x[None]} for x in random_samples(model, args.samples, 1)]
            entry["outputs_vs_host"] = compare(model, entry["builds"], samples, work, args.jetson_cpu)
        results[name] = entry
        (work / "results.json").write_text(json.dumps(results, indent=1))  # what is done so far
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
