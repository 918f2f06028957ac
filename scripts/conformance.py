"""ONNX backend node tests for the ops of the registry, fp32 on the `host` board.

    .venv/bin/python scripts/conformance.py            # writes docs/conformance.md
    .venv/bin/python scripts/conformance.py --check    # exit 1 when docs/conformance.md is stale

The cases are the `onnx` package's own (`onnx.backend.test.case.node`, generated in memory
with the package's fixed seed: its wheel does not ship the `data/node` files). A case is
in scope when every op of its model is in the op registry (`supported_ops()`), so ops that
other branches register are picked up without touching this file. In-scope cases whose
runtime input or outputs are of a type the SDK does not compute at run time (it computes
float32, int8, int16, int32, int64, uint8 and bool tensors), whose outputs are empty, that
train (a Dropout that drops at random, BatchNormalization with training_mode = 1) or that are
training losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss bodies) are listed as not
applicable with the reason; the others are compiled through the real pipeline
(`compiler.compile_into`, fp32, `host`, standard profile), built into a few shared
libraries (one gcc call per batch of cases, -O1: one SCons run per case would take
minutes), run through `cuvil_sdk.runtime` and compared with the expected outputs at the
case's own tolerances (the onnx backend's: rtol 1e-3, atol 1e-7).

Inputs after the first become constant initializers (the SDK compiles static weights,
shapes, axes and pads; the first input is the runtime input).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import io
import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen import sanitize
from cuvil_sdk.compiler import CompileRequest, compile_into, frontend_and_passes
from cuvil_sdk.errors import CuvilError
from cuvil_sdk.ops import supported_ops
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float
from cuvil_sdk import runtime

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "conformance.md"
BOARD, PROFILE = "host", "standard"
BATCH = 24  # cases per shared library
FLOAT = onnx.TensorProto.FLOAT
# the element types of tensors the SDK computes at run time (issue 30: integers and bool too)
RUNTIME_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
                 onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.BOOL}
TRAINING_LOSSES = ("test_nllloss", "test_sce")  # the losses' function bodies, when their ops are all registered


@dataclass
class Case:
    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    rtol: float
    atol: float
    status: str = ""  # pass | fail | n/a
    reason: str = ""
    ops: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=1)
def collect_cases() -> tuple[Case, ...]:
    """Every node case of the installed onnx package, in memory (seeded by the package; once
    per process: it runs every case's numpy reference)."""
    from onnx.backend.test.case import node as node_cases
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        cases = node_cases.collect_testcases(None)
    out = []
    for c in cases:
        if c.kind != "node" or not c.data_sets:
            continue
        inputs, outputs = ([np.asarray(a) if isinstance(a, np.generic) else a for a in part] for part in c.data_sets[0])
        out.append(Case(c.name, c.model, inputs, outputs, c.rtol, c.atol,
                        ops=sorted({n.op_type for n in c.model.graph.node})))
    return tuple(sorted(out, key=lambda c: c.name))


def in_scope(case: Case, ops: set[str]) -> bool:
    return all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in case.model.graph.node)


def elem_type(value_info: onnx.ValueInfoProto) -> int:
    return value_info.type.tensor_type.elem_type if value_info.type.HasField("tensor_type") else -1


def type_name(value_info: onnx.ValueInfoProto) -> str:
    t = elem_type(value_info)
    return onnx.TensorProto.DataType.Name(t).lower() if t >= 0 else value_info.type.WhichOneof("value")


def values_by_name(case: Case) -> dict[str, np.ndarray]:
    """The case's input values and the model's initializers, by tensor name."""
    g = case.model.graph
    values = {vi.name: np.asarray(a) for vi, a in zip(g.input, case.inputs) if isinstance(a, (np.ndarray, np.generic))}
    values.update({t.name: numpy_helper.to_array(t) for t in g.initializer})
    return values


def trains(case: Case) -> bool:
    """A node in training mode whose result an inference compiler cannot give: a Dropout with
    training_mode true and a ratio above 0 (its mask is random), a BatchNormalization with
    training_mode = 1 (batch statistics, running statistics updated). A Dropout whose ratio is 0
    keeps every value, and training_mode false is inference: those apply."""
    values = values_by_name(case)
    for node in case.model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "BatchNormalization" and attrs.get("training_mode", 0):
            return True
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            training = values.get(node.input[2])
            ratio = values.get(node.input[1]) if len(node.input) > 1 and node.input[1] else None
            if training is None or (bool(training) and (ratio is None or float(ratio) != 0.0)):
                return True
    return False


def not_applicable(case: Case) -> str:
    """The reason a case cannot apply to a static-graph inference compiler of float32, integer
    and bool tensors, or ''."""
    g = case.model.graph
    if case.name.startswith(TRAINING_LOSSES):
        return "training loss"
    if trains(case):
        return "training mode"
    if not g.input:
        return "no runtime input (the model is a constant)"
    if any(not isinstance(a, np.ndarray) for a in case.inputs + case.outputs):
        return "sequence or optional values"
    if elem_type(g.input[0]) not in RUNTIME_TYPES:
        return f"runtime input is {type_name(g.input[0])}, not a run-time type (float32, integers, bool)"
    for o in g.output:
        if elem_type(o) not in RUNTIME_TYPES:
            return f"output '{o.name}' is {type_name(o)}, not a run-time type (float32, integers, bool)"
    if any(a.size == 0 for a in case.outputs):
        return "empty output"
    return ""


