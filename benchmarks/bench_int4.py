"""int4 weights (issue 28): weight bytes and accuracy of --weight-bits 8, 4 and auto.

For each model it compiles for cortex-m7 (lite) with --weight-bits 8, 4 and auto and reads the
manifest: the weight values' bytes (as int8: one byte each; as this build stores them: int4 layers
packed two per byte, except those whose kernel keeps int8 bytes, see `int4_unpacked`) and the
weight blob (every constant the kernels read: values, biases, requantization words, kernel
padding). It builds the same quantization for `host` (lite) and runs the evaluation data through
the library (its int8 outputs are those of the cortex-m7 and rpi5 builds bit for bit: the kernel
grids and board_tests/test_int4_boards.py hold that), against ONNX Runtime running the float model:

- digits: accuracy on sdk/examples/digits_data.npz's 540 test samples (calibration: its calib file);
- resnet8 (sdk/examples/resnet8_fp32.onnx, the MLPerf Tiny reference model): no CIFAR-10 data
  here, so the cosine of the outputs with ONNX Runtime's float outputs on uniform random images
  (calibration: 32 others);
- ds_cnn_kws, mobilenet_v1_025_vww (benchmarks/models/*_trained.onnx, trained on the synthetic
  tasks of scripts/train_mlperf_tiny.py): accuracy on 200 samples of that task, and the cosine
  (calibration: 32 other samples of the task).

auto uses --accuracy-target when given (--target), else its default: the all-int8 model's cosine
less 0.01, measured on the calibration data.

    python benchmarks/bench_int4.py [--models digits,resnet8] [--target 0.99] [--work DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuvil_sdk import runtime  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.compiler import compile_into  # noqa: E402
from cuvil_sdk.request import new_request  # noqa: E402

EXAMPLES = ROOT / "sdk" / "examples"
MODELS = ["digits", "resnet8", "ds_cnn_kws", "mobilenet_v1_025_vww"]
MODES = ["8", "4", "auto"]
CALIB, EVAL = 32, 200


def data(name: str, work: Path) -> tuple[Path, Path, np.ndarray, np.ndarray | None]:
    """(model, calibration file, evaluation inputs, labels or None)."""
    import mlperf_tiny
    if name == "digits":
        d = np.load(EXAMPLES / "digits_data.npz")
        return EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy", d["x"], d["y"]
    calib = work / f"{name}_calib.npy"
    if name == "resnet8":
        rng = np.random.default_rng(0)
        np.save(calib, rng.random((CALIB, 3, 32, 32), dtype=np.float32))
        return EXAMPLES / "resnet8_fp32.onnx", calib, np.random.default_rng(1).random((100, 3, 32, 32),
                                                                                       dtype=np.float32), None
    np.save(calib, mlperf_tiny.synthetic(name, CALIB, seed=3)[0])
    x, y = mlperf_tiny.synthetic(name, EVAL, seed=7)
    return mlperf_tiny.TRAINED / f"{name}_trained.onnx", calib, x, y


def float_outputs(model: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(str(model), so)
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + 1]})[0].reshape(1, -1) for i in range(len(x))])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)).mean())


def measure(name: str, mode: str, model: Path, calib: Path, x: np.ndarray, work: Path, target: float | None) -> dict:
    options = {"calib": str(calib), "weight_bits": mode, "accuracy_target": target if mode == "auto" else None}
    m7 = compile_into(new_request(model, board="cortex-m7", profile="lite", **options), work / f"{name}-m7-{mode}")
    req = new_request(model, board="host", profile="lite", jobs=2, **options)
    host = do_build(req, work / f"{name}-host-{mode}", 2)
    shape = host["inputs"][0]["shape"]
    with runtime.load(host["artifacts"]["so"]) as lib:
        outs = np.concatenate([np.asarray(lib(x[i:i + 1].reshape(shape))).reshape(1, -1) for i in range(len(x))])
    v = m7["weight_values"]
    return {"int4_layers": len(m7["int4_layers"]), "layers": len(v["layers"]), "int8_bytes": v["int8_bytes"],
            "stored_bytes": v["stored_bytes"], "ratio": v["stored_vs_int8"], "blob_bytes": m7["weights"]["bytes"],
            "unpacked": [f["layer"] for f in m7.get("int4_unpacked", [])], "outputs": outs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--target", type=float, help="auto's --accuracy-target (default: its own)")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    start = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-int4-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        for name in [m for m in args.models.split(",") if m]:
            model, calib, x, y = data(name, work)
            ref = float_outputs(model, x)
            float_acc = float((ref.argmax(1) == y).mean()) if y is not None else None
            for mode in MODES:
                print(f"{name} --weight-bits {mode} ...", file=sys.stderr)
                r = measure(name, mode, model, calib, x, work, args.target)
                outs = r.pop("outputs")
                r.update({"model": name, "mode": mode, "cosine": cosine(outs, ref), "float_accuracy": float_acc,
                          "accuracy": float((outs.argmax(1) == y).mean()) if y is not None else None})
                rows.append(r)
    print("\n== int4 weights: weight bytes (cortex-m7 manifests) and accuracy (host library vs ONNX Runtime float) ==")
    print(f"{'model':22} {'bits':5} {'int4 layers':>11} {'int8 B':>8} {'stored B':>9} {'ratio':>6} {'blob B':>8} "
          f"{'cosine':>8} {'accuracy':>9} {'float acc':>9}")
    for r in rows:
        acc = "-" if r["accuracy"] is None else f"{100 * r['accuracy']:.2f}%"
        facc = "-" if r["float_accuracy"] is None else f"{100 * r['float_accuracy']:.2f}%"
        print(f"{r['model']:22} {r['mode']:5} {r['int4_layers']:>5} of {r['layers']:<3} {r['int8_bytes']:>8} "
              f"{r['stored_bytes']:>9} {r['ratio']:>6} {r['blob_bytes']:>8} {r['cosine']:>8.5f} {acc:>9} {facc:>9}")
        if r["unpacked"]:
            print(f"{'':28} int4 values as int8 bytes (their kernels): {', '.join(r['unpacked'])}")
    print(f"\n({time.monotonic() - start:.0f} s; ratio: the weight values as stored over int8; blob: every constant "
          "of the cortex-m7 build in bytes; cosine: mean over the samples of the dequantized int8 outputs with ONNX "
          "Runtime's float ones)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
