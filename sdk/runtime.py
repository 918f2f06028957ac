"""Load a host-built cuvil-sdk shared library with ctypes and run numpy arrays on it.

    from cuvil_sdk import runtime
    with runtime.load("out/build/libdigits_cnn.so") as model:
        y = model(x)              # one array for a single-input model, or {name: array}
        print(model.input_names, model.input_shapes, model.output_scales)

Each call uses its own arena, so one loaded model may be called from several threads.
"""
from __future__ import annotations

import ctypes
import json
import platform
from pathlib import Path

import numpy as np

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
        self._run = getattr(self._lib, f"{self.name}_run_arena")
        self._run_int8 = getattr(self._lib, f"{self.name}_run_int8_arena") if self.int8 else None
        self.arena_bytes = int(self.manifest["arena_bytes"])

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
    def _feeds(self, inputs, dtype) -> list[np.ndarray]:
        if not isinstance(inputs, dict):
            if len(self.input_names) != 1:
                raise UsageError(f"the model has inputs {self.input_names}: pass a dict")
            inputs = {self.input_names[0]: inputs}
        feeds = []
        for name, shape in zip(self.input_names, self.input_shapes):
            if name not in inputs:
                raise UsageError(f"missing input '{name}'")
            a = np.ascontiguousarray(inputs[name], dtype=dtype)
            if a.shape != shape:
                raise ModelError(f"input '{name}' has shape {a.shape}, expected {shape}")
            feeds.append(a)
        return feeds

    def _call(self, fn, feeds: list[np.ndarray], dtype) -> dict[str, np.ndarray]:
        if self._lib is None:
            raise UsageError("the model is closed")
        outs = [np.empty(shape, dtype=dtype) for shape in self.output_shapes]
        arena = np.zeros(self.arena_bytes + 64, dtype=np.uint8)
        aligned = arena.ctypes.data + (-arena.ctypes.data) % 64
        ins = (ctypes.c_void_p * len(feeds))(*[f.ctypes.data for f in feeds])
        outp = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
        if fn(ctypes.c_void_p(aligned), ins, outp) != 0:
            raise ModelError("the model returned an error")
        return dict(zip(self.output_names, outs))

    def __call__(self, inputs) -> dict[str, np.ndarray]:
        """Float inputs -> float outputs (quantized inside for int8 builds)."""
        return self._call(self._run, self._feeds(inputs, np.float32), np.float32)

    def run_int8(self, inputs) -> dict[str, np.ndarray]:
        if not self.int8:
            raise UsageError("run_int8 needs an int8 build")
        return self._call(self._run_int8, self._feeds(inputs, np.int8), np.int8)

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
            outputs = self(inputs)
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
