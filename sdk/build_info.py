"""The build information, typed: every key that code generation, the build and the reports
write about one model (or one firmware image of several), declared once with its type.

It stays a mapping (a TypedDict) because its serialisations are the contract users read:
manifest.json (and the manifest string compiled into the library), report.json and
`build --json` are this object written out, their keys and key order those of the stages
that filled it. Declaring the keys makes a type checker refuse a misspelt one where it is
written, and `check_keys` refuses it at run time wherever the information is written out,
so a key nobody declared never reaches a file silently.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, TypedDict


class BuildInfo(TypedDict, total=False):
    # code generation (sdk/codegen/emit.py): the model's interface, also compiled into the library
    name: str  # the C prefix of every symbol
    board: str
    arch: str  # the board's CPU architecture (e.g. x86_64, aarch64, armv7e-m)
    precision: str  # int8, fp16 or fp32
    arena_bytes: int
    inputs: list[dict[str, Any]]  # index, name, shape, size, dtype, scale, zero_point
    outputs: list[dict[str, Any]]
    weights: dict[str, Any]  # the weight blob's placement, section, region, file, bytes, crc32
    defines: dict[str, int]  # preprocessor definitions the build adds (the debug dump)
    weight_bytes: int
    layers: list[dict[str, Any]]  # one row per layer: op, kernel, MACs, weights, arena offset
    sources: list[str]  # the C files the build compiles, relative to the output folder
    fallbacks: list[dict[str, str]]  # layers left to the portable kernels, and why
    int4_unpacked: list[dict[str, str]]  # int4 layers whose kernel stores the values as int8 bytes, and why
    plugin_kernels: list[dict[str, str]]  # layers whose kernel a plugin provides
    cuda: dict[str, Any]  # CUDA boards: the device code's architectures, launches and bytes
    # the compiler (sdk/compiler.py)
    profile: str
    threads: int
    weight_layout: str  # int8 or int16 weights in flash (cortex_m_dsp)
    float_layers: list[str]  # layers kept in float (int8 builds)
    int16_layers: list[str]  # layers built 16x8 (int8 builds)
    range_splits: list[dict[str, Any]]  # outputs that keep one scale per Concat input (quant/range_split.py)
    weight_bits: str  # --weight-bits: 8, 4 or auto; "layers" (--int4-layers named them), "qdq" (the model's INT4 weights)
    int4_layers: list[str]  # layers with int4 weights (int8 builds)
    int8_weight_layers: list[dict[str, str]]  # --weight-bits 4/auto: layers that cannot have int4 weights, and why
    weight_values: dict[str, Any]  # weight value bytes as int8, as int4 and as stored, in all and per layer
    arena: list[dict[str, Any]]  # the planned buffers: tensor, offset, bytes
    tiling: dict[str, Any]  # --arena-budget met by row bands (planner/budget.py): region, bands, recompute
    # the build's memory report (sdk/commands.py, sdk/build_report.py)
    flash_bytes: int
    ram_bytes: int
    weights_bytes: int
    flash_budget: int
    ram_budget: int
    fits: bool
    flash: dict[str, Any]  # firmware: what takes the flash, by section
    ram: dict[str, Any]
    largest: list[dict[str, Any]]  # firmware: the largest symbols
    regions: dict[str, Any]  # firmware: every memory region's origin, budget and use
    stack: dict[str, Any]  # firmware: the deepest stack use found (-fstack-usage)
    artifacts: dict[str, str]  # kind (elf, bin, hex, so, report_json, ...) -> absolute path
    out_dir: str
    # a firmware image of several models (sdk/codegen/project.py, sdk/commands.py)
    image: bool
    shared_arena: bool  # one arena, the largest model's, for models that run one at a time
    models: list[BuildInfo]  # each model of the image
    models_memory: list[dict[str, Any]]  # each model's share of the image's flash and RAM
    model: str  # an image's model: its ONNX file
    memory: dict[str, Any]  # an image's model: its arena, weights, code and flash bytes
    harness_suffix: str  # an image's model: the suffix of its harness files (input_<name>.bin)


KEYS = frozenset(BuildInfo.__annotations__)


def check_keys(info: Mapping[str, Any]) -> None:
    """A key that BuildInfo does not declare is a bug of the stage that wrote it (a misspelling,
    or a new key not declared above): refused before the information is written out."""
    unknown = sorted(set(info) - KEYS)
    if unknown:
        raise KeyError(f"build information key {unknown[0]!r} is not declared in sdk/build_info.py")
    for model in info.get("models", []):
        check_keys(model)


def to_json(info: BuildInfo) -> str:
    """manifest.json: the build information as it stands, in the order the stages wrote it."""
    check_keys(info)
    return json.dumps(info, indent=2)
