"""Per-layer time of a host build: where an inference's time goes, layer by layer.

    .venv/bin/python benchmarks/profile_layers.py BUILD_DIR [--iterations 300] [--repeats 7]

BUILD_DIR is a build's output folder (`cuvil-sdk build ... -o DIR`, or one that `bench_host.py
--work` keeps: manifest.json and src/). Its generated C is compiled again with
-D<NAME>_PROFILE (docs/internals.md, per-layer profiling hook) and a small harness that calls
<name>_run on random float inputs and reads the time stamp counter at every layer's mark.
Each layer's figure is the lowest of `--repeats` averages over `--iterations` calls (the
machine's other load only ever adds time). It prints per layer: thousands of TSC cycles per
inference, multiply-adds per cycle, the op, the kernel and the output shape; then the
fallbacks the build reported. TSC cycles count at the processor's nominal rate, not its
boosted one: compare layers and builds with each other, not with a core's peak.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
#include "{name}.h"

#define LAYERS {layers}
static unsigned long long last, spent[LAYERS];

void {name}_profile_mark(int layer)
{{
    const unsigned long long now = __rdtsc();
    if (layer >= 0) spent[layer] += now - last;
    last = __rdtsc();
}}

int main(void)
{{
    static float in[{NAME}_INPUT_0_SIZE], out[{NAME}_OUTPUT_0_SIZE];
    const float *ins[] = {{in}};
    float *outs[] = {{out}};
    static double best[LAYERS];
    for (int i = 0; i < {NAME}_INPUT_0_SIZE; i++) in[i] = (float)rand() / RAND_MAX;
    for (int i = 0; i < {iterations} / 10 + 1; i++) {name}_run(ins, outs); /* warm caches and branches */
    for (int l = 0; l < LAYERS; l++) best[l] = 1e300;
    for (int r = 0; r < {repeats}; r++) {{
        for (int l = 0; l < LAYERS; l++) spent[l] = 0;
        for (int i = 0; i < {iterations}; i++) {name}_run(ins, outs);
        for (int l = 0; l < LAYERS; l++)
            if ((double)spent[l] / {iterations} < best[l]) best[l] = (double)spent[l] / {iterations};
    }}
    for (int l = 0; l < LAYERS; l++) printf("%d %.1f\n", l, best[l]);
    return 0;
}}
"""


def compile_harness(build: Path, manifest: dict, iterations: int, repeats: int, work: Path) -> Path:
    name = manifest["name"]
    if len(manifest["inputs"]) != 1 or len(manifest["outputs"]) != 1:
        sys.exit("profile_layers: only models with one input and one output")
    main_c = work / "profile_main.c"
    main_c.write_text(HARNESS.format(name=name, NAME=name.upper(), layers=len(manifest["layers"]),
                                     iterations=iterations, repeats=repeats))
    exe = work / "profile"
    sources = [str(p) for p in sorted((build / "src").glob("*.c"))]
    # the board's flags (host: no -mavx2, the kernels carry their target) and the hook
    subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-std=gnu99", f"-D{name.upper()}_PROFILE",
                    "-I", str(build / "src"), *sources, str(main_c), "-o", str(exe), "-lpthread"],
                   check=True, cwd=build / "src")
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path, help="a build's output folder (manifest.json, src/)")
    ap.add_argument("--iterations", type=int, default=300, help="inferences per timed repeat")
    ap.add_argument("--repeats", type=int, default=7, help="timed repeats; each layer's lowest is kept")
    args = ap.parse_args()
    manifest = json.loads((args.build / "manifest.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_harness(args.build, manifest, args.iterations, args.repeats, Path(tmp))
        lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    kcycles = [float(line.split()[1]) / 1e3 for line in lines if line]
    print(f"{manifest['name']} ({manifest['board']}): {sum(kcycles):.1f} thousand TSC cycles per inference")
    print(f"{'layer':>5} {'kcycles':>9} {'MAC/cyc':>8}  op / kernel / output shape")
    for layer, k in zip(manifest["layers"], kcycles):
        rate = layer["macs"] / (k * 1e3) if k > 0 else 0.0
        print(f"{layer['index']:5d} {k:9.1f} {rate:8.1f}  {layer['op']} {layer['kernel']} {layer['output_shape']}")
    print(f"fallbacks: {manifest['fallbacks'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
