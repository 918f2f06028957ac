"""The peer on the same QEMU machine: TensorFlow Lite Micro with CMSIS-NN (MVE kernels) on
cortex-m55 (qemu-system-arm -M mps3-an547 -icount shift=0), on the MLPerf Tiny int8 reference
models, timed by SysTick as cuvil's harness times its firmware. Nothing of TFLM or CMSIS is kept
in this repository: the script builds TFLM from checkouts you give it.

What it needs (plain folders, or git repositories at the revisions TFLM's own download scripts
pin, which the script reads from the TFLM checkout and exports with `git archive`):

    --tflm DIR          github.com/tensorflow/tflite-micro
    --cmsis DIR         github.com/ARM-software/CMSIS_6         --cortex-dfp DIR  ARM-software/Cortex_DFP
    --cmsis-nn DIR      github.com/ARM-software/CMSIS-NN
    --flatbuffers DIR   github.com/google/flatbuffers           --gemmlowp DIR    google/gemmlowp
    --ruy DIR           github.com/google/ruy                   --kissfft DIR     mborgerding/kissfft
    --tiny DIR          github.com/mlcommons/tiny (the reference .tflite models)
    --cxx-include DIR   libstdc++'s headers for arm-none-eabi (Debian's libstdc++-arm-none-eabi-newlib
                        puts them in /usr/include/newlib/c++/12.2.1; TFLM is C++ and gcc-arm-none-eabi
                        alone has none); DIR/arm-none-eabi/thumb/v8.1-m.main+mve/hard is added too

It copies the TFLM tree into --work, puts each dependency where TFLM's Makefile expects its
download (tensorflow/lite/micro/tools/make/downloads/...) with TFLM's patches applied, leaves
out what needs Pillow to generate (examples, integration tests and benchmarks: only the library
is built), runs `make ... TARGET=cortex_m_generic TARGET_ARCH=cortex-m55 OPTIMIZED_KERNEL_DIR=cmsis_nn
microlite` with the system's arm-none-eabi-gcc, then links benchmarks/tflm/tflm_harness.cc with each
model (its bytes in the board's SRAM region), cuvil's start-up code and the cortex-m55 board's
linker script, runs it under the board's QEMU command and prints guest instructions per
inference, per MAC (the MACs of the same architecture's ONNX model, bench_m7.model_files) and
the arena TFLM used. --json writes {model: {instructions, arena, model}} for bench_cortex_m.py --tflm.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_m7 import ROOT  # (importing bench_m7 puts the SDK on the path)

import jinja2

from cuvil_sdk.boards import get_board, include_folders, linker_context
from cuvil_sdk.runners.emulator import board_command

MAKE = "tensorflow/lite/micro/tools/make"
DOWNLOADS = f"{MAKE}/downloads"
# model -> the MLPerf Tiny int8 reference model in mlcommons/tiny, and our ONNX of the same architecture
MODELS = {"resnet8": "benchmark/training/image_classification/trained_models/pretrainedResnet_quant.tflite",
          "ds_cnn_kws": "benchmark/training/keyword_spotting/trained_models/kws_ref_model.tflite",
          "mobilenet_v1_025_vww": "benchmark/training/visual_wake_words/trained_models/vww_96_int8.tflite",
          "ad_autoencoder": "benchmark/training/anomaly_detection/trained_models/ad01_int8.tflite"}
BOARD = "cortex-m55"
HARNESS = Path(__file__).resolve().parent / "tflm" / "tflm_harness.cc"


def pinned(tflm: Path, script: str, pattern: str) -> str:
    """The revision a TFLM download script pins (its ZIP_PREFIX... line)."""
    text = (tflm / script).read_text()
    found = re.findall(pattern, text)
    if not found:
        raise SystemExit(f"no pinned revision in {script}")
    return found[0]


def export(source: Path, rev: str | None, dest: Path) -> None:
    """A git repository's tree at rev (or a plain folder as it is) into dest."""
    dest.mkdir(parents=True, exist_ok=True)
    if rev and subprocess.run(["git", "-C", str(source), "rev-parse", "--git-dir"], capture_output=True).returncode == 0:
        archive = subprocess.run(["git", "-C", str(source), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        shutil.copytree(source, dest, dirs_exist_ok=True)


def prepare(args, work: Path) -> Path:
    """The TFLM tree with its downloads in place; returns its root."""
    tree = work / "tflm"
    if (tree / "ready").exists():
        return tree
    export(args.tflm, "HEAD", tree)
    d = tree / DOWNLOADS
    export(args.gemmlowp, re.search(r"gemmlowp/archive/([0-9a-f]+)\.zip",
                                    (tree / f"{MAKE}/third_party_downloads.inc").read_text()).group(1), d / "gemmlowp")
    export(args.ruy, re.search(r"ruy/archive/([0-9a-f]+)\.zip",
                               (tree / f"{MAKE}/third_party_downloads.inc").read_text()).group(1), d / "ruy")
    export(args.flatbuffers, pinned(tree, f"{MAKE}/flatbuffers_download.sh", r'ZIP_PREFIX="(v[0-9.]+)"'),
           d / "flatbuffers")
    export(args.kissfft, pinned(tree, f"{MAKE}/kissfft_download.sh", r"kissfft/archive/refs/tags/(v[0-9]+)\.zip"),
           d / "kissfft")
    cmsis = pinned(tree, f"{MAKE}/ext_libs/cmsis_download.sh", r'ZIP_PREFIX="([0-9a-f]{40})"')
    export(args.cmsis, cmsis, d / "cmsis")
    dfp = re.findall(r'ZIP_PREFIX="([0-9a-f]{40})"', (tree / f"{MAKE}/ext_libs/cmsis_download.sh").read_text())[1]
    export(args.cortex_dfp, dfp, d / "cmsis" / "Cortex_DFP")
    export(args.cmsis_nn, pinned(tree, f"{MAKE}/ext_libs/cmsis_nn_download.sh", r'ZIP_PREFIX_NN="([0-9a-f]{40})"'),
           d / "cmsis_nn")
    (d / "pigweed").mkdir(exist_ok=True)  # only for TFLM's own tests
    for name, patch in (("flatbuffers", tree / f"{MAKE}/flatbuffers.patch"),
                        ("kissfft", tree / "third_party/kissfft/kissfft.patch")):
        for build in list((d / name).rglob("BUILD")) + list((d / name).rglob("BUILD.bazel")):
            build.unlink()
        subprocess.run(["patch", "-p1", "-i", str(patch)], cwd=d / name, check=True, capture_output=True)
    # the examples, integration tests and benchmarks generate arrays with Pillow: not the library
    for folder in ("examples", "integration_tests"):
        shutil.rmtree(tree / "tensorflow/lite/micro" / folder, ignore_errors=True)
    (tree / f"{MAKE}/tests.inc").write_text("")
    (tree / "ready").write_text("")
    return tree


def toolchain(args, work: Path) -> Path:
    """arm-none-eabi tools, g++ with libstdc++'s headers (--cxx-include) when gcc has none of its own."""
    bin_dir = work / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("gcc", "ar", "objcopy", "size", "nm"):
        link = bin_dir / f"arm-none-eabi-{tool}"
        if not link.exists():
            link.symlink_to(shutil.which(f"arm-none-eabi-{tool}"))
    extra = ""
    if args.cxx_include:
        inc = args.cxx_include.resolve()
        extra = f"-isystem {inc} -isystem {inc}/arm-none-eabi/thumb/v8.1-m.main+mve/hard "
    (bin_dir / "arm-none-eabi-g++").write_text(f'#!/bin/sh\nexec {shutil.which("arm-none-eabi-g++")} {extra}"$@"\n')
    (bin_dir / "arm-none-eabi-g++").chmod(0o755)
    return bin_dir


def build_library(tree: Path, bin_dir: Path, jobs: int) -> tuple[Path, list[str]]:
    """libtensorflow-microlite.a, and the compile flags it was built with (for the harness)."""
    common = ["make", "-f", f"{MAKE}/Makefile", "TARGET=cortex_m_generic", "TARGET_ARCH=cortex-m55",
              "OPTIMIZED_KERNEL_DIR=cmsis_nn", "TOOLCHAIN=gcc", f"TARGET_TOOLCHAIN_ROOT={bin_dir}/",
              "BUILD_TYPE=release"]
    r = subprocess.run([*common, f"-j{jobs}", "microlite"], cwd=tree, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("TFLM's make failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])
    lib = next(tree.glob("gen/*/lib/libtensorflow-microlite.a"))
    flags = subprocess.run([*common, "--eval=cuvil_print_flags: ; @echo CXXFLAGS: $(CXXFLAGS)", "cuvil_print_flags"],
                           cwd=tree, capture_output=True, text=True)
    cxxflags = re.findall(r"CXXFLAGS: (.*)", flags.stdout)
    return lib, cxxflags[0].split() if cxxflags else []


def model_bytes(tiny: Path, relative: str) -> bytes:
    """A model file of the mlcommons/tiny checkout (a working tree, or a git repository's HEAD)."""
    if (tiny / relative).is_file():
        return (tiny / relative).read_bytes()
    return subprocess.run(["git", "-C", str(tiny), "show", f"HEAD:{relative}"], capture_output=True, check=True).stdout


def model_header(data: bytes, out: Path) -> None:
    body = ",".join(str(b) for b in data)
    out.write_text("/* written by bench_tflm_cortex_m.py */\n#include <stdint.h>\n"
                   "__attribute__((aligned(16), section(\".sram.rodata.tflm_model\")))\n"
                   f"static const uint8_t tflm_model[{len(data)}] = {{{body}}};\n")


def build_harness(tree: Path, lib: Path, cxxflags: list[str], bin_dir: Path, model: bytes, out: Path) -> Path:
    """The harness ELF for one model: cuvil's start-up, UART and semihosting (C), the harness (C++)."""
    board = get_board(BOARD)
    out.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(p) for p in include_folders(board)]),
                             trim_blocks=True, lstrip_blocks=True)
    (out / "linker.ld").write_text(env.get_template("linker.ld.j2").render(linker_context(board)))
    model_header(model, out / "tflm_model.h")
    cpu = board.get("toolchain.cpu_flags")
    startup = ROOT / "targets" / "cortex_m7"
    objects = []
    for src in ("startup.c", "uart.c", "semihost.c"):
        obj = out / (src[:-2] + ".o")
        subprocess.run(["arm-none-eabi-gcc", *cpu, "-O2", f"-DCUVIL_UART0_BASE={board.get('peripherals.uart0')}u",
                        "-c", str(startup / src), "-o", str(obj)], check=True)
        objects.append(str(obj))
    keep = [f for f in cxxflags if f.startswith(("-D", "-std=", "-fno-", "-funsigned-char"))]
    includes = ["-I", str(tree), "-I", str(tree / DOWNLOADS / "flatbuffers/include"), "-I",
                str(tree / DOWNLOADS / "gemmlowp"), "-I", str(startup), "-I", str(out)]
    harness = out / "tflm_harness.o"
    subprocess.run([str(bin_dir / "arm-none-eabi-g++"), *cpu, "-O2", *keep, *includes, "-c", str(HARNESS), "-o",
                    str(harness)], check=True)
    elf = out / "tflm.elf"
    # linked by gcc: TFLM (-fno-exceptions -fno-rtti, nothing allocated) needs nothing of libstdc++
    subprocess.run(["arm-none-eabi-gcc", *cpu, *objects, str(harness), str(lib), *board.get("toolchain.linkflags"),
                    "-T", str(out / "linker.ld"), "-lm", "-o", str(elf)], check=True)
    return elf


def run(elf: Path) -> dict:
    command = board_command(get_board(BOARD), "run.command", elf=str(elf))
    r = subprocess.run(command, cwd=elf.parent, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit(f"{elf} exited {r.returncode}: {r.stdout[-300:]} {r.stderr[-300:]}")
    lines = [line.split() for line in (elf.parent / "tflm.txt").read_text().splitlines()]
    values = {k: int(v) for k, v in lines if k != "output"}
    return {"instructions": values["instructions"], "arena": values["arena"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("tflm", "cmsis", "cortex-dfp", "cmsis-nn", "flatbuffers", "gemmlowp", "ruy", "kissfft", "tiny"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--cxx-include", type=Path, help="libstdc++'s headers for arm-none-eabi (see above)")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--work", type=Path, help="keep the TFLM tree and builds here")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tflm-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        tree = prepare(args, work)
        bin_dir = toolchain(args, work)
        lib, cxxflags = build_library(tree, bin_dir, args.jobs)
        from bench_m7 import model_files  # the ONNX models of the same architectures, for their MACs
        from cuvil_sdk.compiler import CompileRequest, frontend_and_passes
        from cuvil_sdk.profiles import get_profile
        from cuvil_sdk.runners.firmware import layer_macs
        files = model_files(work / "onnx")
        results = {}
        print(f"{'model':22} {'instructions':>13} {'MACs':>10} {'instr/MAC':>9} {'arena B':>8}  (TFLM + CMSIS-NN, "
              f"guest instructions under QEMU -icount shift=0 on mps3-an547, not cycles)")
        for model in args.models:
            figures = run(build_harness(tree, lib, cxxflags, bin_dir, model_bytes(args.tiny, MODELS[model]), work / model))
            req = CompileRequest(model=files[model][0], board=get_board(BOARD), profile=get_profile("lite"),
                                 calib=str(files[model][1]))
            macs = sum(layer_macs(frontend_and_passes(req)).values())
            results[model] = {**figures, "macs": macs, "model": Path(MODELS[model]).name}
            print(f"{model:22} {figures['instructions']:>13} {macs:>10} {figures['instructions'] / macs:>9.2f} "
                  f"{figures['arena']:>8}")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
