"""Load a host-built cuvil-sdk shared library with ctypes and run numpy arrays on it.

    from cuvil_sdk import runtime
    with runtime.load("out/build/libdigits_cnn.so") as model:
        logits = model(x)         # x: one array (single-input model) or {input name: array}
        print(model.input_names, model.input_shapes, model.output_scales)

Calling the model returns the output array itself for a single-output model, and a dict
{output name: array} for a model with several outputs; `model.run(x)` always returns the
dict. Float inputs and outputs are float32 arrays (quantized and dequantized inside int8 builds);
integer and bool ones (token ids, class indices, masks) are arrays of their own type
(`model.input_dtypes`, `model.output_dtypes`): an integer input takes integer data whose values
fit its type, never floats (data.py). A model whose index input is out of range (a Gather's
token id past the table) raises ModelError: the library read nothing outside its tensors.

Samples follow the one rule of the CLI (`run`, `validate`) and compile(): each input takes its
shape S (one sample), (N, *S), or, when S[0] is 1, (N, *S[1:]) (for an input of shape
(1, 1, 8, 8), an array (N, 1, 8, 8) is N samples), chosen per input; the samples run one after
the other and every output comes back stacked as (N, *its shape) ((N, 1, 10) for an output of
shape (1, 10)), so a recurrent state output is fed back as the next call's input unchanged.
When no input has a sample axis, the outputs have none either.

Each thread that calls a model gets its own arena, so one loaded model may be called from
several threads at once.

A `host` library carries its int8 kernels for AVX-512 VNNI, AVX-VNNI and AVX2 (and its large
convolutions for AMX-INT8) and picks one at load from CPUID: `model.isa` says which ("amx",
"avx512vnni", "avxvnni", "avx2"; None for libraries of other boards). The environment variable
CUVIL_ISA=avx2 (or avxvnni, avx512vnni, amx) caps the choice. On a CPU without AVX2 and FMA,
load raises TargetError (exit code 6 on the CLI) naming what it lacks; build for
`host-portable` there.
"""
from __future__ import annotations

import ctypes
import json
import platform
import sys
import threading
import warnings
from ctypes import byref, c_char, c_void_p
from pathlib import Path

import numpy as np

from . import weights_file
from .data import accepted_shapes, input_dtype_rule, samples_shape, shape_text
from .errors import ModelError, TargetError, UsageError

ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x28: "arm"}
# <name>_isa_missing()'s bits (sdk/templates/common/x86_dispatch.j2): what the host board's
# library needs and the CPU lacks.
MISSING_FEATURES = {1: "AVX", 2: "AVX2", 4: "FMA", 8: "OS support for AVX state (XSAVE/ymm)"}
FLOAT32 = np.dtype(np.float32)
# what a run function returns besides 0 (templates/common/model.c.j2, model.h.j2)
ERR_INDEX = 17
RETURN_CODES = {2: "the CPU lacks the instructions the library needs", 16: "its weights are not loaded",
                ERR_INDEX: "an index input is out of range (a Gather, GatherElements, GatherND or ScatterElements "
                           "index outside its axis; nothing was read or written outside a tensor)"}
# The fast path's remembered arrays (Model._fast) before the first call and after close():
# (input array, its pointer, its shape, n, output shape) and (out= array, its pointer, its shape).
NO_INPUT, NO_OUTPUT = (None,) * 5, (None,) * 3
# model(x) hands out new output arrays cut from one allocation of this many (with their pointers
# made in one go), where an output is at most SLAB_MAX_BYTES: a new array and its pointer per call
# cost more than the C call of a small model. Each array is handed out once; an array the caller
# keeps keeps its slab (at most SLAB_ARRAYS * SLAB_MAX_BYTES) alive.
SLAB_ARRAYS, SLAB_MAX_BYTES = 64, 4096
NO_SLAB = (None, iter(()))


def elf_machine(path: Path) -> str:
    head = path.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        raise UsageError(f"'{path}' is not a shared library (no ELF header)")
    return ELF_MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")


