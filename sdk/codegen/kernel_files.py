"""Where a kernel's C source comes from: a file of its own (sdk/templates/<set>/<kernel>.h,
CUDA's .cuh), a template of its own (<set>/<kernel>.h.j2, rendered with its declaration: the
SIMD kernels on the shared driver simd/driver.j2), or a family template
(<set>/<family>.h.j2) rendered for one element type.

A family template serves every kernel named <family>_<variant> whose variant is a key of
VARIANTS: conv2d.h.j2 gives conv2d_s8, conv2d_s16 and conv2d_f32. Python states what differs
between the variants (element, weight, bias and accumulator types, whether the kernel
requantizes); the template only renders. A pair family (`{# pairs: A B > C D #}` on its first
line) serves <family>_<a>_<b> for a in A B, b in C D: cast.h.j2 gives cast_f32_s64
(`a` is its input's variant, `v` its output's), gather.h.j2 gives gather_f32_s64 (data, indices).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable, NamedTuple

import jinja2

from ..kernels.contract import KernelInterfaceError, declarations
from ..kernels.kernel_sets import KERNEL_SETS
from ..paths import TEMPLATES

class PluginSource(NamedTuple):
    """A kernel source that a plugin provides: who provides it, a function returning the C
    text that is copied into the project, and the user's file it comes from (`template`: a
    `.h.j2` rendered for one node, so its lines are not the copy's; sdk/codegen/plugin_lines.py
    maps them back when the compiler reports an error in the copy)."""

    plugin: str
    text: Callable[[], str]
    path: Path
    template: bool = False


# Kernel sources that plugins provide (sdk/plugins.py), by (set, kernel). An entry for a
# built-in kernel replaces that kernel's own source (a hand-tuned version); the plugin's
# files stay in the plugin's folder.
PLUGIN_SOURCES: dict[tuple[str, str], PluginSource] = {}


def plugin_provider(kernel_set: str, name: str) -> str | None:
    """The plugin that provides kernel `name` of `kernel_set`, None for the SDK's own."""
    entry = PLUGIN_SOURCES.get((kernel_set, name))
    return entry.plugin if entry else None


# What each element-type variant of a family means (shared by every family and set).
VARIANTS: dict[str, dict[str, object]] = {
    "s8": {"name": "s8", "t": "int8_t", "w": "int8_t", "bias": "int32_t", "acc": "int32_t", "quant": True,
           "wide": False, "what": "int8", "lowest": "-128"},
    # int4 weights packed two per byte (kernels/int4.py), int8 activations: the s8 rule
    "s8w4": {"name": "s8w4", "t": "int8_t", "w": "uint8_t", "bias": "int32_t", "acc": "int32_t", "quant": True,
             "wide": False, "w4": True, "what": "int8 (int4 weights, two per byte)", "lowest": "-128"},
    "s16": {"name": "s16", "t": "int16_t", "w": "int8_t", "bias": "int64_t", "acc": "int64_t", "quant": True,
            "wide": True, "what": "16x8 (int16 activations, int8 weights, int64 accumulator)", "lowest": "-32768"},
    "f32": {"name": "f32", "t": "float", "w": "float", "bias": "float", "acc": "float", "quant": False,
            "wide": False, "what": "float", "lowest": "-3.4e38f"},
    # fp16 storage (cuvil_f16: __fp16 on Arm), float32 arithmetic: the f32 loop on half loads
    # and stores; bias stays float32 (it is added once per output, its bytes are few).
    "f16": {"name": "f16", "t": "cuvil_f16", "w": "cuvil_f16", "bias": "float", "acc": "float", "quant": False,
            "wide": False, "what": "fp16 (float32 arithmetic on half storage)", "lowest": "-65504.0f"},
    # integer and bool tensors (ir.INTEGER_DTYPES: indices, token ids, masks): exact values, no
    # quantization; `wide` is the type their sums and products are computed in, `lowest` and
    # `highest` the type's range, `float` whether the variant is a float type
    "s32": {"name": "s32", "t": "int32_t", "w": "int32_t", "bias": "int32_t", "acc": "int64_t", "quant": False,
            "wide": False, "what": "int32", "lowest": "INT32_MIN", "highest": "INT32_MAX"},
    "s64": {"name": "s64", "t": "int64_t", "w": "int64_t", "bias": "int64_t", "acc": "int64_t", "quant": False,
            "wide": False, "what": "int64", "lowest": "INT64_MIN", "highest": "INT64_MAX"},
    "u8": {"name": "u8", "t": "uint8_t", "w": "uint8_t", "bias": "int32_t", "acc": "int32_t", "quant": False,
           "wide": False, "what": "uint8", "lowest": "0", "highest": "UINT8_MAX"},
    "b8": {"name": "b8", "t": "bool", "w": "bool", "bias": "int32_t", "acc": "int32_t", "quant": False,
           "wide": False, "what": "bool", "lowest": "false", "highest": "true"},
}
VARIANTS["s8"]["highest"], VARIANTS["s8w4"]["highest"], VARIANTS["s16"]["highest"] = "127", "127", "32767"
VARIANTS["f32"]["highest"], VARIANTS["f16"]["highest"] = "3.4e38f", "65504.0f"
# what the integer families read of a variant: its C type, whether it is a float, its range
for _name, _v in VARIANTS.items():
    _v["float"] = _name in ("f32", "f16")
    _v["bits"] = {"s8": 8, "s8w4": 8, "u8": 8, "b8": 8, "s16": 16, "f16": 16, "s32": 32, "f32": 32, "s64": 64}[_name]


