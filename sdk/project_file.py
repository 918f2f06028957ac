"""The project file, `cuvil.toml` (README, "Project file"): the options of `build`, `run` and
`validate` kept under version control.

Every key has the name of a command-line option (`calib-method` for `--calib-method`,
`plugins` for the repeatable `--plugin`). Top-level keys are defaults; each `[[models]]` table
describes one model and may set any per-model key. Paths are relative to the file. Options
given on the command line override the file. An unknown key or a value of the wrong type is
a UsageError (exit 2) naming the key and its line.

This module only reads the file and merges it with the parsed command line into one
argparse namespace per model; what the options mean is decided where the CLI decides it.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import UsageError

PROJECT_FILE = "cuvil.toml"
PROJECT_COMMANDS = ("build", "run", "validate")


@dataclass(frozen=True)
class Key:
    """One key of the project file: its option's argparse dest, what type it takes, and where."""

    name: str
    dest: str
    kind: str  # "string", "word" (a string or an integer, kept as a string), "number", "integer", "boolean",
    # "strings" (a list; a string is one item), "list" (a
    # comma list as a string or a list of strings, kept as the option's comma string)
    path: bool = False  # a file, relative to the project file
    project_only: bool = False  # not in [[models]]: one value for the whole project
    commands: tuple[str, ...] = PROJECT_COMMANDS
    default: Any = None  # the option's default when neither the command line nor the file sets it
    help: str = ""


# The key table. Later options (weight and arena placement, ...) add a row here and an option in cli.py.
KEYS: dict[str, Key] = {k.name: k for k in (
    Key("model", "model", "string", path=True, help="the ONNX model"),
    Key("board", "board", "string", help="where it runs (cuvil-sdk boards)"),
    Key("profile", "profile", "string", help="what it may contain (cuvil-sdk profiles)"),
    Key("precision", "precision", "string", help="int8, fp16 or fp32 (default: the profile's)"),
    Key("calib", "calib", "string", path=True, help="calibration samples (.npy/.npz), or \"random\""),
    Key("calib-method", "calib_method", "string", default="minmax", help="minmax, percentile or mse"),
    Key("name", "name", "string", help="C symbol prefix (default: the model file's name)"),
    Key("accuracy-target", "accuracy_target", "number", help="cosine to reach with some layers in higher precision"),
    Key("accuracy-time", "accuracy_time", "number", help="--accuracy-target's time bound in seconds (default 600)"),
    Key("range-split", "range_split", "number", help="int8: keep per-input scales of an output's Concat "
        "whose ranges differ more than this factor (default 8; 0: off)"),
    Key("int16-layers", "int16_layers", "list", help="layers built as 16x8"),
    Key("weight-bits", "weight_bits", "word", help="int8 builds: 8 (default), 4 or auto: the bits of the weights"),
    Key("int4-layers", "int4_layers", "list", help="layers with int4 weights (the others int8)"),
    Key("input-shape", "input_shape", "strings", help="fix dynamic inputs: [\"x=1x3x32x32\"]"),
    Key("input-value", "input_value", "strings", help="pin scalar inputs: [\"sr=16000\"]"),
    Key("input-precision", "input_precision", "strings",
        help="inputs kept out of int8: [\"audio=float\", \"h=int16\"]"),
    Key("threads", "threads", "integer", default=1, help="standard profile, Linux boards: threads per call"),
    Key("input-layout", "input_layout", "string", default="nchw", help="nchw, or nhwc: channels-last input data"),
    Key("weight-layout", "weight_layout", "string", help="cortex-m7: int8 (default) or int16 weights in flash"),
    Key("weights", "weights", "string", help="linked (default), region or file: where the weight blob goes"),
    Key("weights-region", "weights_region", "string", help="with weights = \"region\": the board memory region"),
    Key("arena-region", "arena_region", "string", help="firmware: the board memory region of the arena"),
    Key("arena-budget", "arena_budget", "integer", help="the largest arena in bytes: row bands of the first layers "
        "if needed"),
    Key("plugins", "plugin", "strings", help="custom-op plugin files (relative to this file) or modules"),
    Key("input", "input", "string", path=True, commands=("run",), help="run: input samples"),
    Key("output", "output", "string", path=True, commands=("run",), help="run: the outputs file to write"),
    Key("data", "data", "string", path=True, commands=("validate",), help="validate: inputs x and labels y"),
    Key("per-layer", "per_layer", "boolean", commands=("validate",), default=False,
        help="validate: compare every layer too"),
    Key("port", "port", "string", project_only=True, commands=("run", "validate"),
        help="run/validate on the board at this serial port (device or pyserial URL)"),
    Key("flash-port", "flash_port", "string", project_only=True, commands=("run", "validate"),
        help="the board's ROM bootloader port, where it is not `port`"),
    Key("place", "place", "strings", project_only=True, commands=("run", "validate"),
        help="run/validate on the boards of these labgrid places"),
    Key("coordinator", "coordinator", "string", project_only=True, commands=("run", "validate"),
        help="the labgrid coordinator HOST:PORT"),
    Key("out-dir", "out_dir", "string", path=True, project_only=True, help="output folder"),
    Key("jobs", "jobs", "integer", project_only=True, default=os.cpu_count() or 1, help="parallel compile jobs"),
    Key("image", "image", "string", project_only=True, default="firmware",
        help="several models on one firmware board: the image's name (build/<image>.elf)"),
    Key("shared-arena", "shared_arena", "boolean", project_only=True, default=True,
        help="several models in one image: one arena (the largest model's) for models that run one at a "
             "time; false keeps an arena per model, for models that run concurrently"),
)}
MODELS = "models"
KIND_TEXT = {"string": "a string", "number": "a number", "integer": "an integer", "boolean": "true or false",
             "word": "a string or an integer",
             "strings": "a string or a list of strings", "list": "a string or a list of strings"}
