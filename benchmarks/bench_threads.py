#!/usr/bin/env python3
"""--threads builds of one model against each other: `host` int8 at --threads 1 and at each T
of --threads (and, with --min-macs, at T with simd_layout.THREAD_MIN_MACS set to each value:
more layers split), plus libraries already built, given as --library LABEL=PATH (e.g. the
same model built at another commit), timed through the Python runtime (`model(x)`). Each build
runs its calls in one block per round, over several rounds: a --threads build's workers
poll for a while after a call and would lend their core to the next build's call if calls
alternated one by one. Prints p10, median and minimum per build and whether every build
gives the same outputs (it must: the split does not change the arithmetic).
A benchmark, not a test: nothing asserts. On a shared machine, give the load average with
the figures: two threads only gain when two cores are free.

    python3 benchmarks/bench_threads.py sdk/examples/resnet8_fp32.onnx [--threads 2]
        [--min-macs 1048576 ...] [--rounds 10] [--calls 100] [--work DIR] [--library LABEL=PATH ...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import Ours, build, input_spec

from cuvil_sdk.kernels import simd_layout


def builds(args, work: Path) -> dict[str, str]:
    """label -> library: --threads 1, each T, each T with a lower THREAD_MIN_MACS."""
    name = args.model.stem
    _, shape = input_spec(args.model)
    calib = work / f"{name}_calib.npy"
    np.save(calib, np.random.default_rng(1).random((4, *shape[1:]), dtype=np.float32))
    libs = {"t1": build(args.model, name, "host", calib, work, 1)}
    default = simd_layout.THREAD_MIN_MACS
    for t in args.threads:
        libs[f"t{t}"] = build(args.model, name, "host", calib, work, t)
        for macs in args.min_macs:
            simd_layout.THREAD_MIN_MACS = macs
            libs[f"t{t}-min{macs}"] = build(args.model, name, "host", calib, work / f"min{macs}", t)
        simd_layout.THREAD_MIN_MACS = default
    return libs


def block_times(runs: dict[str, Ours], rounds: int, calls: int) -> dict[str, np.ndarray]:
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            for _ in range(max(3, calls // 10)):  # warm-up: caches, and the pool's workers started
                run()
            for _ in range(calls):
                t0 = time.perf_counter()
                run()
                times[label].append(time.perf_counter() - t0)
    return {k: np.array(v) * 1e6 for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--library", action="append", default=[], metavar="LABEL=PATH",
                    help="a build of the same model made elsewhere (repeatable)")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--min-macs", type=int, nargs="*", default=[])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_threads_"))
    work.mkdir(parents=True, exist_ok=True)
    libs = {**builds(args, work), **dict(a.split("=", 1) for a in args.library)}
    x = np.random.default_rng(2).random(input_spec(args.model)[1], dtype=np.float32)
    runs = {label: Ours(path, x) for label, path in libs.items()}
    outputs = [run.output() for run in runs.values()]
    print(f"{args.model.name}: identical outputs across builds: {all(np.array_equal(outputs[0], o) for o in outputs)}")
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]}")
    for label, t in block_times(runs, args.rounds, args.calls).items():
        print(f"  {label:24} p10 {np.percentile(t, 10):10.1f}  median {np.median(t):10.1f}  min {t.min():10.1f} us"
              f"  ({len(t)} calls)")
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[0]}")


if __name__ == "__main__":
    main()