def with_constant_inputs(case: Case) -> onnx.ModelProto:
    """The case's model with inputs after the first turned into initializers (IR version 3 and
    older want every initializer listed among the graph's inputs too: there they stay listed)."""
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    keep, consts = m.graph.input[0], list(zip(m.graph.input[1:], case.inputs[1:]))
    listed = [vi for vi, _ in consts] if m.ir_version < 4 else []
    del m.graph.input[:]
    m.graph.input.extend([keep, *listed])
    for vi, value in consts:
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(value), vi.name))
    return m


def first_line(text: str) -> str:
    line = next((l for l in str(text).splitlines() if l.strip()), "")
    return line.removeprefix("cuvil-sdk: error: ").strip()[:240]


def compile_case(case: Case, work: Path) -> Path | None:
    """Compile one case into work/<name>; returns the project folder, or None (case.reason set)."""
    folder = work / case.name
    folder.mkdir(parents=True)
    path = folder / "model.onnx"
    onnx.save(with_constant_inputs(case), str(path))
    req = CompileRequest(model=path, board=get_board(BOARD), profile=get_profile(PROFILE), precision="fp32",
                         name=case.name)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            compile_into(req, folder / "project")
    except CuvilError as exc:
        case.status, case.reason = "fail", first_line(str(exc))
        return None
    except Exception as exc:  # an SDK bug: reported as the case's failure, the others still run
        case.status, case.reason = "fail", f"internal error: {type(exc).__name__}: {first_line(str(exc))}"
        return None
    return folder / "project"


def gcc_command(projects: list[Path], lib: Path) -> list[str]:
    """One gcc call that builds every project's sources into one shared library: the board's
    flags at -O1 (every symbol is prefixed by the case's name and kernels are static)."""
    spec = json.loads((projects[0] / "build.json").read_text())
    tool = spec["toolchain"]
    flags = [f for f in tool["cflags"] if not f.startswith("-O") and f != "-Werror"] + ["-O1", "-w"]
    cmd = [tool["cc"], *flags, *tool["linkflags"], "-o", str(lib)]
    for p in projects:
        s = json.loads((p / "build.json").read_text())
        cmd += [f"-D{k}={v}" for k, v in s.get("defines", {}).items()]
        cmd += [f"-Wa,-I{p / 'src'}"]  # <name>_weights.c .incbin's the blob src/<name>.weights
        cmd += [str(p / src) for src in s["sources"] if not src.endswith("harness.c")]
    return cmd + ["-lm"]


def build(projects: list[Path], lib: Path) -> str:
    result = subprocess.run(gcc_command(projects, lib), capture_output=True, text=True)
    return "" if result.returncode == 0 else first_line(result.stderr or result.stdout)


def build_batches(batches: list[list[tuple[Case, Path]]], work: Path, jobs: int) -> list[tuple[list[Case], Path]]:
    """Build each batch into one library; a failed batch is rebuilt case by case to name the culprit."""
    def one(k: int, batch: list[tuple[Case, Path]]) -> list[tuple[list[Case], Path]]:
        lib = work / f"libbatch{k}.so"
        if not build([p for _, p in batch], lib):
            return [([c for c, _ in batch], lib)]
        built = []
        for j, (c, p) in enumerate(batch):
            single = work / f"libbatch{k}_{j}.so"
            error = build([p], single)
            if error:
                c.status, c.reason = "fail", f"C build failed: {error}"
            else:
                built.append(([c], single))
        return built
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda kb: one(*kb), enumerate(batches)))
    return [item for r in results for item in r]


def c_name(case_name: str) -> str:
    """The symbol prefix the SDK gives a model named `case_name` (long names are shortened)."""
    return sanitize.c_identifier(case_name)


def check_outputs(case: Case, lib: Path) -> None:
    try:
        with runtime.load(lib, name=c_name(case.name)) as model:
            got = model.run({model.input_names[0]: case.inputs[0]})
            got = [got[name] for name in model.output_names]
    except CuvilError as exc:
        case.status, case.reason = "fail", f"run: {first_line(str(exc))}"
        return
    compare_outputs(case, got)


def check_reference(case: Case, project: Path) -> None:
    """The case checked on the SDK's numpy float reference instead of its built C (the same
    compiled graph: frontend and passes; compile_case already compiled it)."""
    req = CompileRequest(model=project.parent / "model.onnx", board=get_board(BOARD), profile=get_profile(PROFILE),
                         precision="fp32", name=case.name)
    g = frontend_and_passes(req)
    with np.errstate(all="ignore"):
        values = run_float(g, {g.inputs[0]: case.inputs[0]})
    compare_outputs(case, [values[name] for name in g.outputs])


