#!/usr/bin/env python3
"""Latency of cuvil-sdk `host` builds against ONNX Runtime's fastest configuration on this
machine, through the Python runtime as users call it, at 1 and 2 threads.

For digits_cnn and the four MLPerf Tiny reference models (ResNet-8 and the FC autoencoder are
the MLCommons models in sdk/examples; DS-CNN and MobileNetV1-0.25 come from
benchmarks/mlperf_tiny.py, random weights):

  ours          the model compiled for `host` (int8, --threads T), called as `model(x)` on a
                `cuvil_sdk.runtime.load(path)` (float in, float out: quantize, layers,
                dequantize; a new output array per call), with the variant it chose (model.isa)
  raw C call    the same inference as one bare ctypes call on preallocated buffers, timed
                apart, alternating with `ours` (both with warm caches): the gap is the
                runtime's per-call overhead
  portable      `host-portable` (the portable C kernels), for reference (1 thread only)
  ort-f32       ONNX Runtime, the float model
  ort-qdq-u8s8  ONNX Runtime, its own QDQ model (quantize_static, per-channel int8 weights,
                uint8 activations: its fastest on x86), the same calibration data
  ort-qdq-s8s8  the same with int8 activations
  ov-*          OpenVINO's CPU plugin on the same three files (benchmark-only: PyPI `openvino`;
                left out, with a note, where it is not installed), INFERENCE_NUM_THREADS = T,
                one stream, the latency hint

ONNX Runtime runs with intra_op_num_threads = T (inter-op 1, sequential, all graph
optimizations). At one thread calls alternate (one of each configuration per round) so that
machine noise hits them alike; at more, each configuration runs its calls in one block (ONNX
Runtime's threads spin after a run and would take the cores from ours). The portable build is
timed apart afterwards. The table gives medians per
inference (batch 1), ours / the fastest peer configuration and ours / ORT's fastest, and the
geometric means of those ratios over the four MLPerf Tiny models. A benchmark, not a test: nothing asserts.

    python3 benchmarks/bench_host.py [--iterations 300] [--threads 1 2] [--work DIR] [--skip-portable]
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (ORT_LABELS, ROOT, Ours, build, cosine, input_spec, median_us, ort_models,
                          peer_labels, peer_runs, print_machine, timed)

import mlperf_tiny
import onnxruntime as ort

EXAMPLES = ROOT / "sdk" / "examples"
CALIB_SAMPLES = 32


def calibration(name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name == "digits_cnn":
        return np.load(EXAMPLES / "digits_calib.npy")[:CALIB_SAMPLES].reshape(-1, *shape[1:]).astype(np.float32)
    return np.random.default_rng(1).random((CALIB_SAMPLES, *shape[1:]), dtype=np.float32)


def measure(name: str, path: Path, threads: int, work: Path, args) -> dict:
    """One model at one thread count: medians per configuration, ratio, cosine, the chosen ISA."""
    input_name, shape = input_spec(path)
    calib = calibration(name, shape)
    calib_path = work / f"{name}_calib.npy"
    np.save(calib_path, calib)
    x = np.random.default_rng(2).random(shape, dtype=np.float32)
    ours = Ours(build(path, name, "host", calib_path, work, threads), x)
    runs = {"ours": ours, **peer_runs(ort_models(path, name, calib, work), input_name, x, threads)}
    cos = cosine(ours.output(), runs["ort-f32"]()[0])
    times = timed(runs, args.iterations, args.warmup, alternate=threads == 1)
    # the overhead apart, ours and the raw call alternating: in the rotation above every call
    # follows another configuration's and finds cold caches, which would swamp a microsecond
    overhead = timed({"ours": ours, "raw": ours.raw}, 10 * args.iterations, args.warmup)
    times["ours-raw"] = overhead["raw"]
    if threads == 1 and not args.skip_portable:  # timed apart: its long scalar calls would cool the others' caches
        portable = Ours(build(path, name, "host-portable", calib_path, work), x)
        times["portable"] = timed({"p": portable}, max(5, args.iterations // 10), 2)["p"]
        portable.model.close()
    med = {k: median_us(v) for k, v in times.items()}
    low = {k: float(np.min(v)) * 1e6 for k, v in times.items()}
    peers = peer_labels(med)
    best, best_ort = min(peers, key=lambda k: med[k]), min(ORT_LABELS, key=lambda k: med[k])
    ours.model.close()
    return {"med": med, "low": low, "best": best, "ratio": med["ours"] / med[best], "cos": cos, "isa": ours.isa,
            "best_ort": best_ort, "ratio_ort": med["ours"] / med[best_ort],
            "overhead": median_us(overhead["ours"]) - med["ours-raw"],
            "ratio_low": low["ours"] / min(low[k] for k in peers)}


def print_table(threads: int, rows: list[tuple[str, bool, dict]]) -> None:
    labels = [k for k in ("ours", "portable") if k in rows[0][2]["med"]] + peer_labels(rows[0][2]["med"])
    print(f"\n--threads {threads} (ONNX Runtime intra_op_num_threads={threads}, OpenVINO INFERENCE_NUM_THREADS="
          f"{threads}); medians in us per inference")
    print(f"{'model':22} " + " ".join(f"{label:>13}" for label in labels) +
          f" {'peer fastest':>13} {'ours/fastest':>12} {'ours/ORT':>9} {'cos':>7} isa")
    for name, mlperf, r in rows:
        print(f"{name + ('*' if mlperf else ' '):22} " + " ".join(f"{r['med'][k]:13.1f}" for k in labels) +
              f" {r['best']:>13} {r['ratio']:12.3f} {r['ratio_ort']:9.3f} {r['cos']:7.4f} {r['isa']}")
    tiny = [r for _, mlperf, r in rows if mlperf]
    geo = math.exp(sum(math.log(r["ratio"]) for r in tiny) / len(tiny))
    geo_low = math.exp(sum(math.log(r["ratio_low"]) for r in tiny) / len(tiny))
    overhead = [r["overhead"] for _, _, r in rows]
    geo_ort = math.exp(sum(math.log(r["ratio_ort"]) for r in tiny) / len(tiny))
    print(f"* MLPerf Tiny geometric mean of ours / ONNX Runtime's fastest = {geo_ort:.3f} (goal <= 0.5), worst "
          f"{max(r['ratio_ort'] for r in tiny):.3f} (goal <= 0.8)")
    print(f"* MLPerf Tiny geometric mean of ours / the fastest peer (ORT or OpenVINO) = {geo:.3f}, worst "
          f"{max(r['ratio'] for r in tiny):.3f}; from each configuration's fastest call: {geo_low:.3f}")
    print("  runtime overhead, model(x) - the raw C call, alternating with warm caches: " +
          ", ".join(f"{name} {o:.2f}" for (name, _, _), o in zip(rows, overhead)) + " us (goal <= 2 us)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=300, help="timed calls per configuration and model")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts to measure")
    ap.add_argument("--work", help="build folder (default: a temporary one)")
    ap.add_argument("--skip-portable", action="store_true", help="do not time the host-portable builds")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's pre-processing advice
    ort.set_default_logger_severity(3)
    print_machine()
    print(f"batch 1; {args.iterations} alternating calls per configuration")
    with tempfile.TemporaryDirectory(prefix="cuvil-bench-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        tiny = mlperf_tiny.models(work / "mlperf")
        models = [("digits_cnn", EXAMPLES / "digits_cnn.onnx", False),
                  ("resnet8", tiny["resnet8"], True),
                  ("ds_cnn_kws", tiny["ds_cnn_kws"], True),
                  ("mobilenet_v1_025_vww", tiny["mobilenet_v1_025_vww"], True),
                  ("ad_autoencoder", tiny["ad_autoencoder"], True)]
        for threads in args.threads:
            t0 = time.perf_counter()
            rows = [(name, mlperf, measure(name, path, threads, work, args)) for name, path, mlperf in models]
            print_table(threads, rows)
            print(f"  ({time.perf_counter() - t0:.0f} s)")
    print("ours = model(x) through cuvil_sdk.runtime; raw C call = <name>_run_batch by ctypes on preallocated buffers; "
          "ORT = InferenceSession.run; cos = our int8 output against ORT's float output on the timed input")
    return 0


if __name__ == "__main__":
    sys.exit(main())