class Model:
    def __init__(self, path: Path, name: str | None = None, weights: str | Path | None = None) -> None:
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
        self.isa = self._instruction_set(path)
        self.int8 = self.manifest["precision"] == "int8"
        self._load_weights(path, weights)
        self._run_fn = self._batch_entry("run")
        self._run_int8 = self._batch_entry("run_int8") if self.int8 else None
        self.arena_bytes = int(self.manifest["arena_bytes"])
        self._local = threading.local()  # one arena per calling thread
        # what a call checks, computed once (a call parses and allocates nothing else)
        self._in_shapes = self.input_shapes
        self._out_shapes = self.output_shapes
        # the fast path (_fast) takes float32 in and out
        floats = all(t["scale"] is not None for t in self.manifest["inputs"] + self.manifest["outputs"])
        self._single = len(self._in_shapes) == 1 and len(self._out_shapes) == 1 and floats
        if self._single:
            self._in_shape, self._out_shape = self._in_shapes[0], self._out_shapes[0]
        self._x_cache: tuple = NO_INPUT  # the fast path's last input and out= arrays (see _fast)
        self._y_cache: tuple = NO_OUTPUT
        self._slab: tuple = NO_SLAB  # (output shape, iterator of unused (array, pointer)) for model(x)

    def _instruction_set(self, path: Path) -> str | None:
        """The kernel variant an x86-64 `host` library chose from CPUID ("amx", "avx512vnni",
        "avxvnni", "avx2"; CUVIL_ISA caps it), None for libraries without variants. A CPU the
        library cannot run on is refused here, with what it lacks."""
        isa_fn = getattr(self._lib, f"{self.name}_isa", None)
        if isa_fn is None:
            return None
        isa_fn.restype = ctypes.c_char_p
        isa = isa_fn().decode()
        if isa == "none":
            missing = getattr(self._lib, f"{self.name}_isa_missing")()
            lacks = ", ".join(text for bit, text in MISSING_FEATURES.items() if missing & bit)
            self.close()
            raise TargetError(f"'{path.name}' needs an x86-64 CPU with AVX2 and FMA; this one lacks {lacks}: "
                              f"build with --board host-portable")
        return isa

    def _load_weights(self, library: Path, weights: str | Path | None) -> None:
        """A --weights file build: map its weights file (default: <name>.weights beside the
        library) through <name>_load_weights, which checks size and CRC-32; ModelError if refused."""
        spec = weights_file.weights_spec(self.manifest)
        if spec is None:
            if weights is not None:
                raise UsageError(f"'{library.name}' has its weights inside (built with --weights "
                                 f"{self.manifest.get('weights', {}).get('placement', 'linked')}): no weights= file")
            return
        path = Path(weights) if weights is not None else library.parent / spec["file"]
        load = getattr(self._lib, f"{self.name}_load_weights")
        load.argtypes, load.restype = [ctypes.c_char_p], ctypes.c_int
        code = load(str(path).encode())
        if code != 0:
            self.close()
            raise ModelError(weights_file.problem(path, code, spec))
        self.weights_path = path

    def _batch_entry(self, kind: str):
        """<name>_<kind>_batch(arena, n, in0.., out0..): every sample of a batch in one C call."""
        fn = getattr(self._lib, f"{self.name}_{kind}_batch")
        fn.restype = ctypes.c_int
        return fn

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

    def _dtypes(self, entries: list[dict], raw: bool) -> list[np.dtype]:
        """Each tensor's array type: float32 (int8 at run_int8) for float tensors, its own for
        integer and bool ones (the manifest gives them no scale)."""
        return [np.dtype(t["dtype"]) if t["scale"] is None or raw else FLOAT32 for t in entries]

    @property
    def input_dtypes(self) -> list[np.dtype]:
        """The array type model(x) takes for each input: float32, or an integer or bool type."""
        return self._dtypes(self.manifest["inputs"], False)

    @property
    def output_dtypes(self) -> list[np.dtype]:
        """The array type model(x) returns for each output."""
        return self._dtypes(self.manifest["outputs"], False)

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

    def _batches(self, inputs, dtypes: list[np.ndarray]) -> tuple[list[np.ndarray], bool]:
        """Every input as (N, *shape), each taken in any of the forms data files take (data.py,
        samples_shape: its shape S for one sample, (N, *S), or (N, *S[1:]) when S[0] is 1), so
        an audio chunk (N, 576) and a state (N, 2, 1, 128) go together; and whether any input
        carried a sample axis (else the outputs have none either). Errors name the shapes the
        caller passed."""
        by_name = self._by_name(inputs)
        arrays, given, one = [], [], True
        for name, shape, dtype in zip(self.input_names, self.input_shapes, dtypes):
            a, note = input_dtype_rule(np.asarray(by_name[name]), name, dtype, "input")
            if note:  # float64 data for a float32 input: converted, said once per call site
                warnings.warn(note, stacklevel=user_stacklevel())
            stacked = samples_shape(a.shape, shape)
            if stacked is None:
                raise ModelError(f"input '{name}' has shape {shape_text(a.shape)}, expected {accepted_shapes(shape)}")
            one = one and a.shape == shape
            arrays.append(a.reshape(stacked))
            given.append(f"'{name}' {shape_text(a.shape)}")
        if len({len(a) for a in arrays}) > 1:
            counts = ", ".join(f"{g}: {len(a)}" for g, a in zip(given, arrays))
            raise ModelError(f"the inputs disagree on the number of samples ({counts})")
        return arrays, not one

    def _arena(self) -> ctypes.c_void_p:
        """This thread's arena (a 64-byte aligned address), allocated on its first call."""
        arena = getattr(self._local, "arena", None)
        if arena is None:
            block = np.zeros(self.arena_bytes + 64, dtype=np.uint8)
            arena = self._local.arena = ctypes.c_void_p(block.ctypes.data + (-block.ctypes.data) % 64)
            self._local.block = block
        return arena

    def _call(self, fn, n: int, feeds: list[np.ndarray], outs: list[np.ndarray]) -> None:
        """One C call for n samples; every array is C-contiguous with n samples of its tensor."""
        if self._lib is None:
            raise UsageError("the model is closed")
        if n == 0:  # an empty batch: nothing to run (and no buffer to point at)
            return
        check_return(fn(self._arena(), n, *map(pointer, feeds), *map(pointer, outs)))

    def _run(self, fn, inputs, raw: bool, out=None) -> dict[str, np.ndarray]:
        """Every sample in one C call; each output (N, *shape), or its shape alone when no input
        had a sample axis (the one rule, data.stack_samples). raw: run_int8's types (int8 for
        float tensors)."""
        arrays, sampled = self._batches(inputs, self._dtypes(self.manifest["inputs"], raw))
        n = len(arrays[0])
        shapes = [(n, *shape) if sampled else shape for shape in self._out_shapes]
        dtypes = self._dtypes(self.manifest["outputs"], raw)
        outs = [self._output_array(name, shape, dtype, out)
                for name, shape, dtype in zip(self.output_names, shapes, dtypes)]
        self._call(fn, n, [np.ascontiguousarray(a) for a in arrays], outs)
        return dict(zip(self.output_names, outs))

    def _output_array(self, name: str, shape: tuple[int, ...], dtype, out) -> np.ndarray:
        """A new output array, or the caller's (out=: an array, or a dict by output name)."""
        given = out.get(name) if isinstance(out, dict) else out
        if given is None:
            return np.empty(shape, dtype=dtype)
        if given.shape != shape or given.dtype != dtype or not given.flags.c_contiguous or not given.flags.writeable:
            raise UsageError(f"out= for '{name}' must be a writable C-contiguous {np.dtype(dtype).name} array of "
                             f"shape {shape_text(shape)} (got {given.dtype.name} {shape_text(given.shape)})")
        return given

    def _fast(self, x, out) -> np.ndarray | None:
        """The call of a single-input, single-output model on a float32 C-contiguous writable
        array of one sample or of N >= 1 stacked samples: no copy, one C call, nothing checked
        twice (None: take the general path, which explains what is wrong with the input).
        The pointers of the last input and `out=` arrays are kept with a reference to the
        arrays (which pins their memory: numpy neither frees nor resizes an array whose buffer
        is exported), so a caller that refills the same arrays pays no pointer lookup: this is
        the whole per-call overhead over the raw C call."""
        xc = self._x_cache  # (array, its pointer, its shape, n, the output shape)
        if x is not xc[0] or x.shape != xc[2] or x.dtype is not FLOAT32:
            xc = self._input_entry(x)
            if xc is None:
                return None
        yshape = xc[4]
        yc = self._y_cache  # (array, its pointer, the output shape it was checked against)
        if out is None:
            y, y_ptr = self._new_output(yshape)
        elif out is yc[0] and yc[2] is yshape:
            y, y_ptr = out, yc[1]
        else:
            y, y_ptr = self._output_entry(out, yshape)
        arena = getattr(self._local, "arena", None) or self._arena()
        check_return(self._run_fn(arena, xc[3], xc[1], y_ptr))
        return y

    def _new_output(self, yshape: tuple[int, ...]):
        """A new float32 output array and its pointer (next() on a list iterator is atomic, so
        two calling threads never get the same one)."""
        slab = self._slab
        if slab[0] == yshape:
            fresh = next(slab[1], None)
            if fresh is not None:
                return fresh
        n = SLAB_ARRAYS if 4 * int(np.prod(yshape)) <= SLAB_MAX_BYTES else 1
        block = np.empty((n, *yshape), dtype=np.float32)
        base, step = block.ctypes.data, block.strides[0]
        arrays = iter([(block[i], c_void_p(base + i * step)) for i in range(n)])
        self._slab = (yshape, arrays)
        return next(arrays)

    def _input_entry(self, x) -> tuple | None:
        """Check an input array once and remember its pointer (None: not the fast kind)."""
        try:
            if x.dtype is not FLOAT32:
                return None
            shape = x.shape
            if shape == self._in_shape:
                n, yshape = 1, self._out_shape
            elif shape[1:] == self._in_shape and shape[0] > 0:
                n, yshape = shape[0], (shape[0], *self._out_shape)
            else:
                return None
            entry = (x, byref(c_char.from_buffer(x)), shape, n, yshape)
        except (AttributeError, TypeError, ValueError, BufferError):  # read-only, not contiguous, not an array
            return None
        self._x_cache = entry
        return entry

    def _output_entry(self, out, yshape: tuple[int, ...]):
        """Check the caller's out= array (explaining what is wrong) and remember its pointer."""
        y = self._output_array(self.output_names[0], yshape, np.float32, out)
        try:
            y_ptr = byref(c_char.from_buffer(y))
        except (TypeError, ValueError, BufferError):  # read-only or not C-contiguous: say so
            raise UsageError(f"out= for '{self.output_names[0]}' must be a writable C-contiguous float32 array")
        self._y_cache = (y, y_ptr, yshape)
        return y, y_ptr

    def run(self, inputs, out=None) -> dict[str, np.ndarray]:
        """Inputs -> {output name: array}: float32 for float tensors (quantized inside int8 builds),
        integer and bool tensors in their own types."""
        return self._run(self._run_fn, inputs, False, out)

    def __call__(self, inputs, out=None) -> np.ndarray | dict[str, np.ndarray]:
        """Inputs -> the output array (single-output model) or {output name: array}.
        `out=` writes into the caller's array (or dict of arrays) instead of new ones."""
        if self._single:
            y = self._fast(inputs, out)
            if y is not None:
                return y
        outputs = self.run(inputs, out)
        return next(iter(outputs.values())) if len(outputs) == 1 else outputs

    def run_int8(self, inputs, out=None) -> dict[str, np.ndarray]:
        """int8 inputs -> {output name: int8 array}, the raw quantized model (int8 builds); integer
        and bool tensors in their own types."""
        if not self.int8:
            raise UsageError("run_int8 needs an int8 build")
        return self._run(self._run_int8, inputs, True, out)

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
            unload = getattr(self._lib, f"{self.name}_unload_weights", None)
            if unload is not None:
                unload.restype = None
                unload()
            handle = self._lib._handle
            self._lib = None
            self._run_fn = self._run_int8 = closed  # a later call says so instead of jumping into unmapped code
            # the caller's arrays are theirs again
            self._x_cache, self._y_cache, self._slab = NO_INPUT, NO_OUTPUT, NO_SLAB
            ctypes.CDLL(None).dlclose.argtypes = [ctypes.c_void_p]
            ctypes.CDLL(None).dlclose(ctypes.c_void_p(handle))

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def closed(*args) -> int:
    raise UsageError("the model is closed")


def check_return(code: int) -> None:
    """A run function's return code: 0, or ModelError saying what it means."""
    if code != 0:
        raise ModelError(f"the model returned error {code}: {RETURN_CODES.get(code, 'unknown error')}")


def pointer(a: np.ndarray):
    """A C pointer to an array's data for a ctypes call: byref of a zero-copy view, several
    times cheaper than `a.ctypes.data` (arrays that are read-only take the slower path)."""
    if a.flags.writeable and a.size:
        return ctypes.byref(ctypes.c_char.from_buffer(a))
    return ctypes.c_void_p(a.ctypes.data)  # read-only, or empty (a tensor with a dimension of 0)


def user_stacklevel() -> int:
    """warnings.warn's stacklevel that names the first caller outside this module (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level


def load(path: str | Path, name: str | None = None, weights: str | Path | None = None) -> Model:
    """Load lib<name>.so; a --weights file build also maps its weights file: `weights`, or
    <name>.weights beside the library (ModelError, one line, if it is missing or refused)."""
    return Model(Path(path), name, weights)