def compare_outputs(case: Case, got: list[np.ndarray]) -> None:
    """The case's status and reason from its outputs against the expected ones."""
    for vi, y, want in zip(case.model.graph.output, got, case.outputs):
        y = np.asarray(y)
        if y.size != want.size:
            case.status, case.reason = "fail", f"output '{vi.name}' has {y.size} values, expected {want.size}"
            return
        y = y.reshape(want.shape)
        if want.dtype.kind in "biu":  # integers and bool: the same type and every value exact
            if y.dtype != want.dtype or not np.array_equal(y, want):
                wrong = int(np.count_nonzero(y != want)) if y.dtype == want.dtype else y.size
                case.status, case.reason = "fail", (f"output '{vi.name}' ({y.dtype.name}) differs from the expected "
                                                    f"{want.dtype.name} values in {wrong} of {y.size} places")
                return
            continue
        if not np.allclose(y, want, rtol=case.rtol, atol=case.atol, equal_nan=True):
            err = np.abs(y.astype(np.float64) - want)
            case.status, case.reason = "fail", (f"output '{vi.name}' differs: max abs error {err.max():.3g} "
                                                f"(rtol {case.rtol:g}, atol {case.atol:g})")
            return
    case.status, case.reason = "pass", ""


# The ops registered for issue 30. A case with float32 input and outputs that uses one of them
# became applicable only because its function body's ops are all registered now (the expanded
# Attention cases, CastLike's and Mod's bodies): the test suite checks those on the numpy reference
# (`built_in_c`), which the kernel grids already cover; this script builds every case.
ISSUE30_OPS = {"CastLike", "Mod", "TopK", "GatherElements", "GatherND", "ScatterElements", "OneHot", "Xor"}


def built_in_c(case: Case) -> bool:
    """Whether the test suite builds and runs the case in C: it has an integer or bool input or
    output (issue 30's kernels), or it applied before issue 30 (float32, none of ISSUE30_OPS)."""
    g = case.model.graph
    types = {elem_type(vi) for vi in list(g.input[:1]) + list(g.output)}
    return types != {FLOAT} or not set(case.ops) & ISSUE30_OPS


def run_cases(cases: list[Case], jobs: int = 2, in_c=lambda case: True) -> list[Case]:
    """Classify, compile, build and run every case (results are written into the cases); the
    cases that `in_c` declines are checked on the numpy reference instead of their C."""
    work = Path(tempfile.mkdtemp(prefix="cuvil-conformance-"))
    try:
        compiled = []
        for case in cases:
            reason = not_applicable(case)
            if reason:
                case.status, case.reason = "n/a", reason
                continue
            project = compile_case(case, work)
            if project is None:
                continue
            if in_c(case):
                compiled.append((case, project))
            else:
                check_reference(case, project)
        batches = [compiled[i:i + BATCH] for i in range(0, len(compiled), BATCH)]
        for batch_cases, lib in build_batches(batches, work, jobs):
            for case in batch_cases:
                check_outputs(case, lib)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cases


def selected_cases() -> list[Case]:
    ops = set(supported_ops())
    return [c for c in collect_cases() if in_scope(c, ops)]


def summary(cases: list[Case]) -> dict[str, int]:
    count = {s: sum(c.status == s for c in cases) for s in ("pass", "fail", "n/a")}
    count["applicable"] = count["pass"] + count["fail"]
    return count


def render(cases: list[Case]) -> str:
    s = summary(cases)
    rate = 100.0 * s["pass"] / max(1, s["applicable"])
    lines = ["# ONNX backend node tests (fp32, `host` board)", "",
             "Generated by `scripts/conformance.py` (checked by tests/test_onnx_conformance.py); do not edit.", "",
             f"onnx {onnx.__version__}. The cases are those of the onnx package whose every op is in the op registry "
             "(SUPPORTED_OPS.md). Inputs after the first are compiled as constants; float outputs are compared at "
             "each case's tolerance (rtol 1e-3, atol 1e-7), integer and bool outputs exactly (type and values). "
             "A case applies when its runtime input and its outputs are float32, int8, int16, int32, int64, uint8 "
             "or bool tensors (not empty), it does not train and it is not a training loss.", "",
             f"**{s['pass']} of {s['applicable']} applicable cases pass ({rate:.1f}%)**; {s['fail']} fail; "
             f"{s['n/a']} are not applicable.", "",
             "| case | ops | result | reason |", "|---|---|---|---|"]
    for c in cases:
        reason = c.reason.replace("|", "\\|")
        lines.append(f"| {c.name} | {' '.join(c.ops)} | {c.status} | {reason} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when docs/conformance.md is not up to date")
    ap.add_argument("-k", dest="only", help="run only cases whose name contains this (prints, writes nothing)")
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    args = ap.parse_args(argv)
    cases = selected_cases()
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    run_cases(cases, args.jobs)
    text = render(cases)
    if args.only:
        for c in cases:
            print(f"{c.status:5} {c.name} {c.reason}")
        print(summary(cases))
        return 0
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print("docs/conformance.md is stale: run scripts/conformance.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(summary(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
