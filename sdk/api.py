"""The Python API: `cuvil_sdk.build(model, board=..., ...)` does what `cuvil-sdk build` does,
without a subprocess, and returns a BuildResult (README, "Python API").

    import numpy as np, cuvil_sdk
    b = cuvil_sdk.build("model.onnx", board="host", profile="standard", calib=np.load("calib.npy"))
    b.artifacts["so"], b.report["arena_bytes"]
    y = b.run(x)                  # on the board's runner (native, QEMU): {output name: array}
    with b.load() as model:       # boards that run on this machine: the runtime model
        logits = model(x)

Options have the CLI's names with underscores for dashes (`calib_method`, `accuracy_target`,
`int16_layers`, `weight_bits`, `int4_layers`, `input_shape`, `input_value`, `input_precision`, `threads`, `plugins`, `out_dir`, `jobs`, `input_layout`,
`weight_layout`, `weights`, `weights_region`, `arena_region`); they go through the same checks as the command line, so errors are the
SDK's exception types (sdk/errors.py) with the CLI's messages.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .build_info import BuildInfo
from .errors import UsageError
from .preflight import check_request
from .request import OPTIONS, CompileRequest, new_request


class BuildResult:
    """A built model: `artifacts` (kind -> path), `report` (what `build --json` prints), `info`
    (the full build information), `run(x)` and, for boards that run here, `load()`."""

    def __init__(self, request: CompileRequest, info: BuildInfo) -> None:
        from .commands import summary_of_build
        self.request = request
        self.info = info
        self.report = summary_of_build(info)
        self.artifacts: dict[str, str] = dict(info.get("artifacts", {}))

    @property
    def board(self):
        return self.request.board

    def __repr__(self) -> str:
        return f"<BuildResult {self.info['name']} for {self.board.name} ({self.info['precision']}): {self.artifacts}>"

    def run(self, x: Any) -> dict[str, np.ndarray]:
        """Run samples on the board's runner (natively for host, under QEMU otherwise), like
        `cuvil-sdk run`: `x` is an array (single-input model) or {input name: array}, with an
        optional leading sample axis; returns {output name: array}, each (N, *output shape): the
        samples stacked (data.stack_samples), as `run` writes them."""
        from .commands import run_samples
        from .compiler import input_graph
        from .data import as_samples, stack_samples
        from .preflight import check_runnable
        check_runnable(self.board, "run")
        g = input_graph(self.request)
        arrays = dict(x) if isinstance(x, dict) else {g.inputs[0]: x}
        if not isinstance(x, dict) and len(g.inputs) != 1:
            raise UsageError(f"the model has {len(g.inputs)} inputs: pass {{input name: array}}")
        missing = [n for n in g.inputs if n not in arrays]
        if missing:
            raise UsageError(f"no array for input '{missing[0]}' (inputs: {', '.join(g.inputs)})")
        samples = as_samples(g, {n: arrays[n] for n in g.inputs}, "input data")
        result = run_samples(self.board, self.info, samples, sys.stderr.isatty())
        names = [t["name"] for t in self.info["outputs"]]
        return stack_samples(names, result["outputs"])

    def load(self):
        """The runtime model (cuvil_sdk.runtime) of a shared library built for this machine."""
        from .preflight import runs_natively
        from .runtime import load
        if not runs_natively(self.board) or "so" not in self.artifacts:
            raise UsageError(f"board '{self.board.name}' builds {self.board.kind.replace('_', ' ')}s that do not load "
                             f"on this machine: use .run(x), which runs them where the board runs")
        return load(self.artifacts["so"])


def build(model: str | Path, *, board: str, profile: str | None = None, **options: Any) -> BuildResult:
    """Compile and build `model` for `board` (profile: the board's first by default), as
    `cuvil-sdk build` does; options as on the CLI, underscores for dashes. `calib` may be a
    path, "random", a numpy array or {input name: array}. Raises the SDK's errors
    (sdk/errors.py: UsageError, ModelError, BudgetError, ToolError, ...) with the CLI's messages."""
    from .commands import do_build
    req = new_request(model, board=board, profile=profile, progress=sys.stderr.isatty(), **options)
    check_request(req)
    return BuildResult(req, do_build(req, req.output_folder(), req.jobs))


class CompiledModel:
    """What `cuvil_sdk.compile` returns: call it with an array (one-input model) or {input name:
    array}, an optional leading sample axis, and it runs the built artifact where the board runs
    (natively for host boards, under QEMU otherwise), as `cuvil-sdk run` does: {output name: array}.
    `build` is the BuildResult (artifacts, report, load())."""

    def __init__(self, build: BuildResult) -> None:
        self.build = build

    def __call__(self, x: Any) -> dict[str, np.ndarray]:
        return self.build.run(x)

    def __repr__(self) -> str:
        return f"<CompiledModel {self.build.info['name']} for {self.build.board.name}>"


def is_torch_module(model: Any) -> bool:
    """A torch.nn.Module, known by its class's ancestry (so torch is imported only to export it)."""
    return any(c.__name__ == "Module" and c.__module__.startswith("torch.nn") for c in type(model).__mro__)


def torch_export(module: Any, example_inputs: Any, folder: Path) -> Path:
    """The module as ONNX, written by torch.onnx.export (weights may go to a file beside it)."""
    try:
        import torch
    except ImportError:
        raise UsageError("compiling a torch.nn.Module needs PyTorch: pip install torch onnxscript (or pass an "
                         "ONNX file or an onnx.ModelProto)") from None
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    args = tuple(a if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a)) for a in args)
    path = folder / f"{type(module).__name__.lower()}.onnx"
    try:
        torch.onnx.export(module.eval(), args, str(path))
    except ModuleNotFoundError as exc:  # the exporter's own dependencies (onnxscript)
        raise UsageError(f"torch.onnx.export needs the package '{exc.name}': pip install {exc.name}") from None
    return path


