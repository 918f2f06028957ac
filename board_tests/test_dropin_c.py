"""The generated C drops into any project (docs/integration.md).

1. Every source `compile` writes (model .c/.h, weights, every kernel header it copies) for
   cortex-m7, host and rpi5 (and the portable set alone: cortex-m7-portable, host-portable) compiles
   with -Wall -Wextra -Wpedantic -Werror and only the board's machine flags (-mcpu/-mfpu/-mthumb/-mfloat-abi,
   -mavx2 -mfma), with the board's own compilers (C and C++ driver of its toolchain), at every
   optimisation level, with and without a frame pointer, as C99/C11 and as C++11/14/17.
   Each compiler invocation is one test: its id names board, precision, model, standard and flags.
2. Firmware built at -O0 and with -fno-omit-frame-pointer computes what the numpy integer
   reference computes: no kernel depends on optimisation for correctness.
3. The host model compiled as C links with a C++ caller (extern "C") and gives the reference's
   int8 outputs.

The matrix (Python decides, see `variants`), cut to fit about two minutes on two cores along
what each axis can change. The models that together use every kernel the examples use
(digits_cnn, resnet8_fp32; a test checks that they still do) get every standard at -O0, where
the front end's rules and the intrinsics' immediate arguments bite, and every other level
(-Og, -Os, -O2, -O3: register allocation, inlining, flow-sensitive warnings) with the standards
taking the levels in turn. The frame-pointer axis is added on boards whose kernel sets hold
inline asm: it changes which registers asm may use, and nothing else a compiler checks. The
weights file is const data, so it is compiled under every standard, at -O0. The other models
get one C++11 and one C99 -O2 invocation. The compiles of one model run in parallel (one per
core). A missing compiler fails the tests, never skips them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

import kernel_cases as kc
from cuvil_sdk.boards import Board, get_board
from cuvil_sdk.commands import do_build, do_compile, run_samples
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.scons_build import run_scons
from cuvil_sdk.paths import TEMPLATES
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model

from models import EXAMPLES, reference_graph

pytestmark = pytest.mark.slow

TARGETS = {"cortex-m7": ("lite", ("int8",)), "host": ("standard", ("int8", "fp32")),
           "rpi5": ("standard", ("int8", "fp32")),
           # the portable set alone (the others fall back to it only for some kernels)
           "cortex-m7-portable": ("lite", ("int8",)), "host-portable": ("standard", ("fp32",))}
COVERING_MODELS = ("digits_cnn", "resnet8_fp32")  # together: every kernel the example models use
OTHER_MODELS = ("ad_fp32", "resnet8_qdq")
OPT_LEVELS = ("-O0", "-Og", "-Os", "-O2", "-O3")
FRAME_POINTER = "-fno-omit-frame-pointer"
STDS = ("c99", "c++11", "c11", "c++14", "c++17")
WARNINGS = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")  # ISO C and C++ (test_pedantic_c.py: more models)
CALIB_SAMPLES = 2  # the scales do not matter here, only the code


@dataclass(frozen=True)
class Config:
    board: str
    precision: str
    model: str

    @property
    def key(self) -> str:
        return f"{self.board}-{self.precision}-{self.model}"


@dataclass(frozen=True)
class Variant:
    std: str
    flags: tuple[str, ...]
    weights: bool = True  # compile <name>_weights.c too (const data only: the standard matters, not -O)

    @property
    def cxx(self) -> bool:
        return self.std.startswith("c++")

    @property
    def label(self) -> str:
        return " ".join((f"-std={self.std}",) + self.flags + (() if self.weights else ("(no-weights)",)))


def sets_with_inline_asm() -> set[str]:
    """Kernel sets whose templates contain inline assembly."""
    return {d.name for d in TEMPLATES.iterdir() if d.is_dir()
            and any(re.search(r"\b(__asm__|asm)\s*(volatile\s*)?\(", f.read_text()) for f in d.glob("*.h"))}


def frame_pointer_options(board: Board) -> tuple[tuple[str, ...], ...]:
    sets = set(board.kernels) | {"portable"}
    return ((), (FRAME_POINTER,)) if sets & sets_with_inline_asm() else ((),)


def variants(config: Config) -> list[Variant]:
    """The compiler invocations for one generated project (see the module docstring)."""
    board = get_board(config.board)
    fps = frame_pointer_options(board)
    if config.model not in COVERING_MODELS:
        return [Variant("c++11", ("-O0",)), Variant("c99", ("-O2",) + fps[-1], weights=False)]
    stds = [Variant(std, ("-O0",)) for std in STDS]  # -O0 keeps the frame pointer anyway
    optimised = [(opt,) + fp for opt in OPT_LEVELS[1:] for fp in fps]
    return stds + [Variant(STDS[i % len(STDS)], flags, weights=False) for i, flags in enumerate(optimised)]


def compilers(board: Board) -> tuple[str, str]:
    """The board's C compiler and the C++ driver of the same GCC toolchain."""
    cc = board.get("toolchain.cc") or board.get("toolchain.prefix", "") + "gcc"
    return cc, re.sub(r"gcc$", "g++", cc)


