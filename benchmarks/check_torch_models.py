#!/usr/bin/env python3
"""Accuracy of full-size PyTorch exports (ResNet-50, MobileNetV2 from
benchmarks/export_torch_models.py) built for a board (default `host`), against ONNX Runtime's
float model: max abs error and cosine per precision (default fp32 and int8). A check to run by
hand (the models are too big for CI):

    python benchmarks/check_torch_models.py /path/to/models [--calib 8] [--samples 4] [--only mobilenet_v2]
    python benchmarks/check_torch_models.py /path/to/models --board rpi5 --precisions fp16 --samples 1 \
        --only mobilenet_v2      # fp16 NEON under qemu-aarch64 (minutes per sample)

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
from bench_common import ort_session

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


def precision_options(precision: str, work: Path) -> list[str]:
    return ["--calib", str(work / "calib.npy")] if precision == "int8" else ["--precision", precision]


def run_host(model: Path, work: Path, precision: str) -> tuple[np.ndarray, dict]:
    """`cuvil-sdk run` on x.npy: the first output and the report."""
    report = cli("run", "--board", "host", "--profile", "standard", "--model", str(model), "--input",
                 str(work / "x.npy"), "--output", str(work / f"y_{precision}.npy"), *precision_options(precision, work))
    with np.load(work / f"y_{precision}.npy") as outputs:  # an .npz of every output by name
        return outputs[outputs.files[0]], report


def run_qemu(model: Path, work: Path, precision: str, board: str) -> tuple[np.ndarray, dict]:
    """`cuvil-sdk build`, then the samples through the board's harness under QEMU, without the
    timed repeats (the runner's deadline grows with the model's multiply-adds)."""
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.runners import linux_qemu
    out = work / f"build_{precision}"
    report = cli("build", "--board", board, "--profile", "standard", "--model", str(model), "-o", str(out),
                 *precision_options(precision, work))
    manifest = json.loads((out / "manifest.json").read_text())
    x = np.load(work / "x.npy")
    name = manifest["inputs"][0]["name"]
    result = linux_qemu.run_on_qemu_user(get_board(board), {**manifest, "artifacts": report["artifacts"]},
                                         [{name: x[i:i + 1]} for i in range(len(x))], False)
    first = manifest["outputs"][0]["name"]
    if "instructions" in result:
        report["instructions"] = result["instructions"]
    return np.stack([r[first] for r in result["outputs"]]), report


def check(model: Path, work: Path, calib: int, samples: int, board: str = "host",
          precisions: tuple[str, ...] = ("fp32", "int8")) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, 3, 224, 224)).astype(np.float32)
    np.save(work / "x.npy", x)
    np.save(work / "calib.npy", rng.standard_normal((calib, 3, 224, 224)).astype(np.float32))
    want = onnxruntime_outputs(model, x)
    for precision in precisions:
        start = time.perf_counter()
        got, report = run_host(model, work, precision) if board == "host" else run_qemu(model, work, precision, board)
        got = got.reshape(want.shape)
        extra = f", guest instructions {report['instructions']}" if "instructions" in report else ""
        print(f"{model.stem:14} {board} {precision}: max abs error {np.abs(got - want).max():.2e}, "
              f"cosine {cosine(got, want):.6f}, weights {report.get('weight_bytes')} B, "
              f"fallbacks {len(report.get('fallbacks', []))}, build + run {time.perf_counter() - start:.0f} s{extra}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--calib", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--only", choices=MODELS)
    parser.add_argument("--board", default="host")
    parser.add_argument("--precisions", default="fp32,int8", help="comma-separated: fp32, int8, fp16")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in [args.only] if args.only else MODELS:
            check(args.folder / f"{name}.onnx", Path(tmp), args.calib, args.samples, args.board,
                  tuple(args.precisions.split(",")))


if __name__ == "__main__":
    main()
