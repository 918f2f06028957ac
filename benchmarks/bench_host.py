#!/usr/bin/env python3
"""Latency of cuvil-sdk `host` builds against ONNX Runtime on this machine, in one process.

For each example model (sdk/examples: digits_cnn, resnet8_fp32, ad_fp32) and the four MLPerf
Tiny reference models (ResNet-8 and the FC autoencoder are the examples; DS-CNN and
MobileNetV1-0.25 come from benchmarks/mlperf_tiny.py, random weights):

  ours      the model compiled for `host` (int8, avx2 kernels, --threads 1), called through
            its C API <name>_run_batch (float in, float out: quantize, layers, dequantize)
            with ctypes, on buffers allocated once
  portable  the same for `host-portable` (the portable C kernels), for reference
  ort-f32   ONNX Runtime, the float model, one thread (intra- and inter-op)
  ort-int8  ONNX Runtime, its own int8 QDQ model (onnxruntime.quantization.quantize_static,
            per-channel int8 weights, int8 activations, the same calibration data), one thread

Calls alternate (ours, ort-f32, ort-int8, ours, ...) so that machine noise hits every
configuration alike; the portable build is timed apart afterwards (a tenth of the calls:
its long scalar runs between the others would cool their caches). The table gives medians
per inference (batch 1), the ratio of ours to ONNX Runtime's faster configuration, and the
geometric mean of that ratio over the four MLPerf Tiny models (also from each
configuration's fastest call). A benchmark, not a test: nothing here asserts.

    python3 benchmarks/bench_host.py [--iterations 300] [--work DIR] [--skip-portable]
"""
from __future__ import annotations

import argparse
import ctypes
import logging
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import cuvil_sdk  # noqa: F401  (pip install -e .)
except ModuleNotFoundError:  # a plain checkout
    sys.path.insert(0, str(ROOT))
    import sdk
    sys.modules["cuvil_sdk"] = sdk

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
ort.set_default_logger_severity(3)  # no graph-cleanup warnings in the table
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa: E402

import mlperf_tiny  # noqa: E402
from cuvil_sdk import runtime  # noqa: E402
from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.compiler import CompileRequest  # noqa: E402
from cuvil_sdk.profiles import get_profile  # noqa: E402

EXAMPLES = ROOT / "sdk" / "examples"
CALIB_SAMPLES = 32
CPU_FLAGS_SHOWN = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                   "avx_vnni", "amx_int8")


def cpu_info() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model in ("", platform.machine(), platform.processor()):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    return model, flags


def input_spec(path: Path) -> tuple[str, tuple[int, ...]]:
    inp = onnx.load(path).graph.input[0]
    return inp.name, tuple(d.dim_value or 1 for d in inp.type.tensor_type.shape.dim)


def calibration(name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name == "digits_cnn":
        return np.load(EXAMPLES / "digits_calib.npy")[:CALIB_SAMPLES].reshape(-1, *shape[1:]).astype(np.float32)
    return np.random.default_rng(1).random((CALIB_SAMPLES, *shape[1:]), dtype=np.float32)


class Reader(CalibrationDataReader):
    def __init__(self, input_name: str, data: np.ndarray) -> None:
        self.items = iter([{input_name: x[None]} for x in data])

    def get_next(self):
        return next(self.items, None)


def ort_session(path: Path) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class Ours:
    """A built library's <name>_run_batch on buffers allocated once."""

    def __init__(self, library: str, x: np.ndarray) -> None:
        self.model = runtime.load(library)
        self.x = np.ascontiguousarray(x, dtype=np.float32)
        self.outs = [np.empty(s, np.float32) for s in self.model.output_shapes]
        self.arena = np.zeros(self.model.arena_bytes + 64, np.uint8)
        aligned = self.arena.ctypes.data + (-self.arena.ctypes.data) % 64
        # <name>_run_batch(arena, n, input, outputs...): one sample
        self.args = (ctypes.c_void_p(aligned), 1, ctypes.c_void_p(self.x.ctypes.data),
                     *[ctypes.c_void_p(o.ctypes.data) for o in self.outs])
        self.fn = self.model._run_fn

    def __call__(self) -> None:
        self.fn(*self.args)

    def output(self) -> np.ndarray:
        self()
        return self.outs[0].reshape(-1)


def build(model: Path, name: str, board: str, calib: Path, work: Path) -> str:
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile("standard"), precision="int8",
                         calib=str(calib), name=name, threads=1)
    return do_build(req, work / f"{name}-{board}", 2)["artifacts"]["so"]


