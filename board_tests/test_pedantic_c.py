"""The generated C is ISO C99 and ISO C++11 (issue 26, point 12): every .c that `compile`
writes (the model, its weights, the board's harness, the debug-dump and thread-pool builds'
extra files) compiles with `-std=c99 -Wall -Wextra -Wpedantic -Werror` and, as C++
(`-x c++ -std=c++11`), with the same flags, with the board's own compilers and only its
machine flags, for the host (avx2 + portable, with the x86 VNNI variants, and the portable
set alone), cortex-m7 (cortex_m_dsp + portable, and the portable set alone) and rpi5 (neon,
fp16 too). The C compile adds -Wvla: C99 has variable-length arrays, but C11 made them
optional and C++ has none, so a kernel's stack arrays are sized by the compiler.

-Wpedantic is front-end work, so each compile is -fsyntax-only; test_dropin_c.py compiles the
same sources to objects at every optimisation level. Every header under src/ must be read by
one of the compiles (-MMD), so no kernel header escapes the check. The models: the example
CNN (int8, fp32, fp16) and kernel_cases.py's grids, which put many op kinds into one model.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import int_cases
import kernel_cases as kc
import math_cases as mc
from cuvil_sdk.boards import Board, get_board
from cuvil_sdk.commands import do_compile
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest
from models import EXAMPLES

pytestmark = pytest.mark.slow

FLAGS = ("-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fsyntax-only")
STANDARDS = {"c99": ("-std=c99", "-Wvla"), "c++11": ("-x", "c++", "-std=c++11")}
FIRMWARE = {"cortex-m7", "cortex-m7-portable"}


@dataclass(frozen=True)
class Config:
    board: str
    precision: str
    model: str  # an example model's stem, or "grid:<name>" for a kernel_cases grid below
    options: tuple[tuple[str, object], ...] = field(default=())  # CompileRequest fields

    @property
    def key(self) -> str:
        extra = "".join(f"-{k}{v}" for k, v in self.options)
        return f"{self.board}-{self.precision}-{self.model.replace(':', '_')}{extra}"


# The kernel grids with the most op kinds per build: "ops" (convolutions of every kind, GEMM,
# element-wise, pooling, concat, pad, transpose, activations, softmax, LSTM/GRU), the float grid
# and the math/normalisation grid.
GRIDS = {"ops": (kc.M7_GROUPS["ops"], kc.OPSET), "fp32": (kc.FP32_CASES, kc.OPSET),
         "encoder": (mc.M7_CASES, mc.OPSET), "conv": (kc.HOST_GROUPS["conv"], kc.OPSET),
         "move_act": (kc.HOST_GROUPS["move_act"], kc.OPSET)}

CONFIGS = [
    Config("host", "int8", "digits_cnn"), Config("host", "fp32", "digits_cnn"),
    Config("host", "int8", "digits_cnn", (("threads", 2),)), Config("host", "int8", "digits_cnn", (("debug_dump", True),)),
    Config("host", "int8", "grid:ops"), Config("host", "int8", "grid:conv"), Config("host", "int8", "grid:move_act"),
    Config("host", "int8", "grid:encoder"), Config("host", "fp32", "grid:fp32"),
    Config("host-portable", "int8", "grid:ops"), Config("host-portable", "fp32", "grid:fp32"),
    Config("cortex-m7", "int8", "digits_cnn"), Config("cortex-m7", "int8", "grid:ops"),
    Config("cortex-m7", "int8", "grid:encoder"), Config("cortex-m7-portable", "int8", "grid:ops"),
    Config("rpi5", "int8", "digits_cnn"), Config("rpi5", "fp16", "digits_cnn"), Config("rpi5", "int8", "grid:ops"),
    Config("rpi5", "int8", "grid:conv"), Config("rpi5", "fp32", "grid:fp32"), Config("rpi5", "fp16", "grid:fp32"),
    # integer and bool tensors (int_cases.py): the casts, comparisons, gathers, integer arithmetic; int8 builds
    # add the tables, the quantizing casts and the sets' ArgMax
    Config("host", "fp32", "ints:int_ops"), Config("cortex-m7", "int8", "ints:int_ops"),
    Config("rpi5", "int8", "ints:int_ops"),
]


def compilers(board: Board) -> tuple[str, str]:
    """The board's C compiler and the C++ driver of the same GCC toolchain."""
    cc = board.get("toolchain.cc") or board.get("toolchain.prefix", "") + "gcc"
    return cc, re.sub(r"gcc$", "g++", cc)


def machine_flags(board: Board) -> list[str]:
    """Only what selects the CPU (-mcpu, -mfpu, -mthumb, -mfloat-abi, -mavx2, -mfma, ...)."""
    flags = list(board.get("toolchain.cpu_flags", [])) + list(board.get("toolchain.cflags", []))
    return list(dict.fromkeys(f for f in flags if f.startswith("-m")))


