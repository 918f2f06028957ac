#!/usr/bin/env python3
"""Per-call overhead of the Python runtime over the raw C call (benchmark, not test).

For each example model built for `host`: the median time of <name>_run_arena called through
ctypes on preallocated buffers (the floor any Python caller pays), of `model(x)` and of
`model(x, out=y)`; the difference is the runtime's overhead per call. Also a batch of 64
samples: one `model(batch)` call against 64 single calls. Prints the CPU's SIMD flags.

    python benchmarks/bench_runtime.py
    python benchmarks/bench_runtime.py --instructions    # needs valgrind

Times on a shared machine move with the neighbours' load; `--instructions` also counts the
host instructions per call under callgrind (the difference between runs of 1000 and 3000
calls, so start-up cancels out): a deterministic figure for the overhead.
"""
from __future__ import annotations

import ctypes
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_common import print_machine
from cuvil_sdk import runtime

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"ad_fp32": (640,), "digits_cnn": (1, 8, 8), "resnet8_fp32": (3, 32, 32)}


def per_call_us(fns: list, calls: int = 2000, rounds: int = 15) -> list[float]:
    """For each function, the lowest over rounds of the mean time per call. The functions take
    turns within every round, so a noisy neighbour on this shared machine slows all of them
    alike, and the lowest round is the least disturbed."""
    for fn in fns:
        for _ in range(100):
            fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / calls * 1e6)
    return best


def build(model: str, out: Path) -> Path:
    cmd = [sys.executable, "-m", "cuvil_sdk.cli", "build", "--board", "host", "--profile", "standard", "--model",
           str(ROOT / "sdk" / "examples" / f"{model}.onnx"), "--calib", "random", "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out / "build" / f"lib{model}.so"


def measure(model: str, so: Path, shape: tuple[int, ...]) -> dict:
    rng = np.random.default_rng(0)
    with runtime.load(so) as m:
        x = rng.standard_normal((1, *shape)).astype(np.float32)
        y = np.empty(m.output_shapes[0], dtype=np.float32)
        raw_fn = getattr(m._lib, f"{model}_run_arena")
        arena = m._arena()
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        outs = (ctypes.c_void_p * 1)(y.ctypes.data)
        calls = max(20, int(2000 / max(1.0, per_call_us([lambda: m(x)], calls=20, rounds=1)[0] / 10)))
        raw, call, into = per_call_us([lambda: raw_fn(arena, ins, outs), lambda: m(x), lambda: m(x, out=y)], calls)
        batch = rng.standard_normal((64, *shape)).astype(np.float32)
        one_call, singles = per_call_us([lambda: m(batch), lambda: [m(batch[i:i + 1]) for i in range(64)]],
                                        max(5, calls // 64), rounds=7)
    return {"model": model, "raw": raw, "call": call, "into": into, "batch64": one_call, "singles64": singles}


CALLS = {"raw": "raw(arena, ins, outs)", "model(x)": "m(x)", "model(x, out=y)": "m(x, out=y)"}
COUNT_SCRIPT = """
import ctypes, sys
import numpy as np
from cuvil_sdk import runtime
m = runtime.load(sys.argv[1])
name, calls = sys.argv[2], int(sys.argv[4])
x = np.random.default_rng(0).standard_normal((1, *m.input_shapes[0][1:])).astype(np.float32)
y = np.empty(m.output_shapes[0], dtype=np.float32)
raw, arena = getattr(m._lib, name + "_run_arena"), m._arena()
ins, outs = (ctypes.c_void_p * 1)(x.ctypes.data), (ctypes.c_void_p * 1)(y.ctypes.data)
call = compile(sys.argv[3], "call", "eval")
for _ in range(calls):
    eval(call)
"""


def instructions_per_call(so: Path, model: str, expression: str) -> float:
    """Host instructions of one call under callgrind: (3000 calls - 1000 calls) / 2000."""
    counts = []
    for calls in (1000, 3000):
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                               COUNT_SCRIPT, str(so), model, expression, str(calls)],
                              capture_output=True, text=True, check=True)
        counts.append(int(re.search(r"Collected : (\d+)", done.stderr).group(1)))
    return (counts[1] - counts[0]) / 2000


def count_instructions(tmp: Path) -> None:
    print(f"\n{'model':14} " + " ".join(f"{k:>16}" for k in CALLS) + f" {'overhead':>9}  (host instructions per call)")
    for model in MODELS:
        so = build(model, tmp / model) if not (tmp / model).exists() else tmp / model / "build" / f"lib{model}.so"
        per = {k: instructions_per_call(so, model, e) for k, e in CALLS.items()}
        print(f"{model:14} " + " ".join(f"{v:16.0f}" for v in per.values()) + f" {per['model(x)'] - per['raw']:9.0f}")


def main() -> None:
    print_machine()
    print(f"{'model':14} {'raw C us':>9} {'model(x)':>9} {'overhead':>9} {'out= us':>8} {'overhead':>9} "
          f"{'batch64 us':>11} {'64 calls us':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for model, shape in MODELS.items():
            r = measure(model, build(model, Path(tmp) / model), shape)
            print(f"{r['model']:14} {r['raw']:9.2f} {r['call']:9.2f} {r['call'] - r['raw']:9.2f} {r['into']:8.2f} "
                  f"{r['into'] - r['raw']:9.2f} {r['batch64']:11.1f} {r['singles64']:12.1f}")
        if "--instructions" in sys.argv:
            count_instructions(Path(tmp))


if __name__ == "__main__":
    main()
