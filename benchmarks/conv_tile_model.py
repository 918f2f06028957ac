"""conv2d_s8_dsp's cost model (rules.tile_cost, which picks the pixel-tile width) against the
measured instructions of every convolution it takes in the MLPerf Tiny models (int8 weights,
the default), under qemu-system-arm -M mps2-an500 -icount shift=0.

    python benchmarks/conv_tile_model.py [--models resnet8,ds_cnn_kws,mobilenet_v1_025_vww]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_m7  # puts the SDK on the path
from cuvil_sdk.kernels.cortex_m_dsp import rules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet8,ds_cnn_kws,mobilenet_v1_025_vww")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="conv-model-") as tmp:
        work = Path(tmp)
        files = bench_m7.model_files(work)
        print(f"{'model':22} {'#':>3} {'variant':16} {'MACs':>9} {'measured':>9} {'modelled':>9} {'model/meas':>10}")
        for model in args.models.split(","):
            rules.MODELLED.clear()
            onnx_path, calib = files[model]
            built = bench_m7.build_and_run(model, onnx_path, calib, "cortex-m7", work)
            for layer in built.info["layers"]:
                if layer["kernel"] != "conv2d_s8_dsp":
                    continue
                measured, modelled = built.layers.get(layer["index"], 0), rules.MODELLED.get(layer["name"])
                ratio = f"{modelled / measured:.2f}" if modelled and measured else "-"
                print(f"{model:22} {layer['index']:>3} {layer.get('variant', ''):16} {built.macs.get(layer['name'], 0):>9} "
                      f"{measured:>9} {modelled or 0:>9.0f} {ratio:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