def model_file(model: Any, example_inputs: Any, folder: Path) -> Path:
    """`model` as an ONNX file: a path as it is; an onnx.ModelProto or a torch.nn.Module written
    into `folder`."""
    if isinstance(model, (str, Path)):
        return Path(model)
    import onnx
    if isinstance(model, onnx.ModelProto):
        path = folder / "model.onnx"
        onnx.save(model, str(path))
        return path
    if is_torch_module(model):
        return torch_export(model, example_inputs, folder)
    raise UsageError(f"model must be an ONNX file path, an onnx.ModelProto or a torch.nn.Module, "
                     f"not {type(model).__name__}")


def as_arrays(example_inputs: Any) -> Any:
    """Example inputs as numpy (torch tensors and tuples of them included): the calibration samples."""
    def array(a: Any) -> np.ndarray:
        return np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a)
    if isinstance(example_inputs, dict):
        return {k: array(v) for k, v in example_inputs.items()}
    if isinstance(example_inputs, tuple) and len(example_inputs) == 1:
        return array(example_inputs[0])
    if isinstance(example_inputs, tuple):
        raise UsageError("several example inputs: pass {input name: array} (the model's input names)")
    return array(example_inputs)


def compile(model: Any, example_inputs: Any, *, board: str, profile: str | None = None,
            **options: Any) -> CompiledModel:
    """Compile and build `model` (an ONNX path, an onnx.ModelProto, or a torch.nn.Module, exported
    with torch.onnx.export on `example_inputs` when torch is installed) for `board`, and return
    a callable that runs it there. `example_inputs` (an array, a tuple of one, or {input name:
    array}) are the calibration samples of an int8 build of a float model unless `calib=` is
    given: pass many real samples for representative scales. Other options as for build()."""
    with tempfile.TemporaryDirectory(prefix="cuvil-model-") as tmp:
        path = model_file(model, example_inputs, Path(tmp))
        options.setdefault("calib", as_arrays(example_inputs))
        result = build(path, board=board, profile=profile, **options)
        if path.parent == Path(tmp):  # the model goes with its build: running it reads its inputs' shapes
            kept = Path(result.info["out_dir"]) / "model"
            kept.mkdir(exist_ok=True)
            for file in Path(tmp).iterdir():
                shutil.move(str(file), kept / file.name)
            result.request.model = kept / path.name
    return CompiledModel(result)


__all__ = ["build", "compile", "BuildResult", "CompiledModel", "OPTIONS"]