def extension(kernel_set: str) -> str:
    """The file extension of the set's kernel sources (its KernelSet says)."""
    return KERNEL_SETS[kernel_set].extension


@lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def family_variants(template: Path) -> list[str]:
    """The variants a family template renders, from its first line: `{# variants: s8 f32 #}`."""
    first = template.read_text().split("\n", 1)[0]
    if not (first.startswith("{#") and "variants:" in first):
        raise KernelInterfaceError(f"{template} does not start with {{# variants: ... #}}")
    return first.split("variants:", 1)[1].replace("#}", "").split()


def is_family(template: Path) -> bool:
    """A family template (its first line names variants), not a kernel whose name ends like one
    (lstm_s8 is a kernel; lstm_s8_s16state is not its variant)."""
    first = template.read_text().split("\n", 1)[0]
    return first.startswith("{#") and "variants:" in first


def family_of(kernel_set: str, name: str) -> tuple[str, str] | None:
    """(family template path relative to the templates folder, variant) for a kernel that a
    family template serves, else None."""
    family, _, variant = name.rpartition("_")
    template = f"{kernel_set}/{family}{extension(kernel_set)}.j2"
    if (TEMPLATES / template).is_file() and is_family(TEMPLATES / template) \
            and variant in family_variants(TEMPLATES / template):
        return template, variant
    return None


def pair_variants(template: Path) -> list[tuple[str, str]] | None:
    """The (a, b) variant pairs a pair family renders, from its first line `{# pairs: A.. > B.. #}`
    (every a of the left with every b of the right); None for other templates."""
    first = template.read_text().split("\n", 1)[0]
    if not (first.startswith("{#") and "pairs:" in first):
        return None
    left, right = first.split("pairs:", 1)[1].replace("#}", "").split(">")
    return [(a, b) for a in left.split() for b in right.split()]


def pair_family_of(kernel_set: str, name: str) -> tuple[str, str, str] | None:
    """(template, a, b) for a kernel <family>_<a>_<b> of a pair family, else None."""
    parts = name.rsplit("_", 2)
    if len(parts) != 3:
        return None
    family, a, b = parts
    template = TEMPLATES / kernel_set / f"{family}{extension(kernel_set)}.j2"
    if template.is_file() and (a, b) in (pair_variants(template) or []):
        return f"{kernel_set}/{template.name}", a, b
    return None


# Kernel features (KernelCall.features) a template renders, each a flag of the template: a kernel's
# source carries a feature's code only in builds whose calls need it (the others get it as before).
# conv2d_s8_dsp and fc_s8_dsp: w4, the int4 (nibble) paths; int8, the int8/int16 weight paths, which a
# build whose calls are all int4 leaves out (a template renders them when neither feature is asked).
FEATURES = ("w4", "int8")


