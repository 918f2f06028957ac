"""Data files (README, data files): .npy for a single-input model, .npz keyed by input name.

A leading sample axis is allowed: for an input of shape S, an array of shape (N, *S) is N
samples, and when the batch dimension is 1, so is (N, *S[1:]). Every file problem is a
ModelError (exit 3) naming the file: missing, not a NumPy file, wrong keys, dtypes or shapes,
or values that are not finite (NaN or Inf), with the first bad sample's index. Data is never
cast silently: float64 is narrowed to a float32 input with a note, integers are refused for a
float input. Integer inputs (token ids, indices) take integer data whose every value fits their
type (int32 ids for an int64 input, say: a widening or value-preserving cast, never one that
changes a value); float data for them is refused, and so is anything but bool for a bool input.
"""
from __future__ import annotations

import math
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ModelError, ToolError
from .ir import Graph

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def shape_text(shape: tuple) -> str:
    """A shape as users write it: (N, 1, 8, 8); symbolic dimensions as their names."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def require_file(path: Path, what: str) -> Path:
    """The same exit code (3) and message for every input file that is missing."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{what} file '{path}' does not exist")
    return path


def check_numpy_file(path: Path) -> None:
    """Refuse, by its first bytes, a file that is not .npy or .npz, before numpy gives its own
    message (for a text file: one about pickled data)."""
    with open(path, "rb") as f:
        head = f.read(len(NPY_MAGIC))
    if not head.startswith((NPY_MAGIC, ZIP_MAGIC)):
        raise ModelError(f"'{path.name}' is not a NumPy file (.npy or .npz)")


@dataclass(frozen=True)
class ArrayHeader:
    """What a .npy header (alone, or inside an .npz) declares, read before any data is."""
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize  # Python ints: a forged shape cannot overflow


HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def npy_header(f, where: str) -> ArrayHeader:
    """The header of the .npy stream f (left at the first data byte)."""
    version = np.lib.format.read_magic(f)
    if version not in HEADER_READERS:
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    shape, _, dtype = HEADER_READERS[version](f)
    if dtype.hasobject:
        raise ValueError(f"{where} holds Python objects (pickled data), not numbers")
    return ArrayHeader(tuple(int(d) for d in shape), dtype)


def data_bound() -> int:
    """The most bytes of data read into memory: half of this machine's memory (env
    CUVIL_MAX_DATA_BYTES overrides), so a data file can never exhaust it."""
    if os.environ.get("CUVIL_MAX_DATA_BYTES"):
        return int(os.environ["CUVIL_MAX_DATA_BYTES"])
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def read_headers(path: Path, what: str = "data") -> dict[str, ArrayHeader]:
    """Every array's header of a .npy (key "") or .npz file, each checked against the bytes the
    file holds (a header may claim 238 GiB in a 200-byte file) and all together against
    data_bound(), before any data is read."""
    require_file(path, what)
    check_numpy_file(path)
    try:
        with open(path, "rb") as f:
            if f.read(len(NPY_MAGIC)) == NPY_MAGIC:
                f.seek(0)
                header = npy_header(f, f"'{path.name}'")
                held = path.stat().st_size - f.tell()
                declared = {"": (header, held)}
            else:
                declared = npz_headers(path)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, SyntaxError) as exc:
        raise ModelError(f"data file '{path.name}' cannot be read: {first_line(exc)}") from None
    for key, (header, held) in declared.items():
        if header.nbytes > held:
            where = f"array '{key}' " if key else ""
            raise ModelError(f"data file '{path.name}': {where}header declares shape {shape_text(header.shape)} "
                             f"({header.nbytes} bytes of {header.dtype.name}) but the file holds {held} bytes")
    total = sum(h.nbytes for h, _ in declared.values())
    if total > data_bound():
        raise ModelError(f"data file '{path.name}' holds {total / 2**30:.1f} GiB of data, more than the "
                         f"{data_bound() / 2**30:.1f} GiB this machine can take at once (half its memory): split it")
    return {key: header for key, (header, _) in declared.items()}


