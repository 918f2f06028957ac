"""What the harness templates read of each input and output (docs/internals.md, harness protocol):
its C type in input.bin/output.bin and at the run function the harness calls, its bytes per
sample, and the run function's pointer-array types. Shared by the firmware and Linux harness
renderers; a tensor described by its index alone (a template test's context) is a float one."""
from __future__ import annotations

import numpy as np

from ..kernels.dtypes import CTYPES


def pointer_type(entries: list[dict], key: str) -> str:
    """The element type of a run function's array of pointers: the tensors' one type, else void."""
    types = {e[key] for e in entries}
    return types.pop() if len(types) == 1 else "void"


def typed_tensor(t: dict, int8: bool, output: bool) -> dict:
    """`t` (a manifest entry, or {"index": i}) with `integer`, `ctype` (in the files: float32, or
    an integer tensor's own type; an output: what the run function writes), `run_ctype` and
    `bytes` of one sample. Integer and bool tensors have a scale of None (codegen/emit.py); an entry
    without the key is a float tensor."""
    integer = "scale" in t and t["scale"] is None
    ctype = CTYPES[t["dtype"]] if integer else "float"
    # a quantized tensor is int8 at run_int8, or int16 (an --input-precision NAME=int16 input)
    run_ctype = ctype if integer else CTYPES[t.get("dtype", "int8")] if int8 else "float"
    typed = {**t, "integer": integer, "ctype": run_ctype if output else ctype, "run_ctype": run_ctype}
    if "size" in t:
        itemsize = np.dtype(t["dtype"]).itemsize if integer else np.dtype(t["dtype"]).itemsize if output and int8 else 4
        typed["bytes"] = t["size"] * itemsize
    return typed


def with_types(context: dict) -> dict:
    """The harness context with every input and output typed and the pointer-array types."""
    int8 = bool(context.get("int8"))
    inputs = [typed_tensor(t, int8, False) for t in context.get("inputs", [])]
    outputs = [typed_tensor(t, int8, True) for t in context.get("outputs", [])]
    return {**context, "inputs": inputs, "outputs": outputs,
            "in_ptr": pointer_type(inputs, "run_ctype") if inputs else "int8_t" if int8 else "float",
            "out_ptr": pointer_type(outputs, "run_ctype") if outputs else "int8_t" if int8 else "float"}
