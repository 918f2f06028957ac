#!/usr/bin/env python3
"""Latency of MobileNetV2-1.0 and ResNet-50 (224x224, as PyTorch exports them:
benchmarks/export_torch_models.py) built for `host` (int8, avx2 kernels, one thread) against
ONNX Runtime on this machine, batch 1, at 1 and 2 threads (ours --threads T, ONNX Runtime intra-op threads T):

  ours          the model compiled for `host` (int8, --threads T), `model(x)` through
                cuvil_sdk.runtime (float in, float out: quantize, layers, dequantize)
  ort-f32       ONNX Runtime on the float model
  ort-qdq-u8s8  ONNX Runtime on its own QDQ model (quantize_static, per-channel int8 weights,
                uint8 activations), the same calibration samples
  ort-qdq-s8s8  the same with int8 activations

Calls alternate between the configurations so that machine noise hits them alike; the table
gives medians (and minima) per inference and the ratio of ours to ONNX Runtime's fastest
configuration. Random weights (the speed of these kernels does not depend on the values).
A benchmark, not a test: nothing here asserts.

    python3 benchmarks/bench_torch_models.py MODELDIR [--iterations 20] [--calib 4] [--work DIR]
                                             [--only MODEL] [--threads 1 2]
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (ORT_LABELS, Ours, build, cosine, input_spec, median_us, ort_models, peer_labels, peer_runs,
                          print_machine, timed)

import onnxruntime as ort

MODELS = ("mobilenet_v2", "resnet50")


def measure(path: Path, name: str, calib: np.ndarray, x: np.ndarray, work: Path, threads: int, args) -> dict:
    input_name, _ = input_spec(path)
    calib_path = work / f"{name}_calib.npy"
    np.save(calib_path, calib)
    t0 = time.perf_counter()
    library = build(path, name, "host", calib_path, work, threads)
    print(f"{name}: cuvil-sdk build (host, int8, --threads {threads}, {len(calib)} calibration samples) "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    ours = Ours(library, x)
    runs = {"ours": ours, **peer_runs(ort_models(path, name, calib, work), input_name, x, threads)}
    cos = cosine(ours.output(), runs["ort-f32"]()[0])
    times = timed(runs, args.iterations, args.warmup, alternate=threads == 1)
    ours.model.close()
    return {"med": {k: median_us(v) / 1e3 for k, v in times.items()},
            "low": {k: min(v) * 1e3 for k, v in times.items()}, "cos": cos, "isa": ours.isa}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modeldir", type=Path, help="the folder export_torch_models.py wrote")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calib", type=int, default=4, help="random calibration samples")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts to measure")
    ap.add_argument("--work", help="build folder (default: a temporary one)")
    ap.add_argument("--only", choices=MODELS)
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    ort.set_default_logger_severity(3)
    print_machine()
    print(f"batch 1; {args.iterations} alternating calls per configuration")
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuvil-torch-bench-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in [args.only] if args.only else MODELS:
            path = args.modeldir / f"{name}.onnx"
            _, shape = input_spec(path)
            calib = np.random.default_rng(1).standard_normal((args.calib, *shape[1:])).astype(np.float32)
            x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
            for threads in args.threads:
                rows.append((name, threads, measure(path, name, calib, x, work, threads, args)))
    labels = ["ours", *peer_labels(rows[0][2]["med"])] if rows else ["ours"]
    print(f"\n{'model':14} {'T':>2} " + " ".join(f"{label + ' ms':>16}" for label in labels) +
          f" {'ours/ORT best':>14} {'ours/peer best':>15} {'cos':>7} isa")
    for name, threads, r in rows:
        med, low = r["med"], r["low"]
        best_ort = min(med[label] for label in ORT_LABELS)
        best = min(med[label] for label in labels[1:])
        print(f"{name:14} {threads:2} " + " ".join(f"{med[label]:8.2f} ({low[label]:5.1f})" for label in labels) +
              f" {med['ours'] / best_ort:14.3f} {med['ours'] / best:15.3f} {r['cos']:7.4f} {r['isa']}")
    print("medians (minima) per inference in ms; ours/ORT best = our median / ONNX Runtime's fastest configuration's "
          "median, ours/peer best = against the fastest of ONNX Runtime's and OpenVINO's (ov-*, where installed); "
          "cos = our int8 output against ORT's float output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
