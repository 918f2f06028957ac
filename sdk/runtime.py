"""Load a host-built cuvil-sdk shared library with ctypes and run numpy arrays on it.

    from cuvil_sdk import runtime
    with runtime.load("out/build/libdigits_cnn.so") as model:
        logits = model(x)         # x: one array (single-input model) or {input name: array}
        print(model.input_names, model.input_shapes, model.output_scales)

Calling the model returns the output array itself for a single-output model, and a dict
{output name: array} for a model with several outputs; `model.run(x)` always returns the
dict. A leading sample axis works as on the CLI: for an input of shape (1, 1, 8, 8), an
array (N, 1, 8, 8) is N samples, run one after the other, and the outputs are stacked the
same way ((N, 10) for an output of shape (1, 10)); (N, 1, 1, 8, 8) gives (N, 1, 10).

Each thread that calls a model gets its own arena, so one loaded model may be called from
several threads at once.
"""
from __future__ import annotations

import ctypes
import json
import platform
import threading
from pathlib import Path

import numpy as np

from .data import accepted_shapes, shape_text
from .errors import ModelError, UsageError

ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x28: "arm"}


def elf_machine(path: Path) -> str:
    head = path.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        raise UsageError(f"'{path}' is not a shared library (no ELF header)")
    return ELF_MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")


