"""What a build asks of code generation, in one explicit object (never attributes set on
the Graph): the model's precision, threads for large layers, the debug dump."""
from __future__ import annotations

from dataclasses import dataclass, field

from .weights_blob import WeightPlacement


@dataclass(frozen=True)
class CodegenOptions:
    precision: str = "int8"  # the model's precision; a layer may carry its own (Node.precision)
    threads: int = 1  # standard profile, Linux boards: large layers split over this many threads
    debug_dump: bool = False  # hand every layer's output to <name>_debug_dump
    weight_layout: str = "int8"  # cortex_m_dsp GEMM/FC weights in flash: "int8" or "int16" (pre-widened)
    weights: WeightPlacement = field(default_factory=WeightPlacement)  # --weights: linked, region or file
    arena_region: str = ""  # --arena-region: the board memory region of the static arena ("": the default RAM)