def median_us(samples: list[float]) -> float:
    return float(np.median(samples)) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=300, help="timed calls per configuration and model")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--work", help="build folder (default: a temporary one)")
    ap.add_argument("--skip-portable", action="store_true", help="do not time the host-portable builds")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's pre-processing advice

    model_name, flags = cpu_info()
    shown = [f for f in CPU_FLAGS_SHOWN if f in flags]
    print(f"CPU: {model_name}; {len(flags)} flags; SIMD: {' '.join(shown) or '-'}")
    print(f"CPU flags: {' '.join(flags)}")
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, python {platform.python_version()}; "
          f"batch 1, one thread everywhere; {args.iterations} alternating calls per configuration")

    with tempfile.TemporaryDirectory(prefix="cuvil-bench-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        tiny = mlperf_tiny.models(work / "mlperf")
        models = [("digits_cnn", EXAMPLES / "digits_cnn.onnx", False),
                  ("resnet8", tiny["resnet8"], True),
                  ("ds_cnn_kws", tiny["ds_cnn_kws"], True),
                  ("mobilenet_v1_025_vww", tiny["mobilenet_v1_025_vww"], True),
                  ("ad_autoencoder", tiny["ad_autoencoder"], True)]
        rows = []
        for name, path, mlperf in models:
            input_name, shape = input_spec(path)
            calib = calibration(name, shape)
            calib_path = work / f"{name}_calib.npy"
            np.save(calib_path, calib)
            qdq = work / f"{name}_ort_qdq.onnx"
            quantize_static(str(path), str(qdq), Reader(input_name, calib), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True)
            x = np.random.default_rng(2).random(shape, dtype=np.float32)
            runs = {"ours": Ours(build(path, name, "host", calib_path, work), x)}
            if not args.skip_portable:
                runs["portable"] = Ours(build(path, name, "host-portable", calib_path, work), x)
            for label, p in (("ort-f32", path), ("ort-int8", qdq)):
                session = ort_session(p)
                runs[label] = (lambda s=session: s.run(None, {input_name: x}))
            float_ref = runs["ort-f32"]()[0].reshape(-1)
            ours_out = runs["ours"].output()
            cosine = float(ours_out @ float_ref / (np.linalg.norm(ours_out) * np.linalg.norm(float_ref) + 1e-30))
            times: dict[str, list[float]] = {k: [] for k in runs}
            rotation = {k: fn for k, fn in runs.items() if k != "portable"}
            for _ in range(args.warmup):
                for fn in rotation.values():
                    fn()
            for _ in range(args.iterations):
                for label, fn in rotation.items():
                    t0 = time.perf_counter()
                    fn()
                    times[label].append(time.perf_counter() - t0)
            if "portable" in runs:  # timed apart: its long scalar calls would cool the others' caches
                for _ in range(max(5, args.iterations // 10)):
                    t0 = time.perf_counter()
                    runs["portable"]()
                    times["portable"].append(time.perf_counter() - t0)
            med = {k: median_us(v) for k, v in times.items()}
            best = min(med["ort-f32"], med["ort-int8"])
            low = {k: float(np.min(v)) for k, v in times.items()}
            rows.append((name, mlperf, med, med["ours"] / best, cosine,
                         low["ours"] / min(low["ort-f32"], low["ort-int8"])))
            for r in runs.values():
                if isinstance(r, Ours):
                    r.model.close()

    labels = ["ours", "portable", "ort-f32", "ort-int8"]
    labels = [label for label in labels if label in rows[0][2]]
    print()
    print(f"{'model':22} " + " ".join(f"{label + ' us':>12}" for label in labels) +
          f" {'ours/ORT best':>14} {'cos vs f32':>10}")
    for name, mlperf, med, ratio, cosine, _ in rows:
        mark = "*" if mlperf else " "
        print(f"{name + mark:22} " + " ".join(f"{med[label]:12.1f}" for label in labels) +
              f" {ratio:14.3f} {cosine:10.4f}")
    tiny_ratios = [row[3] for row in rows if row[1]]
    tiny_low = [row[5] for row in rows if row[1]]
    geomean = math.exp(sum(math.log(r) for r in tiny_ratios) / len(tiny_ratios))
    geomean_low = math.exp(sum(math.log(r) for r in tiny_low) / len(tiny_low))
    print(f"\n* MLPerf Tiny: geometric mean of ours / ORT's faster configuration = {geomean:.3f} "
          f"(goal <= 0.5; worst model {max(tiny_ratios):.3f}, goal < 1.0)")
    print(f"  the same from each configuration's fastest call instead of its median: {geomean_low:.3f} "
          f"(worst {max(tiny_low):.3f}; " + ", ".join(f"{row[0]} {row[5]:.3f}" for row in rows if row[1]) + ")")
    print("ours = <name>_run_batch through ctypes on preallocated buffers; ORT = InferenceSession.run; "
          "cos = cosine of our int8 output with ORT's float output on the timed input")
    return 0


if __name__ == "__main__":
    sys.exit(main())
