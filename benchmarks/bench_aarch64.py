#!/usr/bin/env python3
"""Side by side on aarch64: guest instructions per inference of ONNX Runtime's aarch64 wheel and of
our rpi5 builds, both under qemu-aarch64 -cpu cortex-a76 with our instruction-counting TCG plugin
(targets/rpi5/insn_count_plugin.c). Not cycles of a Cortex-A76: guest instructions, deterministic
and comparable between the two because the same QEMU and plugin count both.

ONNX Runtime runs in an arm64 root made under the work folder, without binfmt and without running
any arm64 code natively: the arm64 .debs of python3 (and libstdc++6) are fetched by apt-get with a
private configuration (its own sources list, state and cache in WORK/apt: the host's apt is not
touched) and unpacked with dpkg-deb -x; an aarch64 /proc/cpuinfo is written into the root (ONNX
Runtime segfaults at import without one, qemu's -L redirects the path); the wheels of
onnxruntime and numpy are installed with pip --target --platform manylinux_2_28_aarch64
--only-binary=:all:. The arm64 python3 runs benchmarks/ort_guest.py, which executes the plugin's
marker instruction (from an executable page, through ctypes) before and after each
InferenceSession.run; the cost of the two ctypes calls (an empty pair) is subtracted. One
intra-op thread, OPENBLAS_NUM_THREADS=1.

Configurations: ORT f32 (the float model), ORT QDQ u8s8 and s8s8 (its own quantize_static,
per-channel int8 weights, uint8 or int8 activations, the same calibration samples as ours), ours
int8 and fp32 (board rpi5, standard profile, one thread: the same per-inference and per-layer
counts as `cuvil-sdk run --board rpi5 --json`, from quantizing the input to the outputs).

Models: ResNet-8 (sdk/examples, the trained MLPerf Tiny model), MobileNetV1-0.25 (trained,
benchmarks/models), MobileNetV2-1.0 224 and ResNet-50 as PyTorch exports them
(benchmarks/export_torch_models.py writes them with torch: give its folder with --torch-models;
without it those two are skipped).

Downloads (cached in the work folder; nothing is installed outside it):
  - from debian_root.DEBIAN_MIRROR (Debian 12 "bookworm", main, arm64): the package lists (apt-get update) and
    the .debs of DEBIAN_PACKAGES with their dependencies (about 16 MB);
  - from PyPI (pip): WHEELS for manylinux_2_28_aarch64 / CPython 3.11 (about 40 MB).

    python benchmarks/bench_aarch64.py --work /tmp/bench-aarch64 --torch-models /tmp/torch_models
    python benchmarks/bench_aarch64.py --work DIR --models resnet8 mobilenet_v1_025 --ours-only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import debian_root
from bench_common import ORT_LABELS, cosine, ort_models

from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build, profile_of_run, run_samples
from cuvil_sdk.compiler import CompileRequest
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.runners import insn_count

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = ("python3", "libstdc++6")  # python3.11 and what onnxruntime's library links beyond it
PYTHON = "usr/bin/python3.11"
WHEELS = ("onnxruntime==1.32.0", "numpy==2.4.6")
WHEEL_PLATFORM = ("--platform", "manylinux_2_28_aarch64", "--python-version", "3.11", "--implementation", "cp",
                  "--abi", "cp311", "--only-binary=:all:")
QEMU = ("qemu-aarch64", "-cpu", "cortex-a76")  # the Pi 5's core: dot product and fp16, no SVE or i8mm
# A Raspberry Pi 5's /proc/cpuinfo (Cortex-A76: implementer 0x41, part 0xd0b), 4 cores
CPUINFO_CORE = """processor\t: {i}
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x4
CPU part\t: 0xd0b
CPU revision\t: 1

