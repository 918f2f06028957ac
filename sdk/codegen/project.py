"""The generated project a board builds, assembled in one place: the model's sources (emit),
the board's own files (a firmware harness and linker script, or a Linux test harness), and
the build spec (build.json) that SCons reads. `compile` writes it; `build` only runs SCons
on it."""
from __future__ import annotations

import json
from pathlib import Path

from ..boards import Board
from ..build_info import BuildInfo, to_json
from ..errors import UsageError
from .emit import ARENA_ALIGN
from .firmware import render_firmware_files
from .harness_types import with_types
from .linux_harness import render_linux_harness


def harness_context(info: dict) -> dict:
    """What the harness templates need of the model (names, sizes, each input's and output's
    types: codegen/harness_types.py)."""
    int8 = info["precision"] == "int8"
    keys = ("index", "size", "dtype", "scale")
    region = info.get("weights", {}).get("arena_region")
    section = f".{region}.bss.{info['name']}_harness" if region else ""
    context = with_types({"name": info["name"], "NAME": info["name"].upper(), "int8": int8,
                          "inputs": [{k: t[k] for k in keys} for t in info["inputs"]],
                          "outputs": [{k: t[k] for k in keys} for t in info["outputs"]],
                          "weights_file": info.get("weights", {}).get("file", "")
                          if info.get("weights", {}).get("placement") == "file" else "",
                          # the firmware harness's sample buffers go where the arena goes (--arena-region)
                          "buffer_section": section})
    return context


def add_board_files(board: Board, out_dir: Path, info: dict) -> None:
    """Firmware boards add their harness (a model source) and linker script; Linux boards with
    a harness add src/harness.c, built beside the library, not into it."""
    renderer = board.get("harness.renderer", "firmware" if board.kind == "firmware" else None)
    if renderer == "linux":
        render_linux_harness(board, out_dir, harness_context(info))
    elif renderer == "firmware":
        added = render_firmware_files(board, out_dir, harness_context(info))
        info["sources"] = info["sources"] + [s for s in added if s.endswith(".c")]


def weight_files(info: dict) -> list[list[str]]:
    """The weights files that go beside the library ([source, target]): those of --weights file."""
    models = info.get("models") or [info]
    return [[f"src/{m['weights']['file']}", f"build/{m['weights']['file']}"] for m in models
            if m.get("weights", {}).get("placement") == "file"]


def write_build_spec(info: dict, board: Board, out_dir: Path) -> None:
    spec = {"board": board.name, "board_dir": str(board.family_dir), "board_file": board.data.get("_file", ""),
            "name": info["name"], "kind": board.kind, "sources": info["sources"],
            "toolchain": board.get("toolchain", {}), "cflags": [], "defines": info.get("defines", {}),
            "copies": weight_files(info)}
    (out_dir / "build.json").write_text(json.dumps(spec, indent=2))


def assemble_project(board: Board, out_dir: Path, info: dict) -> None:
    """Everything but the model's own sources (already in out_dir/src): board files, build spec."""
    add_board_files(board, out_dir, info)
    write_build_spec(info, board, out_dir)


def aligned(size: int, align: int = ARENA_ALIGN) -> int:
    return -(-max(size, align) // align) * align


def shared_arena_section(image: str, infos: list[dict]) -> str:
    """The section of an image's shared arena: that of the models' arena region (they must agree)."""
    regions = {i.get("weights", {}).get("arena_region") or "" for i in infos}
    if len(regions) > 1:
        raise UsageError(f"the models of image '{image}' share one arena but name different arena regions "
                         f"({', '.join(sorted(r or 'ram' for r in regions))}): give them the same arena-region, "
                         f"or set shared-arena = false")
    region = regions.pop()
    return f".{region}.bss.{image}_arena" if region else ""


def image_context(image: str, infos: list[BuildInfo], shared_arena: bool) -> BuildInfo:
    """What the multi-model harness needs: each model's harness context, and the shared arena
    (the largest model's, aligned) when the models run one at a time."""
    return {"image": image, "IMAGE": image.upper(), "shared_arena": shared_arena,
            "arena_section": shared_arena_section(image, infos) if shared_arena else "",
            "arena_bytes": max(aligned(i["arena_bytes"]) for i in infos), "arena_align": ARENA_ALIGN,
            "models": [harness_context(i) for i in infos]}


def assemble_image(board: Board, out_dir: Path, image: str, infos: list[BuildInfo], shared_arena: bool) -> BuildInfo:
    """One firmware image of several models (each already in out_dir/src with its own prefix):
    the multi-model harness, the linker script, build.json and the image's manifest."""
    context = image_context(image, infos, shared_arena)
    added = render_firmware_files(board, out_dir, context, "firmware.multi_harness_template")
    sources = [s for info in infos for s in info["sources"]] + [s for s in added if s.endswith(".c")]
    info: BuildInfo = {"name": image, "board": board.name, "image": True, "precision": infos[0]["precision"],
            "profile": infos[0].get("profile"), "shared_arena": shared_arena,
            "arena_bytes": context["arena_bytes"] if shared_arena else sum(aligned(i["arena_bytes"]) for i in infos),
            "weight_bytes": sum(i["weight_bytes"] for i in infos), "sources": sources,
            "models": infos}
    write_build_spec(info, board, out_dir)
    (out_dir / "manifest.json").write_text(to_json(info))
    return info
