"""Cortex-M family speed benchmark: the MLPerf Tiny models on cortex-m7, cortex-m4, cortex-m33 (the
cortex_m_dsp kernels) and cortex-m55 (the helium kernels, DSP for what Helium declines) under QEMU.

Builds each model for each board, runs one sample under qemu-system-arm -icount shift=0 (the
board's own machine: mps2-an500, mps2-an386, mps2-an505, mps3-an547) and prints, per model and
board: guest instructions per inference, instructions per MAC, the fallbacks, whether the int8
outputs equal cortex-m7's, arena, flash and the stack estimate; then the per-layer profile of every
board side by side (instructions per MAC, the M55's kernel and variant), and the M55's worst layers.
With --tflm FILE (bench_tflm_cortex_m.py --json FILE), TensorFlow Lite Micro + CMSIS-NN's figures
on the same QEMU machine are printed beside ours.

Models as bench_m7.py (bench_m7.model_files): ResNet-8 and the FC autoencoder from sdk/examples,
DS-CNN and MobileNetV1-0.25 trained (benchmarks/models/*_trained.onnx), calibrated on 8 samples.
Figures are guest instructions under QEMU -icount shift=0 (SysTick x 40, 40, 50 or 31.25
instructions per tick), deterministic and comparable between builds, not cycles on silicon.

    python benchmarks/bench_cortex_m.py                      # everything (a few minutes)
    python benchmarks/bench_cortex_m.py --models resnet8 --boards m55
    python benchmarks/bench_cortex_m.py --json out.json --tflm tflm.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_m7 import Built, build_and_run, model_files, per_mac

BOARDS = {"m7": "cortex-m7", "m4": "cortex-m4", "m33": "cortex-m33", "m55": "cortex-m55"}
MODELS = ["resnet8", "ds_cnn_kws", "mobilenet_v1_025_vww", "ad_autoencoder"]
GOALS_M55 = {"resnet8": 0.30, "ds_cnn_kws": 0.55, "mobilenet_v1_025_vww": 0.75, "ad_autoencoder": 0.40}  # issue 31
WORST = 5  # the M55's layers with the most instructions, per model


def print_models(results: dict[str, dict[str, Built]], tflm: dict) -> None:
    print("\n== whole models (guest instructions per inference under QEMU -icount shift=0, not cycles) ==")
    print(f"{'model':22} {'board':5} {'instructions':>13} {'MACs':>10} {'instr/MAC':>9} {'fallbacks':>9} "
          f"{'== m7':>6} {'arena B':>8} {'flash B':>8} {'stack B':>7}")
    for model, by_board in results.items():
        ref = by_board.get("m7")
        for kind, built in by_board.items():
            same = "-" if ref is None or kind == "m7" else (
                "yes" if all(np.array_equal(a, b) for a, b in zip(built.raw, ref.raw)) else "NO")
            print(f"{model:22} {kind:5} {built.instructions:>13} {built.total_macs:>10} "
                  f"{per_mac(built.instructions, built.total_macs):>9} {len(built.info['fallbacks']):>9} {same:>6} "
                  f"{built.info['arena_bytes']:>8} {built.info['flash_bytes']:>8} {built.info['stack']['estimate']:>7}")
        if "m55" in by_board:
            print(f"{'':22} {'':5} goal on cortex-m55 (issue 31): <= {GOALS_M55.get(model, '-')} instructions per MAC")
        if model in tflm:
            t = tflm[model]
            macs = next(iter(by_board.values())).total_macs
            print(f"{'':22} {'TFLM':5} {t['instructions']:>13} {macs:>10} {per_mac(t['instructions'], macs):>9} "
                  f"{'':>9} {'':>6} {t['arena']:>8}   TFLite Micro + CMSIS-NN (MVE) on mps3-an547, "
                  f"{t['model']} (the MLPerf Tiny int8 reference .tflite)")


def print_layers(results: dict[str, dict[str, Built]]) -> None:
    print("\n== per layer: instructions per MAC on each board (the M55's kernel and variant) ==")
    for model, by_board in results.items():
        kinds = list(by_board)
        first = by_board[kinds[0]]
        print(f"-- {model}")
        print(f"  {'#':>3} {'op':12} {'MACs':>9} " + " ".join(f"{k:>8}" for k in kinds) + "  m55 kernel (variant)")
        for entry in first.info["layers"]:
            if entry["kernel"] == "(alias)":
                continue
            mac = first.macs.get(entry["name"], 0)
            cells = []
            for k in kinds:
                count = by_board[k].layers.get(entry["index"], 0)
                cells.append(per_mac(count, mac) if mac else str(count))
            m55 = {la["index"]: la for la in by_board["m55"].info["layers"]}.get(entry["index"]) if "m55" in by_board \
                else None
            kernel = f"{m55['kernel']} ({m55.get('variant', '')})" if m55 else ""
            print(f"  {entry['index']:>3} {entry['op'][:12]:12} {mac:>9} " + " ".join(f"{c:>8}" for c in cells) +
                  f"  {kernel}")


def print_worst(results: dict[str, dict[str, Built]]) -> None:
    print(f"\n== cortex-m55: the {WORST} layers with the most instructions per model ==")
    for model, by_board in results.items():
        if "m55" not in by_board:
            continue
        built = by_board["m55"]
        rows = sorted(((built.layers.get(e["index"], 0), e) for e in built.info["layers"] if e["kernel"] != "(alias)"),
                      key=lambda r: -r[0])[:WORST]
        print(f"-- {model} ({built.instructions} instructions in all)")
        for count, e in rows:
            mac = built.macs.get(e["name"], 0)
            print(f"  {e['index']:>3} {e['op'][:12]:12} {count:>9} ({100 * count / built.instructions:4.1f}%) "
                  f"{per_mac(count, mac):>6}/MAC  {e['kernel']} ({e.get('variant', '')})  {e['name'][-40:]}")


def as_json(results: dict[str, dict[str, Built]]) -> dict:
    out: dict = {}
    for model, by_board in results.items():
        for kind, b in by_board.items():
            out.setdefault(model, {})[kind] = {
                "board": b.board, "instructions": b.instructions, "macs": b.total_macs,
                "instructions_per_mac": round(b.instructions / b.total_macs, 4) if b.total_macs else None,
                "fallbacks": b.info["fallbacks"], "arena_bytes": b.info["arena_bytes"],
                "flash_bytes": b.info["flash_bytes"],
                "layers": [{"index": e["index"], "name": e["name"], "op": e["op"], "kernel": e["kernel"],
                            "variant": e.get("variant", ""), "macs": b.macs.get(e["name"], 0),
                            "instructions": b.layers.get(e["index"], 0)} for e in b.info["layers"]]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=MODELS, choices=MODELS)
    parser.add_argument("--boards", nargs="*", default=list(BOARDS), choices=list(BOARDS))
    parser.add_argument("--work", type=Path, help="keep the builds here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    parser.add_argument("--tflm", type=Path, help="bench_tflm_cortex_m.py --json output, printed beside ours")
    args = parser.parse_args()
    tflm = json.loads(args.tflm.read_text()) if args.tflm else {}
    with tempfile.TemporaryDirectory(prefix="bench-cortex-m-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = model_files(work)
        results: dict[str, dict[str, Built]] = {}
        for model in args.models:
            onnx_path, calib = files[model]
            for kind in args.boards:
                print(f"building {model} for {BOARDS[kind]} ...", file=sys.stderr)
                results.setdefault(model, {})[kind] = build_and_run(model, onnx_path, calib, BOARDS[kind], work)
        print_models(results, tflm)
        print_layers(results)
        print_worst(results)
        if args.json:
            args.json.write_text(json.dumps(as_json(results), indent=1))


if __name__ == "__main__":
    main()
