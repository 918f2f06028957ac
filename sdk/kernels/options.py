"""What a build asks of code generation, in one explicit object (never attributes set on
the Graph): the model's precision, threads for large layers, the debug dump, where the
weights go. It stands beside the kernel contract because the kernel sets' rules read it
(threads, weight_layout) and rules import nothing of code generation; codegen/weights_blob.py
chooses the WeightPlacement from the board and the command line."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WeightPlacement:
    """Where the weight blob goes: the placement, and for `region` the board's region."""

    placement: str = "linked"
    region: str = ""  # the region's name in the board file (placement "region" only)

    def section(self, prefix: str) -> str:
        """The ELF section of the blob; `region` sections are the linker script's (.<region>.rodata.*)."""
        if self.placement == "region":
            return f".{self.region}.rodata.{prefix}_weights"
        return f".rodata.{prefix}_weights"


@dataclass(frozen=True)
class CodegenOptions:
    precision: str = "int8"  # the model's precision; a layer may carry its own (Node.precision)
    threads: int = 1  # standard profile, Linux boards: large layers split over this many threads
    debug_dump: bool = False  # hand every layer's output to <name>_debug_dump
    weight_layout: str = "int8"  # cortex_m_dsp GEMM/FC weights in flash: "int8" or "int16" (pre-widened)
    weights: WeightPlacement = field(default_factory=WeightPlacement)  # --weights: linked, region or file
    arena_region: str = ""  # --arena-region: the board memory region of the static arena ("": the default RAM)
    # the manifest's per-layer weight bits and int8/int4 weight bytes: in builds that set --weight-bits or have
    # int4 layers (the others' manifests stay as they were)
    weight_bits_rows: bool = False
