"""Shared pieces of the host benchmarks (bench_host.py, bench_torch_models.py): the machine's
description, our build and its call through the Python runtime, ONNX Runtime's and OpenVINO's configurations,
and alternating timing. Nothing here asserts: the scripts print figures."""
from __future__ import annotations

import ctypes
import platform
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
try:
    import cuvil_sdk  # noqa: F401  (pip install -e .)
except ModuleNotFoundError:  # a plain checkout
    sys.path.insert(0, str(ROOT))
    import sdk
    sys.modules["cuvil_sdk"] = sdk

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa: E402

from cuvil_sdk import runtime  # noqa: E402
from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.compiler import CompileRequest  # noqa: E402
from cuvil_sdk.profiles import get_profile  # noqa: E402

CPU_FLAGS_SHOWN = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                   "avx_vnni", "amx_int8")
# ONNX Runtime's int8 configurations: QDQ from its own quantize_static with per-channel int8
# weights, and uint8 (its fastest on x86) or int8 activations
QDQ_ACTIVATIONS = {"ort-qdq-u8s8": QuantType.QUInt8, "ort-qdq-s8s8": QuantType.QInt8}
ORT_LABELS = ("ort-f32", *QDQ_ACTIVATIONS)


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


def print_machine() -> None:
    model, flags = cpu_info()
    shown = [f for f in CPU_FLAGS_SHOWN if f in flags]
    print(f"CPU: {model}; SIMD: {' '.join(shown) or '-'}")
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, python {platform.python_version()}")


def input_spec(path: Path) -> tuple[str, tuple[int, ...]]:
    inp = onnx.load(path, load_external_data=False).graph.input[0]
    return inp.name, tuple(d.dim_value or 1 for d in inp.type.tensor_type.shape.dim)


class Reader(CalibrationDataReader):
    def __init__(self, input_name: str, data: np.ndarray) -> None:
        self.items = iter([{input_name: x[None]} for x in data])

    def get_next(self):
        return next(self.items, None)


def ort_session(path: Path, threads: int = 1) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_models(path: Path, name: str, calib: np.ndarray, work: Path) -> dict[str, Path]:
    """ORT's float model and its own QDQ models of it, one per activation type."""
    input_name, _ = input_spec(path)
    models = {"ort-f32": path}
    for label, activations in QDQ_ACTIVATIONS.items():
        qdq = work / f"{name}_{label}.onnx"
        if not qdq.exists():
            quantize_static(str(path), str(qdq), Reader(input_name, calib), quant_format=QuantFormat.QDQ,
                            activation_type=activations, weight_type=QuantType.QInt8, per_channel=True)
        models[label] = qdq
    return models


def ort_runs(models: dict[str, Path], input_name: str, x: np.ndarray, threads: int) -> dict[str, Callable]:
    runs = {}
    for label, path in models.items():
        session = ort_session(path, threads)
        runs[label] = (lambda s=session: s.run(None, {input_name: x}))
    return runs


def openvino_runs(models: dict[str, Path], input_name: str, x: np.ndarray, threads: int) -> dict[str, Callable]:
    """OpenVINO's CPU plugin on the same files as ONNX Runtime (`ov-f32`, and ORT's QDQ models,
    which its low-precision transformations run in int8): INFERENCE_NUM_THREADS = threads, one
    stream, the latency hint, one infer request reused. OpenVINO is benchmark-only (PyPI
    `openvino`); without it, a line on stderr and no OpenVINO columns."""
    try:
        import openvino as ov
    except ImportError:
        print("note: OpenVINO is not installed (pip install openvino): its configurations are left out",
              file=sys.stderr)
        return {}
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
    runs = {}
    for label, path in models.items():
        request = core.compile_model(str(path), "CPU", config).create_infer_request()
        runs[label.replace("ort-", "ov-", 1)] = (lambda r=request: r.infer({input_name: x}))
    return runs


def peer_runs(models: dict[str, Path], input_name: str, x: np.ndarray, threads: int) -> dict[str, Callable]:
    """Every peer configuration: ONNX Runtime's (ort-*) and, where installed, OpenVINO's (ov-*)."""
    return {**ort_runs(models, input_name, x, threads), **openvino_runs(models, input_name, x, threads)}


def peer_labels(measured: dict) -> list[str]:
    """The peer configurations among `measured`'s keys, ONNX Runtime's first."""
    return [k for k in measured if k.startswith(("ort-", "ov-"))]


def build(model: Path, name: str, board: str, calib: Path, work: Path, threads: int = 1) -> str:
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile("standard"), precision="int8",
                         calib=str(calib), name=name, threads=threads)
    return do_build(req, work / f"{name}-{board}-t{threads}", 2)["artifacts"]["so"]


class Ours:
    """A built library as users call it: `model(x)` through cuvil_sdk.runtime; `raw()` is the same
    inference as one bare ctypes call on preallocated buffers (the runtime's overhead is the gap)."""

    def __init__(self, library: str, x: np.ndarray) -> None:
        self.model = runtime.load(library)
        self.x = np.ascontiguousarray(x, dtype=np.float32)
        self.isa = getattr(self.model, "isa", "avx2 (no dispatch)")
        self.outs = [np.empty(s, np.float32) for s in self.model.output_shapes]
        self.arena = np.zeros(self.model.arena_bytes + 64, np.uint8)
        aligned = self.arena.ctypes.data + (-self.arena.ctypes.data) % 64
        self.args = (ctypes.c_void_p(aligned), 1, ctypes.c_void_p(self.x.ctypes.data),
                     *[ctypes.c_void_p(o.ctypes.data) for o in self.outs])
        self.fn = self.model._run_fn

    def __call__(self):
        return self.model(self.x)

    def raw(self) -> None:
        self.fn(*self.args)

    def output(self) -> np.ndarray:
        y = self()
        return (y if isinstance(y, np.ndarray) else next(iter(y.values()))).reshape(-1)


def timed(runs: dict[str, Callable], iterations: int, warmup: int, alternate: bool = True) -> dict[str, list[float]]:
    """Alternating calls (one of each per round), so that machine noise hits every configuration
    alike; or (alternate=False, for several threads) each configuration's calls in one block:
    ONNX Runtime's intra-op threads spin for a while after a run and would take the cores from
    the next configuration's threads."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    rounds = [runs] if alternate else [{k: fn} for k, fn in runs.items()]
    for block in rounds:
        for _ in range(warmup):
            for fn in block.values():
                fn()
        for _ in range(iterations):
            for label, fn in block.items():
                t0 = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - t0)
    return times


def median_us(samples: list[float]) -> float:
    return float(np.median(samples)) * 1e6


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