def machine_flags(board: Board) -> list[str]:
    """Only what selects the CPU (-mcpu, -mfpu, -mthumb, -mfloat-abi, -mavx2, -mfma, ...)."""
    flags = list(board.get("toolchain.cpu_flags", [])) + list(board.get("toolchain.cflags", []))
    return list(dict.fromkeys(f for f in flags if f.startswith("-m")))


CONFIGS = [Config(board, precision, model) for model in COVERING_MODELS + OTHER_MODELS
           for board, (_, precisions) in TARGETS.items() for precision in precisions]
PARAMS = [pytest.param(c, v, id=f"{c.key}-{v.label.replace(' ', '')}") for c in CONFIGS for v in variants(c)]


def calib_file(model: Path, folder: Path) -> Path:
    """A few random samples in the model's input shape."""
    graph = onnx.load(model, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    first = next(i for i in graph.input if i.name not in inits)
    shape = [d.dim_value or 1 for d in first.type.tensor_type.shape.dim]
    path = folder / f"{model.stem}_calib.npy"
    np.save(path, np.random.default_rng(0).random((CALIB_SAMPLES, *shape[1:]), dtype=np.float32))
    return path


def generate(config: Config, folder: Path) -> Path:
    """`compile` the model into folder/out; returns its src folder."""
    model = EXAMPLES / f"{config.model}.onnx"
    float_model = config.precision == "int8" and "qdq" not in config.model
    req = CompileRequest(model=model, board=get_board(config.board), profile=get_profile(TARGETS[config.board][0]),
                         precision=config.precision, calib=str(calib_file(model, folder)) if float_model else None)
    do_compile(req, folder / "out")
    return folder / "out" / "src"


def compile_sources(src: Path, board: Board, variant: Variant, obj_dir: Path) -> subprocess.CompletedProcess:
    """All .c files of the project in one invocation (-c, objects in obj_dir)."""
    cc, cxx = compilers(board)
    tool = shutil.which(cxx if variant.cxx else cc)
    assert tool, f"'{cxx if variant.cxx else cc}' not found: run scripts/setup.sh (these tests never skip)"
    obj_dir.mkdir(parents=True)
    lang = ["-x", "c++"] if variant.cxx else []
    # the model's own sources: the board's test harness (src/harness.c, which compile adds for
    # the board's own build) is not part of what a user drops into a project
    sources = sorted(str(p) for p in src.glob("*.c")
                     if p.name != "harness.c" and (variant.weights or not p.name.endswith("_weights.c")))
    cmd = [tool, *machine_flags(board), f"-std={variant.std}", *variant.flags, *WARNINGS, f"-I{src}", f"-Wa,-I{src}", "-c", *lang,
           *sources]
    return subprocess.run(cmd, cwd=obj_dir, capture_output=True, text=True, timeout=600)


@dataclass
class Project:
    src: Path  # the generated src folder
    runs: dict  # Variant -> CompletedProcess


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """config -> Project, made on first use: generate, then compile every variant in parallel."""
    def make(config: Config) -> Project:
        folder = tmp_path_factory.mktemp(config.key)
        src = generate(config, folder)
        board = get_board(config.board)
        todo = variants(config)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            runs = pool.map(lambda iv: compile_sources(src, board, iv[1], folder / f"obj{iv[0]}"), enumerate(todo))
            return Project(src, dict(zip(todo, runs)))
    return kc.Lazy(make)


def first_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[:count])


@pytest.mark.parametrize("config,variant", PARAMS)
def test_generated_sources_compile_warning_free(compiled, config, variant):
    result = compiled(config).runs[variant]
    assert result.returncode == 0 and not result.stderr.strip(), (
        f"{config.key} {variant.label}:\n{first_lines(result.stderr)}")


def test_the_covering_models_use_every_kernel_the_others_use(compiled):
    """Else the other models would need the whole matrix too."""
    for board, (_, precisions) in TARGETS.items():
        for precision in precisions:
            used = {m: {p.name for p in (compiled(Config(board, precision, m)).src / "kernels").glob("*.h")}
                    for m in COVERING_MODELS + OTHER_MODELS}
            covered = set().union(*(used[m] for m in COVERING_MODELS))
            for m in OTHER_MODELS:
                assert used[m] <= covered, f"{board} {precision} {m}: {sorted(used[m] - covered)}"


def test_the_frame_pointer_axis_is_where_the_asm_is():
    """The asm-bearing kernel set is found (else the matrix would silently lose that axis)."""
    assert "cortex_m_dsp" in sets_with_inline_asm()
    assert frame_pointer_options(get_board("cortex-m7")) == ((), (FRAME_POINTER,))


