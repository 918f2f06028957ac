"""The typed request at the core: everything one model's build needs, in one dataclass.

`cuvil_sdk.build(...)` and `cuvil_sdk.compile(...)` (sdk/api.py) make it with `new_request`;
the command line and cuvil.toml make it with the same function from their merged options
(sdk/commands.make_request). sdk/preflight.check_request is the one check of a request before
any model is read. Nothing here knows about argparse.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np

from .boards import Board, get_board
from .errors import UsageError
from .profiles import Profile, get_profile

# calib: a file, "random", or samples in memory (one array for a one-input model, or by input name)
Calib = Union[str, np.ndarray, dict[str, np.ndarray], None]

# The options a request takes by keyword, with the CLI's names (underscores for dashes).
OPTIONS = ("precision", "calib", "calib_method", "name", "accuracy_target", "accuracy_time", "range_split",
           "int16_layers", "weight_bits", "int4_layers", "input_shape", "input_value", "input_precision",
           "threads", "plugins", "out_dir", "jobs", "input_layout", "weight_layout", "weights", "weights_region",
           "arena_region", "arena_budget")


@dataclass
class CompileRequest:
    model: Path
    board: Board
    profile: Profile
    precision: str | None = None
    calib: Calib = None
    calib_method: str = "minmax"
    name: str | None = None
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # --input-value: scalar inputs pinned to a constant (control flow on them folds; frontend/control_flow.py)
    input_values: dict[str, float | int | bool] = field(default_factory=dict)
    progress: bool = False
    verbose: bool = False  # --verbose: every layer on a slower kernel named one line each
    threads: int = 1  # standard profile, Linux boards: large layers split over this many threads
    accuracy_target: float | None = None  # minimum cosine vs float: keep worst layers in higher precision
    # quant/range_split.py: an output joined from ranges more than this factor apart keeps per-input
    # scales (--range-split-factor; 0 or --no-range-split: one scale, the old way)
    range_split: float = 8.0
    accuracy_time: float = 600.0  # --accuracy-time: --accuracy-target's search stops here with its best
    int16_layers: list[str] = field(default_factory=list)  # 16x8 layers named by the user
    weight_bits: str | None = None  # --weight-bits 8|4|auto (int8 builds); None: 8, or --int4-layers
    int4_layers: list[str] = field(default_factory=list)  # layers with int4 weights named by the user
    # --input-precision NAME=float|int16: inputs (audio, recurrent state) kept out of int8 with their first layers
    input_precision: dict[str, str] = field(default_factory=dict)
    debug_dump: bool = False  # a debug build that hands every layer's output to <name>_debug_dump
    plugins: list[str] = field(default_factory=list)  # plugin files or modules (sdk/plugins.py)
    weight_layout: str | None = None  # --weight-layout; None: the board's `weight_layout` (default "int8")
    input_layout: str = "nchw"  # --input-layout nhwc: 4-D inputs take channels-last data (no transpose on the device)
    weights: str | None = None  # --weights linked|region|file (codegen/weights_blob.py); None: linked
    weights_region: str | None = None  # --weights-region; None: the board's memory.weights_region
    arena_region: str | None = None  # --arena-region: a board memory region for the arena; None: its RAM
    arena_budget: int | None = None  # --arena-budget BYTES: the largest arena; row bands if needed (planner/budget.py)
    weights_file: str | None = None  # run/validate --weights-file: the weights file the run loads (--weights file)
    out_dir: Path | None = None  # -o; None: cuvil-build/<model>-<board>-<profile> in the working folder
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)  # parallel compile jobs of the build

    def output_folder(self) -> Path:
        return self.out_dir or default_out_dir(self.model.stem, self.board.name, self.profile.name)


def default_out_dir(stem: str, board: str, profile: str) -> Path:
    """-o's default: cuvil-build/<model or image>-<board>-<profile> in the working folder."""
    return Path.cwd() / "cuvil-build" / f"{stem}-{board}-{profile}"


def name_value_specs(value: Any, option: str, example: str, write_value=str) -> list[str]:
    """An option of NAME=VALUE specs as the CLI, the API and cuvil.toml give it: one "NAME=VALUE", a
    list of those, or {name: value} (write_value writes a value as the command line would)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [f"{k}={write_value(v)}" for k, v in value.items()]
    raise UsageError(f"{option} must be '{example}', a list of those or a dict, not {type(value).__name__}")


def input_shape_specs(value: Any) -> list[str]:
    """input_shape as "NAME=1x3x32x32", a list of those, or {name: (1, 3, 32, 32)}."""
    return name_value_specs(value, "input_shape", "NAME=1x3x32x32", lambda dims: "x".join(str(int(d)) for d in dims))


def input_value_specs(value: Any) -> list[str]:
    """input_value as "NAME=VALUE", a list of those, or {name: value}; a bool as true or false."""
    return name_value_specs(value, "input_value", "NAME=VALUE", lambda v: str(v).lower() if isinstance(v, bool) else v)


INPUT_PRECISIONS = ("float", "int16")


def input_precision_option(value: Any) -> dict[str, str]:
    """--input-precision as "NAME=float", a list of those, or {name: "float" | "int16"} (the API,
    cuvil.toml) -> {name: precision}; anything else is a UsageError naming the option."""
    chosen = {}
    for spec in name_value_specs(value, "input_precision", "NAME=float"):
        name, _, precision = spec.rpartition("=")
        if not name or precision.strip().lower() not in INPUT_PRECISIONS:
            raise UsageError(f"--input-precision '{spec}' must look like NAME=float or NAME=int16")
        chosen[name] = precision.strip().lower()
    return chosen


def name_list(value: Any) -> list[str]:
    """A comma list ("conv1,conv2", as --int16-layers takes it) or a list of names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [n for n in value.split(",") if n]
    return [str(n) for n in value]