def npz_headers(path: Path) -> dict[str, tuple[ArrayHeader, int]]:
    """Each member's header and the data bytes its declared size leaves after the header (zipfile
    stops reading a member at its declared size, so that size bounds what it can expand to)."""
    declared = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            with z.open(info) as member:
                header = npy_header(member, f"'{path.name}' array '{key}'")
                declared[key] = (header, info.file_size - member.tell())
    return declared


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def load_arrays(path: Path, what: str = "data", keys: list[str] | None = None,
                headers: dict[str, ArrayHeader] | None = None) -> dict[str, np.ndarray]:
    """The arrays of a .npy (key "") or .npz file (those of `keys`, else all), read only after
    their headers passed read_headers (given as `headers` by a caller that has read them), and
    checked to be finite."""
    headers = read_headers(path, what) if headers is None else headers
    keys = list(headers) if keys is None else keys
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            arrays = {"": loaded}
        else:
            with loaded as z:
                arrays = {k: z[k] for k in keys}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelError(f"data file '{path.name}' cannot be read: {exc}") from None
    for key, a in arrays.items():
        check_finite(path, key, a)
    return arrays


def first_non_finite(a: np.ndarray) -> int | None:
    """Index along the leading (sample) axis of the first sample with a NaN or Inf."""
    if a.dtype.kind not in "fc" or a.size == 0:
        return None
    bad = ~np.isfinite(a.reshape(len(a), -1) if a.ndim else a.reshape(1, 1))
    rows = np.flatnonzero(bad.any(axis=1))
    return int(rows[0]) if len(rows) else None


def check_finite(path: Path, key: str, a: np.ndarray) -> None:
    index = first_non_finite(a)
    if index is not None:
        where = f"array '{key}' " if key else ""
        raise ModelError(f"'{path.name}': {where}sample {index} has NaN or Inf values; data must be finite")


def input_keys(path: Path, keys: list[str], input_names: list[str],
               one_array_hint: str = "use a .npz keyed by input name") -> dict[str, str]:
    """Which of a file's keys holds each model input: a .npy for one input, else by input name, or
    'x' (the documented key of a single-input .npz)."""
    if "" in keys:
        if len(input_names) != 1:
            raise ModelError(f"'{path.name}': the model has {len(input_names)} inputs; {one_array_hint}")
        return {input_names[0]: ""}
    if all(n in keys for n in input_names):
        return {n: n for n in input_names}
    if len(input_names) == 1 and "x" in keys:
        return {input_names[0]: "x"}
    # no guessing from a lone array under another key: it may be another model's data
    expected = ", ".join(f"'{n}'" for n in input_names) + (" (or 'x')" if len(input_names) == 1 else "")
    raise ModelError(f"'{path.name}' has arrays {sorted(keys)}, expected the model's input keys {expected}")


def select_inputs(path: Path, arrays: dict, input_names: list[str],
                  one_array_hint: str = "use a .npz keyed by input name") -> dict:
    """The model's inputs among a file's arrays (or headers), by input name."""
    return {name: arrays[key] for name, key in input_keys(path, list(arrays), input_names, one_array_hint).items()}


def read_arrays(path: Path, input_names: list[str], what: str = "data") -> dict[str, np.ndarray]:
    return select_inputs(path, load_arrays(path, what), input_names)


def check_declared_shapes(path: Path, g: Graph, headers: dict[str, ArrayHeader], what: str) -> None:
    """Each input's array, by its header, has one of the shapes the input takes: checked before
    the data is read, naming the file and the shape expected."""
    for name, header in headers.items():
        shape = tuple(g.tensors[name].shape)
        if samples_shape(header.shape, shape) is None:
            raise ModelError(f"{what} '{path.name}': array for '{name}' has shape {shape_text(header.shape)}, "
                             f"expected {accepted_shapes(shape)}{layout_hint(g, name, header.shape)}")