TOML_TYPE = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "a list",
             dict: "a table"}


@dataclass
class Project:
    path: Path
    top: dict[str, Any]  # dest -> value (paths already resolved)
    models: list[dict[str, Any]] = field(default_factory=list)  # one dest -> value dict per [[models]] table

    @property
    def folder(self) -> Path:
        return self.path.parent


def key_lines(text: str) -> dict[tuple[int, str], int]:
    """{(table, key): line}: table -1 is the top level, k the k-th [[models]] table (or any other
    table header, counted the same way). tomllib gives no line numbers; keys are on `key =` lines."""
    lines: dict[tuple[int, str], int] = {}
    table = -1
    key_re = re.compile(r'^\s*(?:"([^"]*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*=')
    header_re = re.compile(r'^\s*\[\[?\s*"?([^\]"]+?)"?\s*\]\]?')
    for number, line in enumerate(text.splitlines(), 1):
        m = header_re.match(line)
        if m:
            name = m.group(1).strip()
            if line.lstrip().startswith("[[") and name == MODELS:
                table += 1
                lines.setdefault((table, "[[models]]"), number)
            else:
                lines.setdefault((-1, name.split(".")[0]), number)
                table = -2  # keys inside another table: not ours, the table itself is reported
            continue
        m = key_re.match(line)
        if m:
            lines.setdefault((table, next(g for g in m.groups() if g is not None)), number)
    return lines


