"""Data files (README, data files): .npy for a single-input model, .npz keyed by input name.
A leading sample axis is allowed when the model's batch dimension is 1."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .errors import ModelError
from .ir import Graph


def read_arrays(path: Path, input_names: list[str]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise ModelError(f"data file '{path}' does not exist")
    try:
        if path.suffix == ".npy":
            arrays = {"": np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelError(f"data file '{path.name}' cannot be read: {exc}") from None
    if "" in arrays:
        if len(input_names) != 1:
            raise ModelError(f"'{path.name}': the model has {len(input_names)} inputs; use a .npz keyed by input name")
        return {input_names[0]: arrays[""]}
    if all(n in arrays for n in input_names):
        return {n: arrays[n] for n in input_names}
    if len(input_names) == 1 and "x" in arrays:
        return {input_names[0]: arrays["x"]}
    if len(input_names) == 1 and len(arrays) == 1:
        return {input_names[0]: next(iter(arrays.values()))}
    raise ModelError(f"'{path.name}' has arrays {sorted(arrays)}, expected the model's inputs {input_names}")


def as_samples(g: Graph, arrays: dict[str, np.ndarray], what: str) -> list[dict[str, np.ndarray]]:
    """Split arrays into per-sample feeds shaped exactly as the model's inputs."""
    counts = set()
    shaped = {}
    for name, a in arrays.items():
        shape = g.tensors[name].shape
        a = np.asarray(a)
        if a.dtype.kind not in "fiu":
            raise ModelError(f"{what}: array for '{name}' has dtype {a.dtype}, expected numbers")
        a = a.astype(np.float32)
        if a.shape == shape:
            a = a[None]
        elif not (shape and shape[0] == 1 and a.shape[1:] == shape[1:]):
            raise ModelError(f"{what}: array for '{name}' has shape {a.shape}, expected {shape} or (N, *{shape[1:]})")
        counts.add(a.shape[0])
        shaped[name] = a
    if len(counts) != 1 or 0 in counts:
        raise ModelError(f"{what}: inputs have different or zero sample counts {sorted(counts)}")
    n = counts.pop()
    return [{name: a[i].reshape(g.tensors[name].shape) for name, a in shaped.items()} for i in range(n)]


def load_samples(path: Path, g: Graph, what: str) -> list[dict[str, np.ndarray]]:
    return as_samples(g, read_arrays(path, list(g.inputs)), what)


def random_samples(g: Graph, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{n: rng.random(g.tensors[n].shape, dtype=np.float32) for n in g.inputs} for _ in range(count)]


def write_outputs(path: Path, names: list[str], per_sample: list[dict[str, np.ndarray]]) -> None:
    np.savez(path, **{n: np.concatenate([s[n] for s in per_sample], axis=0) for n in names})
