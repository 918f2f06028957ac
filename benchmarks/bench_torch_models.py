#!/usr/bin/env python3
"""Latency of MobileNetV2-1.0 and ResNet-50 (224x224, as PyTorch exports them:
benchmarks/export_torch_models.py) built for `host` (int8, avx2 kernels, one thread) against
ONNX Runtime on this machine, one thread everywhere, batch 1:

  ours          the model compiled for `host` (int8), <name>_run_arena through ctypes
                (float in, float out: quantize, layers, dequantize)
  ort-f32       ONNX Runtime on the float model
  ort-qdq-u8s8  ONNX Runtime on its own QDQ model (quantize_static, per-channel int8 weights,
                uint8 activations), the same calibration samples
  ort-qdq-s8s8  the same with int8 activations

Calls alternate between the configurations so that machine noise hits them alike; the table
gives medians (and minima) per inference and the ratio of ours to ONNX Runtime's fastest
configuration. Random weights (the speed of these kernels does not depend on the values).
A benchmark, not a test: nothing here asserts.

    python3 benchmarks/bench_torch_models.py MODELDIR [--iterations 20] [--calib 4] [--work DIR]
                                             [--only MODEL] [--library MODEL=SO]
"""
from __future__ import annotations

import argparse
import logging
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_host import CPU_FLAGS_SHOWN, Ours, Reader, build, cpu_info, input_spec, median_us, ort_session  # noqa: E402
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static  # noqa: E402

import onnxruntime as ort  # noqa: E402

MODELS = ("mobilenet_v2", "resnet50")
QDQ = {"ort-qdq-u8s8": QuantType.QUInt8, "ort-qdq-s8s8": QuantType.QInt8}


def configurations(path: Path, name: str, calib: np.ndarray, work: Path, x: np.ndarray, library: str | None) -> dict:
    input_name, _ = input_spec(path)
    calib_path = work / f"{name}_calib.npy"
    np.save(calib_path, calib)
    if library is None:
        t0 = time.perf_counter()
        library = build(path, name, "host", calib_path, work)
        print(f"{name}: cuvil-sdk build (host, int8, {len(calib)} calibration samples) "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    runs = {"ours": Ours(library, x)}
    sessions = {"ort-f32": ort_session(path)}
    for label, activations in QDQ.items():
        qdq = work / f"{name}_{label}.onnx"
        quantize_static(str(path), str(qdq), Reader(input_name, calib), quant_format=QuantFormat.QDQ,
                        activation_type=activations, weight_type=QuantType.QInt8, per_channel=True)
        sessions[label] = ort_session(qdq)
    for label, session in sessions.items():
        runs[label] = (lambda s=session: s.run(None, {input_name: x}))
    return runs


def timed(runs: dict, iterations: int, warmup: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(warmup):
        for fn in runs.values():
            fn()
    for _ in range(iterations):
        for label, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - t0)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modeldir", type=Path, help="the folder export_torch_models.py wrote")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calib", type=int, default=4, help="random calibration samples")
    ap.add_argument("--work", help="build folder (default: a temporary one)")
    ap.add_argument("--only", choices=MODELS)
    ap.add_argument("--library", action="append", default=[], metavar="NAME=SO",
                    help="use this host build of a model instead of building it (e.g. resnet50=lib.so)")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    ort.set_default_logger_severity(3)
    model_name, flags = cpu_info()
    print(f"CPU: {model_name}; SIMD: {' '.join(f for f in CPU_FLAGS_SHOWN if f in flags) or '-'}")
    print(f"onnxruntime {ort.__version__}, python {platform.python_version()}; batch 1, one thread everywhere; "
          f"{args.iterations} alternating calls per configuration")
    libraries = dict(item.split("=", 1) for item in args.library)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuvil-torch-bench-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in [args.only] if args.only else MODELS:
            path = args.modeldir / f"{name}.onnx"
            _, shape = input_spec(path)
            calib = np.random.default_rng(1).standard_normal((args.calib, *shape[1:])).astype(np.float32)
            x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
            runs = configurations(path, name, calib, work, x, libraries.get(name))
            times = timed(runs, args.iterations, args.warmup)
            rows.append((name, {k: median_us(v) / 1e3 for k, v in times.items()},
                         {k: min(v) * 1e3 for k, v in times.items()}))
            runs["ours"].model.close()
    labels = ["ours", "ort-f32", "ort-qdq-u8s8", "ort-qdq-s8s8"]
    print(f"\n{'model':14} " + " ".join(f"{label + ' ms':>16}" for label in labels) + f" {'ours/ORT best':>14}")
    for name, med, low in rows:
        best = min(med[label] for label in labels[1:])
        print(f"{name:14} " + " ".join(f"{med[label]:8.2f} ({low[label]:5.1f})" for label in labels) +
              f" {med['ours'] / best:14.3f}")
    print("medians (minima) per inference in ms; ours/ORT best = our median / ORT's fastest configuration's median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