class Reader:
    """Checks one parsed file, key by key, with line numbers for its messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)

    def where(self, table: int, key: str) -> str:
        line = self.lines.get((table, key))
        place = f"{self.path.name} line {line}" if line else self.path.name
        return place + ("" if table < 0 else f" ([[models]] #{table + 1})")

    def unknown(self, table: int, key: str) -> UsageError:
        known = [k for k, v in KEYS.items() if table < 0 or not v.project_only] + ([MODELS] if table < 0 else [])
        hint = difflib.get_close_matches(key, known, n=1)
        also = f"; did you mean '{hint[0]}'?" if hint else f" (keys: {', '.join(known)})"
        if table >= 0 and key in KEYS:
            return UsageError(f"{self.where(table, key)}: key '{key}' applies to the whole project: "
                              f"set it at the top of the file, not in [[models]]")
        return UsageError(f"{self.where(table, key)}: unknown key '{key}'{also}")

    def value(self, table: int, key: Key, value: Any) -> Any:
        """The value in the form the option takes (argparse's), or a UsageError naming key and line."""
        def wrong() -> UsageError:
            got = TOML_TYPE.get(type(value), type(value).__name__)
            return UsageError(f"{self.where(table, key.name)}: key '{key.name}' must be {KIND_TEXT[key.kind]}, "
                              f"not {got} ({value!r})")
        if key.kind == "string":
            if not isinstance(value, str):
                raise wrong()
            return self.resolve(key, value)
        if key.kind == "word":  # weight-bits = 4 or "auto": kept as the command line's string
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise wrong()
            return str(value)
        if key.kind == "boolean":
            if not isinstance(value, bool):
                raise wrong()
            return value
        if key.kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong()
            return value
        if key.kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise wrong()
            return float(value)
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise wrong()
        if key.kind == "list":
            return ",".join(items)
        if key.dest == "plugin":
            return [self.plugin(v) for v in items]
        return list(items)

    def resolve(self, key: Key, value: str) -> str:
        if not key.path or (key.name == "calib" and value == "random"):
            return value
        return str((self.path.parent / Path(value).expanduser()).resolve())

    def plugin(self, spec: str) -> str:
        """A plugin file is relative to the project file; a module path stays as it is."""
        from .plugins import is_file_spec
        return str((self.path.parent / spec).resolve()) if is_file_spec(spec) else spec

    def table(self, table: int, data: dict[str, Any]) -> dict[str, Any]:
        values = {}
        for name, value in data.items():
            key = KEYS.get(name)
            if key is None or (table >= 0 and key.project_only):
                raise self.unknown(table, name)
            values[key.dest] = self.value(table, key, value)
        return values


def read_project(path: Path) -> Project:
    """Parse and check a project file; UsageError (exit 2) for a bad key, type or TOML syntax."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"project file '{path}' cannot be read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path.name} is not valid TOML: {exc}") from None
    reader = Reader(path.resolve(), text)
    tables = data.pop(MODELS, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise UsageError(f"{reader.where(-1, MODELS)}: 'models' must be tables written [[models]], "
                         f"not {TOML_TYPE.get(type(tables), type(tables).__name__)}")
    top = reader.table(-1, data)
    return Project(reader.path, top, [reader.table(i, t) for i, t in enumerate(tables)])


def find_project(args: argparse.Namespace) -> Project | None:
    """--config FILE, else cuvil.toml in the working folder, else None."""
    config = getattr(args, "config", None)
    if config:
        from .data import require_file
        return read_project(require_file(Path(config), "--config"))
    here = Path.cwd() / PROJECT_FILE
    return read_project(here) if here.is_file() else None


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The options set on the command line (every project key's option defaults to None)."""
    return {k.dest: getattr(args, k.dest) for k in KEYS.values() if set_on_command_line(getattr(args, k.dest, None))}


def set_on_command_line(value: Any) -> bool:
    """Unset options are None, [] or False (a flag not given); a 0 typed on the command line is
    given (`0 in (None, [], False)` is true in Python: 0 == False)."""
    return value is not None and value is not False and value != []


def same_model(cli: str, table: dict[str, Any]) -> bool:
    """--model selects a [[models]] table by path, by file name, by the file's stem or by the table's name."""
    given_path, path = Path(cli), Path(table["model"])
    return given_path.resolve() == path or cli in (path.name, path.stem, table.get("name"))


def select_models(project: Project, cli_model: str | None) -> list[dict[str, Any]]:
    """The [[models]] tables the command works on: all of them, or the one --model names (a
    model not in the file is built alone with the file's top-level defaults)."""
    tables = project.models or [{}]
    if cli_model is None:
        return tables
    chosen = [t for t in tables if t.get("model") and same_model(cli_model, t)]
    return chosen[:1] or [{}]


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Options still unset take their defaults, as argparse would have set them."""
    for key in KEYS.values():
        if getattr(args, key.dest, None) is None and (key.default is not None or not hasattr(args, key.dest)):
            setattr(args, key.dest, key.default)
    return args


def check_required(args: argparse.Namespace) -> None:
    """--board and --profile (and run's --input/--output, validate's --data) once the file is read."""
    needed = ["board", "profile"] + {"run": ["input", "output"], "validate": ["data"]}.get(args.command, [])
    missing = [f"--{n}" for n in needed if not getattr(args, n, None)]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)} "
                         f"(see `cuvil-sdk {args.command} --help`)")


@dataclass
class Plan:
    """What a command works on: one namespace per model (command line over its [[models]] table
    over the top level over the defaults), and the project (None without a file). `image`: the
    models go into one firmware image (two or more on the same firmware board and profile);
    `selected`: the model that run/validate works on (an index into runs)."""

    runs: list[argparse.Namespace]
    project: Project | None = None
    image: bool = False
    selected: int = 0


def merged(args: argparse.Namespace, project: Project, table: dict[str, Any], cli: dict[str, Any]) -> argparse.Namespace:
    run = argparse.Namespace(**vars(args))
    for dest, value in {**project.top, **table}.items():
        if dest not in cli:
            setattr(run, dest, value)
    return with_defaults(run)


def plan_command(args: argparse.Namespace, board_kind: Callable[[str], str]) -> Plan:
    """Merge the project file (when there is one and the command reads it) into the options."""
    project = find_project(args) if args.command in PROJECT_COMMANDS else None
    if project is None:
        check_required(args)
        return Plan([with_defaults(args)])
    cli = given(args)
    tables = project.models or [{}]
    chosen = select_models(project, cli.get("model"))
    # --model selects a model; it does not replace the others of an image
    runs = [merged(args, project, t, {k: v for k, v in cli.items() if k != "model"}) for t in tables]
    groups = {(r.board, r.profile) for r in runs}
    image = len(runs) > 1 and len(groups) == 1 and None not in next(iter(groups)) \
        and board_kind(runs[0].board) == "firmware"
    if "model" in cli and not (image and args.command != "build" and chosen[0] in tables):
        # --model: that model alone, with its table's settings (or only the top-level defaults);
        # a table it names gives the model's path (--model may be only its name or stem)
        named = {k: v for k, v in cli.items() if k != "model"} if chosen[0] in tables else cli
        return finish(args, Plan([merged(args, project, chosen[0], named)], project))
    if len(runs) > 1 and args.command != "build":
        if not image or "model" not in cli:
            names = ", ".join(Path(r.model).name for r in runs if r.model)
            raise UsageError(f"the project has {len(runs)} models ({names}): choose the one to {args.command} "
                             f"with --model")
    selected = next((i for i, t in enumerate(tables) if t is chosen[0]), 0)
    return finish(args, Plan(runs, project, image, selected))


def finish(args: argparse.Namespace, plan: Plan) -> Plan:
    """Every model needs a board and profile; run's files and validate's data only the selected one."""
    for i, run in enumerate(plan.runs):
        check_required(run if i == plan.selected else argparse.Namespace(**{**vars(run), "command": "build"}))
    return plan


STARTER = '''\
# cuvil.toml: the build settings of this folder, read by `cuvil-sdk build`, `run` and `validate`
# (or give another file with --config FILE). Every key is a command-line option of the same name
# (`cuvil-sdk build --help`); options given on the command line override the file. Paths are
# relative to this file. Top-level keys are defaults for every [[models]] table below.

board = "cortex-m7"          # where it runs: `cuvil-sdk boards` (host, cortex-m7, rpi5, jetson, ...)
profile = "lite"             # what it may contain: `cuvil-sdk profiles` (lite: int8, microcontrollers)
# precision = "int8"         # int8 | fp16 | fp32 (default: the profile's)
# calib-method = "minmax"    # minmax | percentile | mse
# threads = 1                # standard profile on Linux boards: split large layers over N threads
# input-layout = "nhwc"      # the input data is channels-last (a camera frame): no transpose on the device
# weight-layout = "int16"    # cortex-m7: pre-widened weights in flash (faster, twice the bytes; default int8)
# weights = "linked"         # linked (in the image) | region (cortex-m7: PSRAM) | file (Linux boards: <name>.weights)
# weights-region = "psram"   # with weights = "region": the board memory region (default: the board's)
# arena-region = "psram"     # firmware: the board memory region of the arena (default: ram)
# arena-budget = 27504       # the largest arena in bytes: the first layers run in row bands if needed
# plugins = ["my_ops/square_plus.py"]   # custom operators (docs/custom_ops.md)
# out-dir = "cuvil-build/firmware"      # output folder
# jobs = 4                   # parallel compile jobs (default: the number of CPUs)
# shared-arena = true        # several models in one firmware: one arena, the largest model's (they run
                             # one at a time); false gives each model its own arena (they run concurrently)
# image = "firmware"         # several models in one firmware: build/<image>.elf

# One table per model. Two or more for the same firmware board build one image holding every model,
# each with its own C API (prefixed by its name).
[[models]]
model = "model.onnx"         # the ONNX model
calib = "calib.npy"          # calibration samples (.npy/.npz), or "random" (not representative)
# name = "model"             # C symbol prefix (default: the model file's name)
# input-shape = ["input=1x3x32x32"]     # fix dynamic input dimensions
# input-value = ["sr=16000"]            # pin a scalar input (an If on it folds)
# input-precision = ["audio=float"]     # keep an input (audio, recurrent state) out of int8 (lite: "=int16")
# accuracy-target = 0.99     # keep the layers that hurt most in higher precision
# accuracy-time = 600       # the accuracy-target search stops after this many seconds with its best
# range-split = 8           # an output's Concat of ranges this far apart keeps one scale per input (0: off)
# int16-layers = ["conv1"]   # layers built with int16 activations
# weight-bits = 4            # int4 weights, two per byte (8: the default; "auto": int4 where the accuracy holds)
# int4-layers = ["conv2"]    # or name the layers with int4 weights (the others int8)
# input = "x.npy"            # `cuvil-sdk run`: the input samples ...
# output = "y.npz"           # ... and the outputs file it writes
# data = "test.npz"          # `cuvil-sdk validate`: inputs x and labels y
# per-layer = false          # `cuvil-sdk validate`: compare every layer's output too
# port = "/dev/ttyACM0"      # run/validate on the board at this serial port (docs/farm.md) ...
# flash-port = "/dev/ttyUSB0"  # ... flashed through its ROM bootloader here, where that is another port
# place = ["a", "b"]         # or on the boards of these labgrid places, sharing the samples out
# coordinator = "127.0.0.1:20408"  # the labgrid coordinator (default: LG_COORDINATOR)

# [[models]]
# model = "second.onnx"
# calib = "second_calib.npy"
'''


def write_starter(path: Path, force: bool = False) -> Path:
    if path.exists() and not force:
        raise UsageError(f"'{path}' exists; edit it, or pass --force to replace it")
    path.write_text(STARTER)
    return path
