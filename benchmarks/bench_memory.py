"""Arena bytes on cortex-m7: the default plan, --arena-budget at half of TFLite Micro's arena,
and an MCU-size MobileNetV2 in 128 KiB (issue 28).

For ResNet-8 and the FC autoencoder (sdk/examples), DS-CNN and MobileNetV1-0.25 (trained,
benchmarks/models/, else random weights from mlperf_tiny.py) it builds the model for cortex-m7
twice, by default and with `--arena-budget` at half of TFLM's arena, runs one sample of each
under qemu-system-arm -icount shift=0 and prints the arena bytes beside TFLM's (its greedy
planner, issue 28's figures), the guest instructions of both builds and whether their int8
outputs are the same bits; then MobileNetV2-0.35 at 144x144 (mlperf_tiny.mobilenet_v2, random
weights, 1000 classes) with `--arena-budget 131072`: the arena, the layers in bands and the
recompute, and its guest instructions per MAC. Guest instructions are not cycles on silicon.

    python benchmarks/bench_memory.py [--models resnet8,kws,vww,ad,mbv2] [--work DIR] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import print_machine  # noqa: E402
from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.commands import do_build, run_samples  # noqa: E402
from cuvil_sdk.profiles import get_profile  # noqa: E402
from cuvil_sdk.request import CompileRequest  # noqa: E402
import mlperf_tiny  # noqa: E402

TFLM_ARENA = {"resnet8": 55008, "kws": 22832, "vww": 100720, "ad": 3024}  # issue 28: TFLM's greedy planner
MODELS = {"resnet8": ROOT / "sdk" / "examples" / "resnet8_fp32.onnx", "ad": ROOT / "sdk" / "examples" / "ad_fp32.onnx",
          "kws": mlperf_tiny.TRAINED / "ds_cnn_kws_trained.onnx",
          "vww": mlperf_tiny.TRAINED / "mobilenet_v1_025_vww_trained.onnx"}
MBV2_BUDGET = 131072


def model_path(name: str, work: Path) -> Path:
    if name == "mbv2":
        path = work / "mobilenet_v2_035_144.onnx"
        onnx.save(mlperf_tiny.mobilenet_v2(0.35, 144), path)
        return path
    path = MODELS[name]
    if path.is_file():
        return path
    random = {"kws": mlperf_tiny.ds_cnn, "vww": mlperf_tiny.mobilenet_v1_025_vww}[name]()
    onnx.save(random, work / f"{name}.onnx")
    return work / f"{name}.onnx"


def build_and_run(model: Path, budget: int | None, work: Path) -> dict:
    req = CompileRequest(model=model, board=get_board("cortex-m7"), profile=get_profile("lite"), calib="random",
                         arena_budget=budget)
    info = do_build(req, work / f"{model.stem}-{budget}", 2)
    entry = info["inputs"][0]
    x = np.random.default_rng(1).random((1, *entry["shape"][1:]), dtype=np.float32)
    result = run_samples(req.board, info, [{entry["name"]: x}], False)
    macs = sum(layer["macs"] for layer in info["layers"])
    return {"arena": info["arena_bytes"], "instructions": result["instructions"][0], "raw": result["raw"],
            "macs": macs, "tiling": info.get("tiling"), "ram": info.get("ram_bytes"), "flash": info.get("flash_bytes")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet8,kws,vww,ad,mbv2")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    print_machine()
    figures = {}
    print("\n== cortex-m7 arena bytes (guest instructions under QEMU -icount shift=0, not cycles) ==")
    print(f"{'model':8} {'TFLM':>7} {'default':>8} {'x TFLM':>7} {'budget':>7} {'arena':>7} {'x TFLM':>7} "
          f"{'instr default':>14} {'instr budget':>13} {'+instr':>7} {'bands':>5} {'same bits':>9}")
    for name in [m for m in args.models.split(",") if m != "mbv2"]:
        model, budget = model_path(name, work), TFLM_ARENA[name] // 2
        whole, capped = build_and_run(model, None, work), build_and_run(model, budget, work)
        same = all(np.array_equal(a, b) for a, b in zip(whole["raw"], capped["raw"]))
        tiling = capped["tiling"]
        print(f"{name:8} {TFLM_ARENA[name]:>7} {whole['arena']:>8} {whole['arena'] / TFLM_ARENA[name]:>7.2f} "
              f"{budget:>7} {capped['arena']:>7} {capped['arena'] / TFLM_ARENA[name]:>7.2f} "
              f"{whole['instructions']:>14} {capped['instructions']:>13} "
              f"{capped['instructions'] / whole['instructions'] - 1:>+7.1%} {tiling['bands'] if tiling else '-':>5} "
              f"{'yes' if same else 'NO':>9}")
        figures[name] = {"tflm": TFLM_ARENA[name], "default": {k: v for k, v in whole.items() if k != "raw"},
                         "budget": budget, "capped": {k: v for k, v in capped.items() if k != "raw"}, "same_bits": same}
    if "mbv2" in args.models.split(","):
        result = build_and_run(model_path("mbv2", work), MBV2_BUDGET, work)
        tiling = result["tiling"] or {}
        print(f"\nMobileNetV2-0.35 144x144 (random weights), --arena-budget {MBV2_BUDGET}: arena {result['arena']} B "
              f"({'fits' if result['arena'] <= MBV2_BUDGET else 'OVER'}); whole layers {tiling.get('untiled_arena_bytes')} B; "
              f"{len(tiling.get('region', []))} layers in {tiling.get('bands')} bands, recompute "
              f"{tiling.get('recompute_macs')} MACs ({100 * tiling.get('recompute_share', 0):.1f}% of those layers); "
              f"{result['instructions']} guest instructions, {result['macs']} MACs, "
              f"{result['instructions'] / result['macs']:.2f} per MAC; flash {result['flash']} B")
        figures["mbv2"] = {k: v for k, v in result.items() if k != "raw"}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
