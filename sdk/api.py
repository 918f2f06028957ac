"""The Python API: `cuvil_sdk.build(model, board=..., ...)` does what `cuvil-sdk build` does,
without a subprocess, and returns a BuildResult (README, "Python API").

    import numpy as np, cuvil_sdk
    b = cuvil_sdk.build("model.onnx", board="host", profile="standard", calib=np.load("calib.npy"))
    b.artifacts["so"], b.report["arena_bytes"]
    y = b.run(x)                  # on the board's runner (native, QEMU): {output name: array}
    with b.load() as model:       # boards that run on this machine: the runtime model
        logits = model(x)

Options have the CLI's names with underscores for dashes (`calib_method`, `accuracy_target`,
`int16_layers`, `input_shape`, `threads`, `plugins`, `out_dir`, `jobs`, `input_layout`,
`weight_layout`, `weights`, `weights_region`, `arena_region`); they go through the same checks as the command line, so errors are the
SDK's exception types (sdk/errors.py) with the CLI's messages.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .errors import UsageError

OPTIONS = ("precision", "calib", "calib_method", "name", "accuracy_target", "int16_layers", "input_shape",
           "threads", "plugins", "out_dir", "jobs", "input_layout", "weight_layout", "weights", "weights_region",
           "arena_region")


@contextlib.contextmanager
def calib_file(calib: Any) -> Iterator[str | None]:
    """`calib` as the CLI takes it: a path or "random" as given; a numpy array (or a dict of
    arrays by input name) is written to a temporary .npy (.npz) for the build."""
    if calib is None or isinstance(calib, (str, Path)):
        yield None if calib is None else str(calib)
        return
    with tempfile.TemporaryDirectory(prefix="cuvil-calib-") as tmp:
        if isinstance(calib, dict):
            path = Path(tmp) / "calib.npz"
            np.savez(path, **{k: np.asarray(v) for k, v in calib.items()})
        else:
            path = Path(tmp) / "calib.npy"
            np.save(path, np.asarray(calib))
        yield str(path)


def input_shape_specs(value: Any) -> list[str] | None:
    """input_shape as "NAME=1x3x32x32", a list of those, or {name: (1, 3, 32, 32)}."""
    if value is None or isinstance(value, list):
        return value
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [f"{k}={'x'.join(str(int(d)) for d in v)}" for k, v in value.items()]
    raise UsageError(f"input_shape must be 'NAME=1x3x32x32', a list of those or a dict, not {type(value).__name__}")


def namespace(model: str | Path, board: str, profile: str | None, options: dict[str, Any], calib: str | None):
    """The options as the CLI's parsed arguments, defaults and checks included."""
    from .boards import get_board
    from .preflight import check_options
    from .project_file import check_required, with_defaults
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"build() got an unknown option '{unknown[0]}' (options: {', '.join(OPTIONS)})")
    int16 = options.get("int16_layers")
    plugins = options.get("plugins")
    args = argparse.Namespace(
        command="build", model=str(model), board=board,
        profile=profile or (list(get_board(board).profiles) or [None])[0],
        precision=options.get("precision"), calib=calib, calib_method=options.get("calib_method"),
        name=options.get("name"), accuracy_target=options.get("accuracy_target"),
        int16_layers=",".join(int16) if isinstance(int16, (list, tuple)) else int16,
        input_shape=input_shape_specs(options.get("input_shape")),
        plugin=[plugins] if isinstance(plugins, str) else list(plugins or []),
        threads=options.get("threads"), out_dir=str(options["out_dir"]) if options.get("out_dir") else None,
        jobs=options.get("jobs"), json=False, run=False, misplaced_output=None, config=None,
        input_layout=options.get("input_layout") or "nchw", weight_layout=options.get("weight_layout"),
        weights=options.get("weights"), weights_region=options.get("weights_region"),
        arena_region=options.get("arena_region"))
    with_defaults(args)
    check_required(args)
    check_options(args)
    return args


class BuildResult:
    """A built model: `artifacts` (kind -> path), `report` (what `build --json` prints), `info`
    (the full build information), `run(x)` and, for boards that run here, `load()`."""

    def __init__(self, request, info: dict) -> None:
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
        optional leading sample axis; returns {output name: array}, the samples stacked."""
        from .commands import input_graph, run_samples
        from .data import as_samples
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
        return {n: np.concatenate([s[n] for s in result["outputs"]], axis=0) for n in names}

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
    from .cli import out_dir_of
    from .commands import do_build, make_request
    with calib_file(options.pop("calib", None)) as calib:
        args = namespace(model, board, profile, options, calib)
        req = make_request(args)
        info = do_build(req, out_dir_of(args, req), args.jobs)
    return BuildResult(req, info)


__all__ = ["build", "BuildResult"]
