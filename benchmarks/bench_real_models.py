#!/usr/bin/env python3
"""Speed of the models users ship (issue 40) on this machine, one thread, batch 1: the fixtures
of board_tests/fixtures/shipped/ (scripts/make_fixtures_shipped.py: ultralytics' YOLOv8n from
its yaml, PP-LCNet x0.25, a MobileNetV3 + DBFPN + DB text detector, a CRNN with a BiLSTM, a
DS-CNN audio classifier; random weights, synthetic data).

Per model:
  ours-f32, ours-int8   the model built for `host` (cuvil-sdk build, standard profile), called
                        as users call it, `model(x)` through cuvil_sdk.runtime (float in and out)
  ort-f32               ONNX Runtime on the float model
  ort-int8              ONNX Runtime on its own QDQ model (quantize_static: QDQ, uint8
                        activations, per-channel int8 weights), the fixture's calibration data
  fallbacks             layers of our builds on a slower kernel than the board's best (f32 / int8)
  task                  the int8 task metric against ONNX Runtime's float outputs on the
                        fixture's test samples, ours and ONNX Runtime's int8 (argmax agreement,
                        CTC text, detections F1), so speed is read beside accuracy

Figures are medians of wall time per inference, calls alternating between configurations so
that machine noise hits them alike. A benchmark, not a test: nothing here asserts.

    python3 benchmarks/bench_real_models.py [--only NAME ...] [--iterations 30] [--work DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "board_tests"))
from bench_common import Reader, cpu_info, median_us, ort_session
from shipped_tasks import MODELS, TASKS, data, model_path, task_metric

from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build
from cuvil_sdk.compiler import CompileRequest
from cuvil_sdk.errors import CuvilError
from cuvil_sdk.profiles import get_profile
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

CONFIGS = ("ours-f32", "ours-int8", "ort-f32", "ort-int8")


def build(name: str, precision: str, calib: Path, work: Path) -> tuple[str | None, int | str]:
    """Our host library of the fixture and how many of its layers fell back; or None and the
    SDK's one-line error where the build is refused (the row then shows what does run)."""
    req = CompileRequest(model=model_path(name), board=get_board("host"), profile=get_profile("standard"),
                         precision=precision, calib=str(calib) if precision == "int8" else None, name=name)
    try:
        info = do_build(req, work / f"{name}-{precision}", 2)
    except CuvilError as e:
        print(f"{name}: {precision} build refused: {e}", file=sys.stderr)
        return None, str(e)
    return info["artifacts"]["so"], len(info.get("fallbacks") or [])


def ort_qdq(name: str, calib: np.ndarray, work: Path) -> Path:
    qdq = work / f"{name}_qdq_u8s8.onnx"
    if not qdq.exists():
        quantize_static(str(model_path(name)), str(qdq), Reader("x", calib), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return qdq


def first_output(y) -> np.ndarray:
    """The runtime gives a single-output model's array as it is, a dict otherwise."""
    return y if isinstance(y, np.ndarray) else next(iter(y.values()))


def outputs(fn, x: np.ndarray) -> np.ndarray:
    """Outputs of a one-sample callable over every sample, stacked."""
    return np.concatenate([fn(x[i:i + 1]) for i in range(len(x))])


def timed(runs: dict, iterations: int, warmup: int = 3) -> dict[str, float]:
    """Median microseconds per call, the configurations alternating within each round."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for i in range(warmup + iterations):
        for label, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            if i >= warmup:
                times[label].append(time.perf_counter() - t0)
    return {k: median_us(v) for k, v in times.items()}


def measure(name: str, work: Path, iterations: int) -> dict:
    calib, test = data(name)
    calib_path = work / f"{name}_calib.npy"
    np.save(calib_path, calib)
    t0 = time.perf_counter()
    (so_f32, fb_f32), (so_int8, fb_int8) = build(name, "fp32", calib_path, work), build(name, "int8", calib_path, work)
    print(f"{name}: built fp32 and int8 in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    ours = {k: runtime.load(so) for k, so in (("ours-f32", so_f32), ("ours-int8", so_int8)) if so}
    sessions = {"ort-f32": ort_session(model_path(name)), "ort-int8": ort_session(ort_qdq(name, calib, work))}
    call = {**{k: (lambda x, m=m: first_output(m(x))) for k, m in ours.items()},
            **{k: (lambda x, s=s: s.run(None, {"x": x})[0]) for k, s in sessions.items()}}
    x1 = np.ascontiguousarray(test[:1])
    med = timed({k: (lambda f=f: f(x1)) for k, f in call.items()}, iterations)
    ref = outputs(call["ort-f32"], test)
    task = {k: task_metric(name, ref, outputs(call[k], test)) for k in ("ours-int8", "ort-int8") if k in call}
    for m in ours.values():
        m.close()
    return {"us": med, "fallbacks": {"f32": fb_f32, "int8": fb_int8}, "task": task, "task_name": TASKS[name],
            "samples": len(test)}


def cell(values: dict, key: str, fmt: str, scale: float = 1.0, width: int = 10, unit: str = "") -> str:
    return (format(values[key] / scale, fmt) + unit if key in values else "-").rjust(width)


def ratio(us: dict, ours: str, ort: str, width: int) -> str:
    return f"{us[ours] / us[ort]:.2f}".rjust(width) if ours in us else "-".rjust(width)


def print_table(results: dict[str, dict]) -> None:
    head = (f"{'model':16} {'fallbk f32/i8':>13} " + " ".join(f"{c:>10}" for c in CONFIGS)
            + f" {'ours/ort f32':>12} {'ours/ort i8':>11}  int8 task metric vs float (ours / ORT)")
    print(head)
    for name, r in results.items():
        us, fb, task = r["us"], r["fallbacks"], r["task"]
        fallbacks = f"{fb['f32'] if isinstance(fb['f32'], int) else 'err'}/{fb['int8'] if isinstance(fb['int8'], int) else 'err'}"
        print(f"{name:16} {fallbacks:>13} " + " ".join(cell(us, c, ".2f", 1e3, 10, "ms") for c in CONFIGS)
              + f" {ratio(us, 'ours-f32', 'ort-f32', 12)} {ratio(us, 'ours-int8', 'ort-int8', 11)}"
              + f"  {cell(task, 'ours-int8', '.3f', width=5)} / {cell(task, 'ort-int8', '.3f', width=5)}"
              + f" ({r['task_name']}, {r['samples']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=MODELS, help="these fixtures only")
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--work", type=Path, help="keep builds and ORT's QDQ models here")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout, the table on stderr")
    args = ap.parse_args()
    cpu, flags = cpu_info()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = {name: measure(name, work, args.iterations) for name in (args.only or MODELS)}
    machine = {"cpu": cpu, "vnni": [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f in flags],
               "threads": 1}
    if args.json:
        print(json.dumps({"machine": machine, "models": results}, indent=1))
        sys.stdout = sys.stderr
    print(f"CPU: {cpu} (one thread; int8 dot-product extensions: {' '.join(machine['vnni']) or 'none'})")
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