def byte_count(value: Any, option: str) -> int | None:
    """A positive number of bytes, or None; anything else is a UsageError naming the option."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise UsageError(f"{option} {value!r}: expected a positive number of bytes")
    return int(value)


def weight_bits_option(value: Any) -> str | None:
    """--weight-bits as the request keeps it: "8", "4" or "auto" (the API and cuvil.toml may give
    the numbers as integers); None when not given."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if isinstance(value, bool) or text not in ("8", "4", "auto"):
        raise UsageError(f"weight bits {value!r}: expected 4, 8 or auto")
    return text


def seconds_option(value: Any, otherwise: float, option: str) -> float:
    """A positive number of seconds, or `otherwise` when not given."""
    if value is None:
        return otherwise
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not np.isfinite(value) or value <= 0:
        raise UsageError(f"{option} {value!r}: expected a positive number of seconds")
    return float(value)


def range_split_option(value: Any) -> float:
    """--range-split FACTOR: 0 (off) or above 1; default 8 (quant/range_split.py)."""
    if value is None:
        return 8.0
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not (value == 0 or value > 1) or not np.isfinite(value):
        raise UsageError(f"--range-split {value!r}: expected a factor above 1, or 0 to turn the rule off")
    return float(value)


def default(value: Any, otherwise: Any) -> Any:
    return otherwise if value is None else value


def new_request(model: str | Path, *, board: str, profile: str | None = None, progress: bool = False,
                debug_dump: bool = False, weights_file: str | None = None, verbose: bool = False,
                **options: Any) -> CompileRequest:
    """The request for `model` on `board` (profile: the board's first by default), options by
    keyword with the CLI's names; an unknown option is a UsageError. The values are checked where
    the pipeline uses them (precision, placement, calibration method, layouts), with the same
    messages for every front-end. Plugins load here, before anything reads the model."""
    from .frontend import parse_input_shapes
    from .frontend.control_flow import parse_input_values
    from .plugins import load_plugins
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"build() got an unknown option '{unknown[0]}' (options: {', '.join(OPTIONS)})")
    plugins = options.get("plugins")
    plugins = [plugins] if isinstance(plugins, str) else list(plugins or [])
    load_plugins(plugins)
    the_board = get_board(board)
    the_profile = get_profile(profile or (list(the_board.profiles) or [""])[0])
    model = Path(model)
    calib = options.get("calib")
    calib = str(calib) if isinstance(calib, Path) else calib
    if isinstance(calib, str) and calib != "random":
        from .data import require_file
        require_file(Path(calib), "--calib")
    out_dir = options.get("out_dir")
    return CompileRequest(
        model=model.resolve() if model.exists() else model, board=the_board, profile=the_profile,
        precision=options.get("precision"), calib=calib, calib_method=options.get("calib_method") or "minmax",
        name=options.get("name"), input_shapes=parse_input_shapes(input_shape_specs(options.get("input_shape"))),
        input_values=parse_input_values(input_value_specs(options.get("input_value"))),
        progress=progress, verbose=verbose, threads=default(options.get("threads"), 1),
        accuracy_target=options.get("accuracy_target"),
        range_split=range_split_option(options.get("range_split")),
        accuracy_time=seconds_option(options.get("accuracy_time"), 600.0, "--accuracy-time"),
        int16_layers=name_list(options.get("int16_layers")), weight_bits=weight_bits_option(options.get("weight_bits")),
        int4_layers=name_list(options.get("int4_layers")), debug_dump=debug_dump, plugins=plugins,
        input_precision=input_precision_option(options.get("input_precision")),
        weight_layout=options.get("weight_layout"), input_layout=options.get("input_layout") or "nchw",
        weights=options.get("weights"), weights_region=options.get("weights_region"),
        arena_region=options.get("arena_region"), arena_budget=byte_count(options.get("arena_budget"), "--arena-budget"), weights_file=weights_file,
        out_dir=Path(out_dir) if out_dir else None, jobs=default(options.get("jobs"), os.cpu_count() or 1))


__all__ = ["CompileRequest", "new_request", "OPTIONS"]