def model_and_calib(config: Config, folder: Path) -> tuple[Path, str | None]:
    if config.model.startswith("ints:"):
        np.savez(folder / "calib.npz", **{k: v for k, v in int_cases.samples(8, seed=1).items()})
        return int_cases.save(folder), str(folder / "calib.npz") if config.precision == "int8" else None
    if not config.model.startswith("grid:"):
        calib = str(EXAMPLES / "digits_calib.npy") if config.precision == "int8" else None
        return EXAMPLES / f"{config.model}.onnx", calib
    name = config.model.split(":", 1)[1]
    ids, opset = GRIDS[name]
    net = kc.save_net(kc.make_net(f"grid_{name}", ids, opset), folder)
    return net.path, str(net.calib) if config.precision == "int8" else None


def generate(config: Config, folder: Path) -> Path:
    """`compile` the config's model into folder/out; returns its src folder."""
    model, calib = model_and_calib(config, folder)
    profile = "lite" if config.board in FIRMWARE else "standard"
    req = CompileRequest(model=model, board=get_board(config.board), profile=get_profile(profile),
                         precision=config.precision, calib=calib, **dict(config.options))
    do_compile(req, folder / "out")
    return folder / "out" / "src"


@dataclass
class Compiled:
    src: Path
    runs: dict[str, list[subprocess.CompletedProcess]]  # standard -> one run per .c
    read: set[Path]  # every file of src/ a compile read (from the -MMD dependency files)


def compile_all(sources: list[Path], board: Board, includes: list[str], deps: Path) -> dict:
    """standard -> one run per source (C and C++ compiles of every source, in parallel)."""
    cc, cxx = compilers(board)
    jobs = [(std, [cxx if std.startswith("c++") else cc, *machine_flags(board), *STANDARDS[std], *FLAGS,
                   *includes, "-MMD", "-MF", str(deps / f"{c.name}.{std}.d"), str(c)])
            for std in STANDARDS for c in sources]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: subprocess.run(job[1], capture_output=True, text=True, timeout=300), jobs))
    runs: dict[str, list[subprocess.CompletedProcess]] = {std: [] for std in STANDARDS}
    for (std, _), result in zip(jobs, results):
        runs[std].append(result)
    return runs


def files_read(deps: Path) -> set[Path]:
    return {Path(p).resolve() for d in deps.glob("*.d") for p in d.read_text().replace("\\\n", " ").split()[1:]}


def check_sources(src: Path, board: Board, deps: Path) -> Compiled:
    for tool in compilers(board):
        assert shutil.which(tool), f"'{tool}' not found: run scripts/setup.sh (these tests never skip)"
    # harness.c includes the board's own headers (semihost.h, uart.h), which sit in its folder
    includes = [f"-I{src}", f"-I{board.family_dir}"]
    deps.mkdir(parents=True)
    sources = sorted(src.glob("*.c"))
    assert sources, f"no C sources in {src}"
    runs = compile_all(sources, board, includes, deps)
    # a set's shared helper headers are copied with any of its kernels; one that none of this
    # model's kernels includes is compiled on its own, after the common headers it relies on
    unread = sorted(p for p in src.rglob("*.h") if p.resolve() not in files_read(deps))
    commons = ["cuvil_common.h", *(f"kernels/{p.name}" for p in sorted((src / "kernels").glob("cuvil_*_common.h")))]
    wrappers = []
    for header in unread:
        wrapper = deps / f"{header.stem}_alone.c"
        lines = [*commons, header.relative_to(src).as_posix()]
        wrapper.write_text("".join(f'#include "{line}"\n' for line in dict.fromkeys(lines)))
        wrappers.append(wrapper)
    if wrappers:
        for std, more in compile_all(wrappers, board, includes, deps).items():
            runs[std] += more
    return Compiled(src, runs, files_read(deps))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    def make(config: Config) -> Compiled:
        folder = tmp_path_factory.mktemp(config.key)
        src = generate(config, folder)
        return check_sources(src, get_board(config.board), folder / "deps")
    return kc.Lazy(make)


def first_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[:count])


PARAMS = [pytest.param(c, std, id=f"{c.key}-{std}") for c in CONFIGS for std in STANDARDS]


@pytest.mark.parametrize("config,std", PARAMS)
def test_generated_c_is_pedantic_clean(compiled, config, std):
    project = compiled(config)
    for result in project.runs[std]:
        assert result.returncode == 0 and not result.stderr.strip(), (
            f"{config.key} {std}: {result.args[-1]}\n{first_lines(result.stderr)}")


@pytest.mark.parametrize("config", CONFIGS, ids=[c.key for c in CONFIGS])
def test_every_generated_header_is_compiled(compiled, config):
    """The headers reach the compiler through the .c files: none is left out of the check."""
    project = compiled(config)
    headers = {p.resolve() for p in project.src.rglob("*.h")}
    assert headers and headers <= project.read, f"{config.key}: not compiled: {sorted(headers - project.read)}"


def test_fp16_type_only_in_fp16_builds(compiled):
    """`_Float16` is not ISO C: an int8 or fp32 build's common header names neither it nor
    cuvil_f16; an fp16 build's defines cuvil_f16 (aarch64: ACLE's __fp16)."""
    for config in CONFIGS:
        common = (compiled(config).src / "cuvil_common.h").read_text()
        half = config.precision == "fp16"
        assert ("typedef __fp16 cuvil_f16;" in common) == half, config.key
        assert ("_Float16" in common) == half, config.key
