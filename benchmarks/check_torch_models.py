#!/usr/bin/env python3
"""Accuracy of full-size PyTorch exports (ResNet-50, MobileNetV2 from
benchmarks/export_torch_models.py) built for `host`, against ONNX Runtime's float model: fp32
max abs error, int8 cosine. A check to run by hand (the models are too big for CI):

    python benchmarks/check_torch_models.py /path/to/models [--calib 8] [--samples 4] [--only mobilenet_v2]

Inputs and calibration are random normal images (the exported weights are random too, with
batch-norm statistics drawn so that activations stay in range).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ort_session  # noqa: E402  (one thread, sequential, all graph optimizations)

MODELS = ("mobilenet_v2", "resnet50")


def cli(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *args, "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cuvil-sdk {' '.join(args[:1])} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout)


def onnxruntime_outputs(model: Path, x: np.ndarray) -> np.ndarray:
    session = ort_session(model)
    name = session.get_inputs()[0].name
    return np.concatenate([session.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(len(a), -1).astype(np.float64), b.reshape(len(b), -1).astype(np.float64)
    return float(((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))).mean())


def check(model: Path, work: Path, calib: int, samples: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, 3, 224, 224)).astype(np.float32)
    np.save(work / "x.npy", x)
    np.save(work / "calib.npy", rng.standard_normal((calib, 3, 224, 224)).astype(np.float32))
    want = onnxruntime_outputs(model, x)
    for precision, extra in (("fp32", ["--precision", "fp32"]), ("int8", ["--calib", str(work / "calib.npy")])):
        start = time.perf_counter()
        report = cli("run", "--board", "host", "--profile", "standard", "--model", str(model), "--input",
                     str(work / "x.npy"), "--output", str(work / f"y_{precision}.npy"), *extra)
        with np.load(work / f"y_{precision}.npy") as outputs:  # an .npz of every output by name
            got = outputs[outputs.files[0]].reshape(want.shape)
        print(f"{model.stem:14} {precision}: max abs error {np.abs(got - want).max():.2e}, cosine {cosine(got, want):.5f}, "
              f"fallbacks {len(report.get('fallbacks', []))}, build + run {time.perf_counter() - start:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--calib", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--only", choices=MODELS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in [args.only] if args.only else MODELS:
            check(args.folder / f"{name}.onnx", Path(tmp), args.calib, args.samples)


if __name__ == "__main__":
    main()