def memory_samples(value: np.ndarray | dict[str, np.ndarray], g: Graph, what: str) -> list[dict[str, np.ndarray]]:
    """Samples given as arrays (the Python API's calib=): one array for a one-input model, or
    {input name: array}; checked as a data file's arrays are."""
    source = Path("calib=")  # what the messages call it
    arrays = ({str(k): np.asarray(v) for k, v in value.items()} if isinstance(value, dict)
              else {"": np.asarray(value)})
    for key, a in arrays.items():
        check_finite(source, key, a)
    chosen = select_inputs(source, arrays, list(g.inputs), "pass {input name: array}")
    return as_samples(g, chosen, what)


def samples_shape(got: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Data of shape `got` as (N, *shape), or None when it is none of the accepted forms."""
    if got == shape:
        return (1, *shape)
    if got[1:] == shape:
        return got
    if shape and shape[0] == 1 and got[1:] == shape[1:]:
        return (got[0], *shape)
    return None


def with_sample_axis(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """a as (N, *shape), or None when its shape is none of the accepted forms."""
    stacked = samples_shape(a.shape, shape)
    return None if stacked is None else a.reshape(stacked)


def accepted_shapes(shape: tuple[int, ...]) -> str:
    if shape and shape[0] == 1:
        return f"{shape_text(shape)} or {shape_text(('N',) + shape[1:])}"
    return f"{shape_text(shape)} or {shape_text(('N',) + shape)}"


def layout_hint(g: Graph, name: str, got: tuple[int, ...]) -> str:
    """When the data has the input's other 4-D layout, say which option takes it."""
    t = g.tensors[name]
    if len(t.shape) != 4:
        return ""
    channels_last = bool(t.origin and t.origin[0] == name)
    other = tuple(t.shape[p] for p in ([0, 3, 1, 2] if channels_last else [0, 2, 3, 1]))
    if samples_shape(tuple(got), other) is None:
        return ""
    return ("; that is NCHW data, but this build takes NHWC (--input-layout nhwc)" if channels_last
            else "; channels-last data? build with --input-layout nhwc")


class DataTypeError(ModelError, TypeError):
    """Data of a type the input does not take: exit 3 on the command line, a TypeError in Python."""


SCALING_HINT = "; image data usually needs scaling to the model's float range first (e.g. x.astype(np.float32) / 255)"


def integer_input_rule(a: np.ndarray, name: str, expected: np.dtype, what: str) -> np.ndarray:
    """Data for an integer or bool input: its own type, or integers that all fit the input's type
    (cast without changing a value). Floats are refused (ids and indices are integers, and a
    rounded one would pick another row), and bool takes bool only (a mask)."""
    wanted = f"{what}: array for '{name}' has dtype {a.dtype.name}, expected {expected.name}"
    if expected == np.bool_:
        raise DataTypeError(f"{wanted} (a mask: pass a bool array)")
    if a.dtype.kind not in "iu":
        hint = (f": indices and token ids are integers (x.astype(np.{expected.name}) if the values are whole "
                f"numbers)" if a.dtype.kind == "f" else "")
        raise DataTypeError(f"{wanted}{hint}")
    info = np.iinfo(expected)
    if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
        bad = int(a.min()) if int(a.min()) < info.min else int(a.max())
        raise DataTypeError(f"{wanted}: the value {bad} does not fit {expected.name}")
    return a.astype(expected)


def input_dtype_rule(a: np.ndarray, name: str, expected: np.dtype, what: str) -> tuple[np.ndarray, str | None]:
    """The array as the input's dtype, and a note when a float was narrowed (float64 data for a
    float32 input). Anything else is refused: a silent cast of integer data (an unscaled uint8
    image, class indices) would run the model on values it was never trained on. Integer and
    bool inputs: integer_input_rule."""
    expected = np.dtype(expected)
    if a.dtype == expected:
        return a, None
    if expected.kind in "biu":
        return integer_input_rule(a, name, expected, what), None
    if a.dtype.kind == "f" and expected.kind == "f":
        note = (f"{what}: '{name}' is {a.dtype.name}, converted to {expected.name}"
                if a.dtype.itemsize > expected.itemsize else None)
        return a.astype(expected), note
    hint = SCALING_HINT if expected.kind == "f" and a.dtype.kind in "iu" else ""
    raise DataTypeError(f"{what}: array for '{name}' has dtype {a.dtype.name}, expected {expected.name}{hint}")


def as_samples(g: Graph, arrays: dict[str, np.ndarray], what: str) -> list[dict[str, np.ndarray]]:
    """Split arrays into per-sample feeds shaped exactly as the model's inputs."""
    counts = set()
    shaped = {}
    for name, a in arrays.items():
        shape = tuple(g.tensors[name].shape)
        a, note = input_dtype_rule(np.asarray(a), name, np.dtype(g.tensors[name].dtype), what)
        if note:
            print(f"cuvil-sdk: note: {note}", file=sys.stderr)
        stacked = with_sample_axis(a, shape)
        if stacked is None:
            raise ModelError(f"{what}: array for '{name}' has shape {shape_text(a.shape)}, expected "
                             f"{accepted_shapes(shape)}{layout_hint(g, name, a.shape)}")
        counts.add(stacked.shape[0])
        shaped[name] = stacked
    if len(counts) != 1 or 0 in counts:
        raise ModelError(f"{what}: inputs have different or zero sample counts {sorted(counts)}")
    n = counts.pop()
    return [{name: a[i] for name, a in shaped.items()} for i in range(n)]


def load_samples(path: Path, g: Graph, what: str) -> list[dict[str, np.ndarray]]:
    """A data file's samples for g's inputs, its headers checked against the inputs' shapes first."""
    headers = read_headers(path, what)
    keys = input_keys(path, list(headers), list(g.inputs))
    check_declared_shapes(path, g, {name: headers[key] for name, key in keys.items()}, what)
    arrays = load_arrays(path, what, list(keys.values()), headers)
    return as_samples(g, {name: arrays[key] for name, key in keys.items()}, what)


def random_samples(g: Graph, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Seeded random inputs: floats in [0, 1); integers in [0, the length of the axis they index)
    (token ids into an embedding: its rows), bool at random."""
    rng = np.random.default_rng(seed)
    bounds = {n: index_bound(g, n) for n in g.inputs}

    def sample(name: str) -> np.ndarray:
        t = g.tensors[name]
        if t.dtype == "bool":
            return rng.random(t.shape) < 0.5
        if t.dtype != "float32":
            return rng.integers(0, bounds[name], t.shape).astype(t.dtype)
        return rng.random(t.shape, dtype=np.float32)
    return [{n: sample(n) for n in g.inputs} for _ in range(count)]


def index_bound(g: Graph, name: str) -> int:
    """The values an integer input may take at random: below the smallest dimension it indexes
    (the data axis of a Gather, GatherElements or GatherND that reads it as indices), else 2."""
    bounds = []
    for node in g.consumers(name):
        if node.op in ("Gather", "GatherElements", "GatherND") and node.inputs[1] == name:
            data = g.tensors[node.inputs[0]].shape
            axis = int(node.attrs.get("axis", 0)) % max(len(data), 1) if node.op != "GatherND" else 0
            bounds.append(data[axis] if data else 1)
    return max(1, min(bounds, default=2))


def stack_samples(names: list[str], per_sample: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The one rule for samples (README, "Samples"): N samples of an output of shape S are one
    array (N, *S), stacked on a new leading axis, never concatenated along S's first axis (two
    samples of a (2, 1, 128) state are (2, 2, 1, 128), which is also what the model takes back
    as N samples of that state)."""
    return {n: np.stack([np.asarray(s[n]) for s in per_sample]) for n in names}


def write_outputs(path: Path, names: list[str], per_sample: list[dict[str, np.ndarray]]) -> None:
    """Each output's samples stacked as (N, *output shape) (stack_samples), into `path`."""
    write_arrays(path, stack_samples(names, per_sample))


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Exactly the file named (np.savez given a path adds '.npz' to a name without it), written
    whole or not at all: into a temporary file beside it, renamed over it when complete. A file
    system that refuses the write is a system failure (exit 5) naming the file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(temporary, "wb") as f:
            np.savez(f, **arrays)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ToolError(f"cannot write the outputs file '{path}': {os.strerror(exc.errno or 0)}") from None
