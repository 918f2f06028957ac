"""Element types of tensors as the kernels see them: each IR dtype (numpy name) with its C type
and the variant suffix of the kernel families (`<family>_<variant>`, codegen/kernel_files.py).

Quantized activations are int8 (s8) or int16 (s16) with QParams; integer and bool tensors
(ir.INTEGER_DTYPES: indices, token ids, masks) use the same C types where they coincide, so a
data-movement kernel serves both (its family names the C type, not the meaning). Bool is C99's
`bool` (<stdbool.h>, one byte holding 0 or 1 on every ABI we build for, as numpy's bool).
"""
from __future__ import annotations

CTYPES = {"float32": "float", "float16": "cuvil_f16", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
          "int64": "int64_t", "uint8": "uint8_t", "bool": "bool"}
VARIANTS = {"float32": "f32", "float16": "f16", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
            "uint8": "u8", "bool": "b8"}
# the variants of integer and bool tensors, in the order of their kernel families' declarations
INTEGER_VARIANTS = ("b8", "u8", "s8", "s16", "s32", "s64")
# the numpy dtype and C type of each variant
VARIANT_DTYPES = {v: d for d, v in VARIANTS.items()}


def ctype(dtype: str) -> str:
    return CTYPES[dtype]


def variant(dtype: str) -> str:
    return VARIANTS[dtype]
