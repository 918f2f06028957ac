#!/usr/bin/env python3
"""Calibration quality: our int8 error against the float model, next to ONNX Runtime's own
quantize_static with the same calibration data (QDQ, per-channel int8 weights, int8
activations), for each example model and each calibration method.

    python benchmarks/bench_calibration.py [--samples N]

Our int8 outputs come from the numpy integer reference, which every target equals bit
for bit (the test suite holds that). Error = relative L2 of the outputs against ONNX
Runtime running the float model. A benchmark: it prints figures, it asserts nothing.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static

from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import CompileRequest, frontend_and_passes
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.calibrate import METHODS, calibrate
from cuvil_sdk.quant.quantize import quantize_graph
from cuvil_sdk.reference import run_quantized_model

EXAMPLES = Path(__file__).resolve().parents[1] / "sdk" / "examples"
ORT_METHODS = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
               "entropy": CalibrationMethod.Entropy}


def datasets(n: int) -> dict[str, tuple[Path, np.ndarray, np.ndarray, np.ndarray | None]]:
    """model -> (path, calibration inputs, evaluation inputs, labels or None)."""
    rng = np.random.default_rng(0)
    digits = np.load(EXAMPLES / "digits_data.npz")
    return {
        "digits_cnn": (EXAMPLES / "digits_cnn.onnx", digits["calib"], digits["x"], digits["y"]),
        "resnet8": (EXAMPLES / "resnet8_fp32.onnx", rng.random((64, 3, 32, 32), dtype=np.float32),
                    rng.random((n, 3, 32, 32), dtype=np.float32), None),
        "ad_autoencoder": (EXAMPLES / "ad_fp32.onnx", rng.random((64, 640), dtype=np.float32),
                           rng.random((n, 640), dtype=np.float32), None),
    }


def session(model) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(model), options)


def run_ort(s: ort.InferenceSession, x: np.ndarray) -> np.ndarray:
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a.astype(np.float64) - b) / (np.linalg.norm(b.astype(np.float64)) + 1e-30))


def ours(model: Path, calib: np.ndarray, x: np.ndarray, method: str) -> np.ndarray:
    req = CompileRequest(model=model, board=get_board("host"), profile=get_profile("standard"))
    g = frontend_and_passes(req)
    name = g.inputs[0]
    observer = calibrate(g, [{name: c[None]} for c in calib], len(calib), method)
    quantize_graph(g, observer)
    return np.concatenate([run_quantized_model(g, {name: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])


class Reader(CalibrationDataReader):
    def __init__(self, name: str, calib: np.ndarray) -> None:
        self.items = iter([{name: c[None]} for c in calib])

    def get_next(self):
        return next(self.items, None)


def onnxruntime_int8(model: Path, calib: np.ndarray, x: np.ndarray, method: str, tmp: Path) -> np.ndarray:
    out = tmp / f"{model.stem}_{method}_qdq.onnx"
    name = session(model).get_inputs()[0].name
    quantize_static(str(model), str(out), Reader(name, calib), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, calibrate_method=ORT_METHODS[method])
    return run_ort(session(out), x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100, help="evaluation samples for the random-input models")
    args = parser.parse_args()
    print(f"{'model':16} {'method':11} {'ours rel L2':>12} {'ORT rel L2':>12} {'ours acc':>9} {'ORT acc':>8} {'float acc':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, (model, calib, x, y) in datasets(args.samples).items():
            reference = run_ort(session(model), x)
            for method in list(METHODS) + ["entropy"]:
                our = ours(model, calib, x, method) if method in METHODS else None
                try:
                    theirs = onnxruntime_int8(model, calib, x, method if method in ORT_METHODS else "minmax", Path(tmp))
                except Exception as exc:  # ORT's calibrators fail on some graphs: say so, keep going
                    theirs, note = None, type(exc).__name__
                else:
                    note = ""
                if method == "mse":
                    theirs = None  # ORT has no MSE calibrator; compare our mse with its best below
                row = f"{label:16} {method:11} "
                row += f"{rel_l2(our, reference):12.5f} " if our is not None else f"{'-':>12} "
                row += f"{rel_l2(theirs, reference):12.5f} " if theirs is not None else f"{'-':>12} "
                if y is not None:
                    acc = lambda out: f"{float((out.reshape(len(x), -1).argmax(1) == y).mean()):9.4f}"  # noqa: E731
                    row += (acc(our) if our is not None else f"{'-':>9}") + " "
                    row += (acc(theirs) if theirs is not None else f"{'-':>8}") + " " + acc(reference)
                print(row + (f"  ({note})" if note else ""), flush=True)


if __name__ == "__main__":
    main()