class Model:
    def __init__(self, path: Path, name: str | None = None) -> None:
        path = Path(path)
        if not path.is_file():
            raise UsageError(f"library '{path}' does not exist")
        machine, host = elf_machine(path), platform.machine()
        if machine != host:
            raise UsageError(f"'{path.name}' was built for {machine}, this host is {host}: "
                             f"build it with --board host, or run it with `cuvil-sdk run --board <its board>`")
        self.name = name or path.stem.removeprefix("lib")
        self._lib = ctypes.CDLL(str(path.resolve()))
        manifest_fn = getattr(self._lib, f"{self.name}_manifest")
        manifest_fn.restype = ctypes.c_char_p
        self.manifest = json.loads(manifest_fn().decode())
        self.int8 = self.manifest["precision"] == "int8"
        self._run_fn = getattr(self._lib, f"{self.name}_run_arena")
        self._run_int8 = getattr(self._lib, f"{self.name}_run_int8_arena") if self.int8 else None
        self.arena_bytes = int(self.manifest["arena_bytes"])
        self._local = threading.local()  # one arena per calling thread

    # --- description ----------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return [t["name"] for t in self.manifest["inputs"]]

    @property
    def output_names(self) -> list[str]:
        return [t["name"] for t in self.manifest["outputs"]]

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return [tuple(t["shape"]) for t in self.manifest["inputs"]]

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        return [tuple(t["shape"]) for t in self.manifest["outputs"]]

    @property
    def dtypes(self) -> dict[str, str]:
        return {t["name"]: t["dtype"] for t in self.manifest["inputs"] + self.manifest["outputs"]}

    @property
    def input_scales(self) -> list[tuple[float, int]]:
        return [(t["scale"], t["zero_point"]) for t in self.manifest["inputs"]]

    @property
    def output_scales(self) -> list[tuple[float, int]]:
        return [(t["scale"], t["zero_point"]) for t in self.manifest["outputs"]]

    @property
    def backend(self) -> str:
        """"cpu", or "cuda" when a CUDA build found a GPU (other builds are always "cpu")."""
        fn = getattr(self._lib, f"{self.name}_backend", None) if self._lib is not None else None
        if fn is None:
            return "cpu"
        fn.restype = ctypes.c_char_p
        return fn().decode()

    # --- running ----------------------------------------------------------------------
    def _by_name(self, inputs) -> dict:
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise UsageError(f"missing input '{missing[0]}' (the model's inputs: {self.input_names})")
            return inputs
        if len(self.input_names) != 1:
            raise UsageError(f"the model has inputs {self.input_names}: pass a dict")
        return {self.input_names[0]: inputs}

    def _batches(self, inputs, dtype) -> tuple[list[np.ndarray], str]:
        """Every input as (N, *shape), and how the caller laid the samples out: "one" (no
        sample axis), "stacked" (N, *shape), or "flat" (N, *shape[1:]) for a batch of 1."""
        by_name = self._by_name(inputs)
        arrays, forms = [], set()
        for name, shape in zip(self.input_names, self.input_shapes):
            a = np.asarray(by_name[name], dtype=dtype)
            if a.shape == shape:
                arrays.append(a[None])
                forms.add("one")
            elif a.shape[1:] == shape:
                arrays.append(a)
                forms.add("stacked")
            elif shape and shape[0] == 1 and a.ndim == len(shape) and a.shape[1:] == shape[1:]:
                arrays.append(a.reshape(len(a), *shape))
                forms.add("flat")
            else:
                raise ModelError(f"input '{name}' has shape {shape_text(a.shape)}, expected {accepted_shapes(shape)}")
        if len(forms) > 1 or len({len(a) for a in arrays}) > 1:
            raise ModelError(f"the inputs disagree on the sample axis: shapes "
                             f"{[shape_text(a.shape) for a in arrays]}")
        return arrays, forms.pop()

    def _arena(self) -> int:
        """This thread's arena (64-byte aligned address), allocated on its first call."""
        arena = getattr(self._local, "arena", None)
        if arena is None:
            arena = self._local.arena = np.zeros(self.arena_bytes + 64, dtype=np.uint8)
        return arena.ctypes.data + (-arena.ctypes.data) % 64

    def _call_one(self, fn, feeds: list[np.ndarray], dtype) -> list[np.ndarray]:
        if self._lib is None:
            raise UsageError("the model is closed")
        feeds = [np.ascontiguousarray(f) for f in feeds]
        outs = [np.empty(shape, dtype=dtype) for shape in self.output_shapes]
        ins = (ctypes.c_void_p * len(feeds))(*[f.ctypes.data for f in feeds])
        outp = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
        if fn(ctypes.c_void_p(self._arena()), ins, outp) != 0:
            raise ModelError("the model returned an error")
        return outs

    def _run(self, fn, inputs, dtype) -> dict[str, np.ndarray]:
        """Every sample, one C call each; outputs laid out like the inputs were."""
        arrays, form = self._batches(inputs, dtype)
        per_sample = [self._call_one(fn, [a[i] for a in arrays], dtype) for i in range(len(arrays[0]))]
        joined = {"one": lambda outs: outs[0], "stacked": np.stack, "flat": np.concatenate}[form]
        return {name: joined([outs[k] for outs in per_sample]) for k, name in enumerate(self.output_names)}

    def run(self, inputs) -> dict[str, np.ndarray]:
        """Float inputs -> {output name: float array} (quantized inside for int8 builds)."""
        return self._run(self._run_fn, inputs, np.float32)

    def __call__(self, inputs) -> np.ndarray | dict[str, np.ndarray]:
        """Float inputs -> the output array (single-output model) or {output name: array}."""
        outputs = self.run(inputs)
        return next(iter(outputs.values())) if len(outputs) == 1 else outputs

    def run_int8(self, inputs) -> dict[str, np.ndarray]:
        """int8 inputs -> {output name: int8 array}, the raw quantized model (int8 builds)."""
        if not self.int8:
            raise UsageError("run_int8 needs an int8 build")
        return self._run(self._run_int8, inputs, np.int8)

    def run_with_layers(self, inputs) -> tuple[dict[str, np.ndarray], dict[int, bytes]]:
        """Run a debug build (compiled with debug_dump) and also return each layer's raw output."""
        setter = getattr(self._lib, f"{self.name}_set_debug_dump", None) if self._lib is not None else None
        if setter is None:
            raise UsageError("this library is not a debug build (no per-layer dumps)")
        layers: dict[int, bytes] = {}
        callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int32)
        callback = callback_type(lambda layer, data, size: layers.__setitem__(layer, ctypes.string_at(data, size)))
        setter.argtypes = [callback_type]
        setter(callback)
        try:
            outputs = self.run(inputs)
        finally:
            setter(callback_type())
        return outputs, layers

    def close(self) -> None:
        if self._lib is not None:
            handle = self._lib._handle
            self._lib = None
            ctypes.CDLL(None).dlclose.argtypes = [ctypes.c_void_p]
            ctypes.CDLL(None).dlclose(ctypes.c_void_p(handle))

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def load(path: str | Path, name: str | None = None) -> Model:
    return Model(Path(path), name)