# --- firmware built without optimisation computes the same int8 outputs ----------------------------
FIRMWARE_FLAGS = {"O0": ("-O0",), "O2-frame-pointer": ("-O2", FRAME_POINTER)}
FIRMWARE_SAMPLES = 2


@pytest.mark.parametrize("flags", list(FIRMWARE_FLAGS))
@pytest.mark.parametrize("model", COVERING_MODELS)
def test_m7_firmware_at_other_flags_equals_the_reference(tmp_path, model, flags):
    """-O0 and a frame pointer change register allocation around the DSP kernels' asm."""
    onnx_path = EXAMPLES / f"{model}.onnx"
    req = CompileRequest(model=onnx_path, board=get_board("cortex-m7"), profile=get_profile("lite"),
                         calib=str(calib_file(onnx_path, tmp_path)))
    info = do_build(req, tmp_path / "out", 2)
    elf = Path(info["artifacts"]["elf"])
    optimised = elf.read_bytes()
    spec = tmp_path / "out" / "build.json"
    build = json.loads(spec.read_text())
    build["cflags"] = list(FIRMWARE_FLAGS[flags])  # after the board's -O2, so they win
    spec.write_text(json.dumps(build))
    run_scons(tmp_path / "out", req.board, 2)
    assert elf.read_bytes() != optimised, "the flags changed nothing: the firmware was not rebuilt with them"
    entry = info["inputs"][0]
    x = np.random.default_rng(7).random((FIRMWARE_SAMPLES, *entry["shape"][1:]), dtype=np.float32)
    samples = [{entry["name"]: x[i:i + 1]} for i in range(FIRMWARE_SAMPLES)]
    got = run_samples(req.board, info, samples, False)["raw"]
    g = reference_graph(req)
    want = [np.stack([run_quantized_model(g, s)[0][o].reshape(-1) for s in samples]) for o in g.outputs]
    for o, got_o, want_o in zip(g.outputs, got, want):
        assert np.array_equal(got_o, want_o), f"{model} {flags} output {o}: {kc.mismatch(got_o, want_o)}"


# --- the API called from C++, the model compiled as C -------------------------------------------
CPP_CALLER = """#include <cstdio>
#include "{name}.h"

int main()
{{
    static float x[{NAME}_INPUT_0_SIZE];
    static int8_t q[{NAME}_INPUT_0_SIZE], y[{NAME}_OUTPUT_0_SIZE];
    for (int i = 0; i < {NAME}_INPUT_0_SIZE; i++) x[i] = static_cast<float>(i % 17) / 16.0f;
    {name}_quantize_input(0, x, q);
    const int8_t *const inputs[] = {{q}};
    int8_t *const outputs[] = {{y}};
    const int rc = {name}_run_int8(inputs, outputs);
    for (int i = 0; i < {NAME}_OUTPUT_0_SIZE; i++) std::printf("%d\\n", y[i]);
    return rc;
}}
"""


def test_host_model_compiled_as_c_called_from_cpp_equals_the_reference(compiled, tmp_path):
    config = Config("host", "int8", "digits_cnn")
    src = compiled(config).src
    board = get_board(config.board)
    cc, cxx = compilers(board)
    (tmp_path / "main.cpp").write_text(CPP_CALLER.format(name=config.model, NAME=config.model.upper()))
    objects = tmp_path / "c"
    objects.mkdir()
    c_build = [cc, *machine_flags(board), "-std=c99", "-O2", f"-I{src}", f"-Wa,-I{src}", "-c", *map(str, sorted(p for p in src.glob("*.c") if p.name != "harness.c"))]
    cxx_build = [cxx, "-std=c++11", *WARNINGS, f"-I{src}", "-c", "main.cpp"]
    for step, cwd in ((c_build, objects), (cxx_build, tmp_path)):
        r = subprocess.run(step, cwd=cwd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]
    link = [cxx, "main.o", *map(str, sorted(objects.glob("*.o"))), "-lm", "-o", "main"]
    r = subprocess.run(link, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]  # C linkage: the C++ caller finds the C symbols
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = np.array([int(v) for v in run.stdout.split()], dtype=np.int8)
    model = EXAMPLES / f"{config.model}.onnx"
    req = CompileRequest(model=model, board=board, profile=get_profile(TARGETS[config.board][0]),
                         precision=config.precision, calib=str(src.parent.parent / f"{config.model}_calib.npy"))
    g = reference_graph(req)
    shape = g.tensors[g.inputs[0]].shape
    x = ((np.arange(int(np.prod(shape))) % 17) / 16).astype(np.float32).reshape(shape)
    want = run_quantized_model(g, {g.inputs[0]: x})[0][g.outputs[0]].reshape(-1)
    assert np.array_equal(got, want), kc.mismatch(got, want)