def kernel_source(kernel_set: str, name: str, features: frozenset[str] = frozenset()) -> str:
    """The C (or CUDA) source that defines kernel `name` of `kernel_set`, with the features the
    model's calls of it need (KernelCall.features)."""
    if (kernel_set, name) in PLUGIN_SOURCES:
        return PLUGIN_SOURCES[kernel_set, name].text()
    own = TEMPLATES / kernel_set / f"{name}{extension(kernel_set)}"
    unknown = sorted(set(features) - set(FEATURES))
    if unknown or (features and not own.with_name(own.name + ".j2").is_file()):
        raise KernelInterfaceError(f"kernel {name} of set {kernel_set} has no feature {', '.join(sorted(features))}")
    if own.is_file():
        return own.read_text()
    if own.with_name(own.name + ".j2").is_file():  # a kernel on the shared SIMD driver (simd/driver.j2)
        template = f"{kernel_set}/{own.name}.j2"
        flags = {f: f in features for f in FEATURES}
        return environment().get_template(template).render(kernel=name, decl=declarations(kernel_set)[name], **flags)
    twin = int4_twin(kernel_set, name)
    if twin:  # a SIMD kernel on int4 weights: its int8 template with w4 (templates/simd/int4.j2)
        return environment().get_template(twin).render(kernel=name, decl=declarations(kernel_set)[name], w4=True)
    twin = amx_twin(kernel_set, name)
    if twin:  # an int8 kernel with its AMX-INT8 tile variant: its template with amx
        return environment().get_template(twin).render(kernel=name, decl=declarations(kernel_set)[name], w4=False,
                                                        amx=True)
    pair = pair_family_of(kernel_set, name)
    if pair is not None:
        template, a, b = pair
        return environment().get_template(template).render(kernel=name, a=VARIANTS[a], v=VARIANTS[b])
    family = family_of(kernel_set, name)
    if family is None:
        raise KernelInterfaceError(f"kernel {name} of set {kernel_set} has no source "
                                   f"({own.name} or a family template)")
    template, variant = family
    return environment().get_template(template).render(kernel=name, v=VARIANTS[variant])


def int4_twin(kernel_set: str, name: str) -> str | None:
    """The int8 template that renders the int4-weight kernel `name` (<family>_s8w4_<set>: the
    <family>_s8_<set> template with w4), or None."""
    if "_s8w4_" not in name:
        return None
    template = f"{kernel_set}/{name.replace('_s8w4_', '_s8_')}{extension(kernel_set)}.j2"
    return template if (TEMPLATES / template).is_file() else None


def amx_twin(kernel_set: str, name: str) -> str | None:
    """The template that renders <family>_s8amx_<set> (the AMX-INT8 tile variant with the others):
    the <family>_s8_<set> template with amx, or None."""
    if "_s8amx_" not in name:
        return None
    template = f"{kernel_set}/{name.replace('_s8amx_', '_s8_')}{extension(kernel_set)}.j2"
    return template if (TEMPLATES / template).is_file() else None


def kernels_with_sources(kernel_set: str) -> list[str]:
    """Every kernel of a set that has a source: files of their own and family variants."""
    ext = extension(kernel_set)
    folder = TEMPLATES / kernel_set
    names = {p.name[:-len(ext)] for p in folder.glob(f"*{ext}") if not p.name.startswith("cuvil_")}
    for template in folder.glob(f"*{ext}.j2"):
        stem = template.name[:-len(ext) - 3]
        if template.read_text().startswith("{# variants:"):
            names |= {f"{stem}_{v}" for v in family_variants(template)}
        elif pair_variants(template) is not None:
            names |= {f"{stem}_{a}_{b}" for a, b in pair_variants(template)}
        else:
            names.add(stem)
    names |= {n for n in declarations(kernel_set) if int4_twin(kernel_set, n) or amx_twin(kernel_set, n)}
    return sorted(names)