"""
MODELS = ("resnet8", "mobilenet_v1_025", "mobilenet_v2", "resnet50")
TORCH_MODELS = ("mobilenet_v2", "resnet50")
OURS_LABELS = ("ours-int8", "ours-fp32")
GOAL = 0.7  # ours int8 / ORT's fewest
WORST = 8  # layers listed per model


# --- the arm64 root and the wheels ------------------------------------------------------------------
def make_root(work: Path) -> Path:
    """WORK/root: the arm64 .debs of DEBIAN_PACKAGES and their dependencies unpacked, and an
    aarch64 /proc/cpuinfo. Made once (WORK/root/.done)."""
    root = work / "root"
    if (root / ".done").is_file():
        return root
    debian_root.unpack(work, root, "arm64", DEBIAN_SUITE, DEBIAN_PACKAGES, "bench_aarch64")
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc/cpuinfo").write_text("".join(CPUINFO_CORE.format(i=i) for i in range(4)))
    (root / ".done").write_text("")
    return root


def install_wheels(work: Path) -> Path:
    """WORK/site: the aarch64 wheels (pip --target), made once (WORK/site/.done)."""
    site = work / "site"
    if (site / ".done").is_file():
        return site
    print(f"downloading from PyPI: {', '.join(WHEELS)} (and their dependencies) for manylinux_2_28_aarch64, "
          f"CPython 3.11", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--upgrade", "--target", str(site),
                    *WHEEL_PLATFORM, *WHEELS], check=True)
    (site / ".done").write_text("")
    return site


# --- ONNX Runtime under qemu-aarch64 ------------------------------------------------------------------
def count_marked(command: list[str], records: Path, env: dict[str, str], timeout_s: float) -> list[int]:
    """Run `command` (a guest under qemu with the plugin writing `records`) and return the
    instructions between each start/end marker pair."""
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    counts, _ = insn_count.per_sample(insn_count.read_records(records))
    return counts


def ort_count(root: Path, site: Path, plugin: Path, model: Path, x: Path, runs: int, warmup: int) -> dict:
    """ONNX Runtime's guest instructions per inference of `model` on input `x` (.npy), and its output."""
    from ort_guest import EMPTY
    with tempfile.TemporaryDirectory(prefix="bench-aarch64-ort-") as tmp:
        records, y = Path(tmp) / "marks.txt", Path(tmp) / "y.npy"
        command = [QEMU[0], "-plugin", f"{plugin},out={records}", *QEMU[1:], "-L", str(root), str(root / PYTHON),
                   str(HERE / "ort_guest.py"), str(model), str(x), str(y), str(runs), str(warmup)]
        env = {"PYTHONPATH": str(site), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
        counts = count_marked(command, records, env, timeout_s=3600)
        output = np.load(y)
    empty, inferences = counts[:EMPTY], counts[EMPTY:]
    overhead = min(empty)
    per = [c - overhead for c in inferences]
    return {"instructions": min(per), "per_run": per, "marker_overhead": overhead, "output": output}


# --- ours on rpi5 --------------------------------------------------------------------------------------
def ours_count(model: Path, calib: Path, x: np.ndarray, precision: str, work: Path, name: str) -> dict:
    """Our rpi5 build's guest instructions per inference and per layer (as `cuvil-sdk run --board
    rpi5 --json` reports them), its fallbacks and output."""
    req = CompileRequest(model=model, board=get_board("rpi5"), profile=get_profile("standard"), precision=precision,
                         calib=str(calib), name=name)
    info = do_build(req, work / f"{name}-rpi5-{precision}", 2)
    sample = {info["inputs"][0]["name"]: x.reshape(info["inputs"][0]["shape"])}
    result = run_samples(req.board, info, [sample], False)
    instructions = int(result["instructions"][0])
    profile = profile_of_run(req, info, result["layer_instructions"][0], instructions, result["instructions_note"])
    output = next(iter(result["outputs"][0].values()))
    return {"instructions": instructions, "layers": profile["layers"], "macs": profile["layers_total"]["macs"],
            "fallbacks": info["fallbacks"], "output": np.asarray(output)}


# --- the models ----------------------------------------------------------------------------------------
def model_data(name: str, work: Path, torch_models: Path | None) -> tuple[Path, np.ndarray, np.ndarray] | None:
    """(ONNX file, calibration samples, the measured input) of a model, or None when it is missing."""
    import mlperf_tiny
    if name == "resnet8":
        calib = np.random.default_rng(0).random((8, 3, 32, 32), dtype=np.float32)  # as bench_m7.py
        return mlperf_tiny.EXAMPLES / "resnet8_fp32.onnx", calib, calib[:1]
    if name == "mobilenet_v1_025":
        calib = mlperf_tiny.synthetic("mobilenet_v1_025_vww", 8, seed=3)[0]  # the task it was trained on
        return mlperf_tiny.TRAINED / "mobilenet_v1_025_vww_trained.onnx", calib, calib[:1]
    path = (torch_models / f"{name}.onnx") if torch_models else None
    if path is None or not path.is_file():
        return None
    calib = np.random.default_rng(1).standard_normal((4, 3, 224, 224)).astype(np.float32)  # bench_torch_models.py
    return path, calib, np.random.default_rng(2).standard_normal((1, 3, 224, 224)).astype(np.float32)


def measure_ort(name: str, path: Path, calib: np.ndarray, x_path: Path, work: Path, args) -> dict:
    """ORT's three configurations, cached in WORK/ort_counts.json (keyed by model, file size and time,
    runs): they do not change when our kernels do."""
    cache_path = work / "ort_counts.json"
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    stat = path.stat()
    key = f"{name}:{stat.st_size}:{int(stat.st_mtime)}:{args.runs}:{WHEELS[0]}"
    if key in cache and not args.fresh_ort:
        return {label: {**r, "output": np.asarray(r["output"], dtype=np.float32)} for label, r in cache[key].items()}
    if args.ours_only:
        return {}
    root, site = make_root(work), install_wheels(work)
    plugin = insn_count.build_plugin(insn_count.plugin_source(get_board("rpi5")), work)
    results = {}
    for label, model in ort_models(path, name, calib, work).items():
        t0 = time.perf_counter()
        results[label] = ort_count(root, site, plugin, Path(model), x_path, args.runs, args.warmup)
        print(f"{name} {label}: {results[label]['instructions']:,} guest instructions per inference "
              f"({time.perf_counter() - t0:.0f} s under QEMU)", file=sys.stderr, flush=True)
    cache[key] = {label: {**r, "output": r["output"].reshape(-1).tolist()} for label, r in results.items()}
    cache_path.write_text(json.dumps(cache))
    return results


def measure(name: str, work: Path, args) -> dict | None:
    data = model_data(name, work, args.torch_models)
    if data is None:
        print(f"{name}: skipped (no {name}.onnx: run benchmarks/export_torch_models.py DIR with torch and give "
              f"--torch-models DIR)", file=sys.stderr)
        return None
    path, calib, x = data
    calib_path, x_path = work / f"{name}_calib.npy", work / f"{name}_x.npy"
    np.save(calib_path, calib)
    np.save(x_path, x)
    results: dict = {}
    results.update(measure_ort(name, path, calib, x_path, work, args))
    if not args.ort_only:
        for precision in ("int8", "fp32"):
            t0 = time.perf_counter()
            results[f"ours-{precision}"] = ours_count(path, calib_path, x, precision, work, name)
            print(f"{name} ours-{precision}: {results[f'ours-{precision}']['instructions']:,} guest instructions per "
                  f"inference ({time.perf_counter() - t0:.0f} s build + run)", file=sys.stderr, flush=True)
    reference = results.get("ort-f32", results.get("ours-fp32"))
    for r in results.values():
        r["cosine"] = cosine(r["output"], reference["output"]) if reference is not None else None
    return results


# --- printing ------------------------------------------------------------------------------------------
def fmt(count: int | None) -> str:
    return f"{count / 1e6:9.2f}" if count else f"{'-':>9}"


def print_table(rows: dict[str, dict]) -> None:
    labels = [*ORT_LABELS, *OURS_LABELS]
    print("\n== guest instructions per inference (millions), qemu-aarch64 -cpu cortex-a76, our TCG plugin ==")
    print(f"{'model':18} " + " ".join(f"{label:>13}" for label in labels) + f" {'MACs (M)':>9} {'int8/MAC':>8} "
          f"{'ours/ORT fewest':>15}")
    for name, r in rows.items():
        counts = {label: r[label]["instructions"] if label in r else None for label in labels}
        ort = [counts[label] for label in ORT_LABELS if counts[label]]
        ours = counts["ours-int8"]
        macs = r.get("ours-int8", r.get("ours-fp32", {})).get("macs")
        ratio = f"{ours / min(ort):15.3f}" if ours and ort else f"{'-':>15}"
        fewest = min((label for label in ORT_LABELS if counts[label]), key=lambda k: counts[k], default="")
        per_mac = f"{ours / macs:8.3f}" if ours and macs else f"{'-':>8}"
        print(f"{name:18} " + " ".join(f"{fmt(counts[label]):>13}" for label in labels) +
              f" {fmt(macs):>9} {per_mac} {ratio} {fewest.replace('ort-', '')}")
    print(f"goal: ours int8 <= {GOAL} x ONNX Runtime's fewest; figures are guest instructions (not cycles), ORT's "
          f"less the cost of the marker calls, from InferenceSession.run's call to its return (Python API), ours "
          f"from quantizing the input to the outputs")
    print("cosine of each output against ORT f32 (ours fp32 where ORT did not run):")
    for name, r in rows.items():
        print(f"  {name:16} " + "  ".join(f"{label} {r[label]['cosine']:.5f}" for label in labels
                                          if label in r and r[label]["cosine"] is not None))


def print_layers(rows: dict[str, dict]) -> None:
    for name, r in rows.items():
        ours = r.get("ours-int8")
        if ours is None:
            continue
        layers = [layer for layer in ours["layers"] if layer["instructions"]]
        total = ours["instructions"]
        print(f"\n-- {name}, ours int8: {total:,} instructions; fallbacks: "
              f"{'; '.join(f['layer'] + ': ' + f['reason'] for f in ours['fallbacks']) or 'none'}")
        by_kernel: dict[str, list[int]] = {}
        for layer in layers:
            k = by_kernel.setdefault(layer["kernel"], [0, 0, 0])
            k[0] += layer["instructions"]
            k[1] += layer["macs"] or 0
            k[2] += 1
        for kernel, (count, macs, n) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0]):
            per_mac = f"{count / macs:6.3f}/MAC" if macs else " " * 10
            print(f"  {kernel:22} {n:3} layers {count:>13,} ({100 * count / total:4.1f}%) {per_mac}")
        print(f"  the {WORST} layers with the most instructions:")
        for layer in sorted(layers, key=lambda la: -la["instructions"])[:WORST]:
            per_mac = f"{layer['instructions_per_mac']:6.3f}/MAC" if layer["instructions_per_mac"] else " " * 10
            variant = f" ({layer['variant']})" if layer.get("variant") else ""
            print(f"  {layer['index']:>4} {layer['op'][:10]:10} {layer['instructions']:>12,} {per_mac} "
                  f"{layer['macs'] or 0:>11,} MACs  {layer['kernel']}{variant}  {layer['name'][-36:]}")


def as_json(rows: dict[str, dict]) -> dict:
    return {name: {label: {k: v for k, v in res.items() if k != "output"} for label, res in r.items()}
            for name, r in rows.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "cuvil-bench-aarch64",
                    help="work folder: the arm64 root, the wheels, ORT's counts and our builds (kept, reused)")
    ap.add_argument("--torch-models", type=Path, help="the folder export_torch_models.py wrote")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--runs", type=int, default=2, help="marked ORT inferences per configuration (the fewest is kept)")
    ap.add_argument("--warmup", type=int, default=1, help="unmarked ORT inferences first")
    ap.add_argument("--ours-only", action="store_true", help="skip ONNX Runtime (cached counts are still shown)")
    ap.add_argument("--ort-only", action="store_true")
    ap.add_argument("--fresh-ort", action="store_true", help="measure ORT again even when its counts are cached")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name in args.models:
        r = measure(name, args.work, args)
        if r is not None:
            rows[name] = r
    print_table(rows)
    print_layers(rows)
    if args.json:
        args.json.write_text(json.dumps(as_json(rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
