"""What a build report says, computed here; the HTML template only places it.

report.json: model summary, per-layer table (op, kernel, MACs, weight bytes, activation
bytes, arena offset, instructions when profiled), memory in KiB against the board's budget
(the model's share apart from the harness's), weights as stored against the portable int8
layout, the weight values as int8, as int4 and as stored (builds that set --weight-bits or
have int4 layers), the arena's live bytes over the layers, and the per-layer profile
(`run -o DIR` on QEMU boards rewrites the report with it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from ..build_info import BuildInfo, check_keys
from ..paths import TEMPLATES

CHART_WIDTH, CHART_HEIGHT = 760, 240
# plot area inside the SVG: room on the left for the y tick labels, below for the x labels
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 78, 12, 12, 44
Y_TICKS = 4
MAX_X_LABELS = 24
NAME_WIDTH = 36  # longer layer names are shortened in the table (the full name on hover)
# firmware memory categories (build_report.memory_use) that belong to the model itself;
# the others are the test harness, board support, C libraries and the stack the board reserves
MODEL_CATEGORIES = ("weights", "model", "arena")
KIB = 1024.0


def live_bytes_per_step(buffers: list[dict], steps: int) -> list[int]:
    """The arena bytes in use at each layer (inputs live from the start): the union of the
    buffers alive then, so an output planned over the input it overlaps counts once."""
    return [covered([(b["offset"], b["offset"] + b["bytes"]) for b in buffers if max(b["first"], 0) <= s <= b["last"]])
            for s in range(steps)]


def covered(spans: list[tuple[int, int]]) -> int:
    """Bytes covered by the union of [start, end) spans."""
    total, reach = 0, 0
    for start, end in sorted(spans):
        total += max(0, end - max(start, reach))
        reach = max(reach, end)
    return total


def tick_text(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / KIB:.1f} KiB" if value >= KIB else f"{value:.0f} B"
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


def bar_chart(values: list[float], labels: list[str], unit: str, y_title: str) -> dict[str, Any]:
    """Bar geometry, tick marks and axis titles for an inline SVG chart."""
    top = max(values, default=0) or 1
    plot_w = CHART_WIDTH - PLOT_LEFT - PLOT_RIGHT
    plot_h = CHART_HEIGHT - PLOT_TOP - PLOT_BOTTOM
    base = PLOT_TOP + plot_h
    width = plot_w / max(len(values), 1)
    bars = [{"x": round(PLOT_LEFT + i * width + 1, 1), "w": round(max(width - 2, 1), 1),
             "h": round(v / top * plot_h, 1), "y": round(base - v / top * plot_h, 1),
             "label": labels[i], "value": v} for i, v in enumerate(values)]
    every = max(1, -(-len(values) // MAX_X_LABELS))
    x_ticks = [{"x": round(PLOT_LEFT + (i + 0.5) * width, 1), "text": str(i)} for i in range(0, len(values), every)]
    y_ticks = [{"y": round(base - k / Y_TICKS * plot_h, 1), "text": tick_text(top * k / Y_TICKS, unit)}
               for k in range(Y_TICKS + 1)]
    return {"bars": bars, "width": CHART_WIDTH, "height": CHART_HEIGHT, "max": top, "unit": unit,
            "left": PLOT_LEFT, "right": CHART_WIDTH - PLOT_RIGHT, "top": PLOT_TOP, "base": base,
            "x_ticks": x_ticks, "y_ticks": y_ticks, "x_title": "layer (index in the table below)",
            "y_title": y_title, "y_title_x": 14, "y_title_y": round(PLOT_TOP + plot_h / 2, 1),
            "x_title_y": CHART_HEIGHT - 6}


def share(used: int, budget: int | None) -> float | None:
    return round(100.0 * used / budget, 2) if budget else None


def memory_row(what: str, used: int, budget: int | None, parts: dict[str, int]) -> dict[str, Any]:
    """One region: KiB used, budget and share, with the model's part apart from the harness's."""
    model = sum(v for k, v in parts.items() if k in MODEL_CATEGORIES)
    return {"what": what, "bytes": used, "kib": round(used / KIB, 2),
            "budget_kib": round(budget / KIB, 2) if budget else None, "share_percent": share(used, budget),
            "model_kib": round(model / KIB, 2) if parts else None,
            "harness_kib": round((used - model) / KIB, 2) if parts else None,
            "parts_kib": {k: round(v / KIB, 2) for k, v in parts.items()}}


def arena_budget(info: dict) -> int | None:
    """The budget of the region that holds the arena (--arena-region), else the RAM's."""
    region = (info.get("weights") or {}).get("arena_region")
    if region and region.upper() in info.get("regions", {}):
        return info["regions"][region.upper()]["budget"]
    return info.get("ram_budget")


def memory_summary(info: dict) -> dict[str, Any]:
    """flash and RAM rows, plus the arena against the RAM budget."""
    rows = [memory_row("flash", info.get("flash_bytes", 0), info.get("flash_budget"), info.get("flash", {})),
            memory_row("RAM", info.get("ram_bytes", 0), info.get("ram_budget"), info.get("ram", {})),
            memory_row("arena", info.get("arena_bytes", 0), arena_budget(info), {})]
    further = list(info.get("regions", {}).items())[2:]  # after FLASH and RAM: the board's memory.regions
    rows += [memory_row(name, r["used"], r["budget"], r["bytes"]) for name, r in further]
    return {"rows": rows, "fits": info.get("fits"), "stack": info.get("stack"),
            "note": "model = weights + model code + arena; harness = test harness, board support, C library, "
                    "the stack the board reserves and alignment"}


def weights_summary(info: dict, layers: list[dict]) -> dict[str, Any]:
    """Weight bytes as stored against the portable (int8) layout of the same weights."""
    stored = int(info.get("weight_bytes") or 0)
    portable = sum(int(layer.get("portable_weight_bytes") or 0) for layer in layers)
    ratio = round(stored / portable, 2) if portable else None
    note = ""
    if portable and stored > portable:
        note = (f"the board's kernels store the weights in a wider layout ({ratio}x the int8 size: "
                f"the Cortex-M DSP kernels widen int8 weights to int16 for SMLAD)")
    placed = info.get("weights") or {}
    return {"stored_bytes": stored, "stored_kib": round(stored / KIB, 2), "int8_layout_bytes": portable,
            "int8_layout_kib": round(portable / KIB, 2), "ratio": ratio, "note": note,
            "placement": placed.get("placement", "linked"), "region": placed.get("region"),
            "section": placed.get("section"), "file": placed.get("file"), "blob_bytes": placed.get("bytes"),
            "crc32": placed.get("crc32"), "arena_region": placed.get("arena_region")}


def weight_bits_summary(info: dict) -> dict[str, Any] | None:
    """Builds that set --weight-bits or have int4 layers: the weight values as int8, as int4 and as
    stored (compiler.weight_values), with the layers that keep int8 bytes and why."""
    values = info.get("weight_values")
    if values is None:
        return None
    return {"mode": info["weight_bits"], "int4_layers": info.get("int4_layers", []),
            **{k: v for k, v in values.items() if k != "layers"},
            "int8_weight_layers": info.get("int8_weight_layers", []), "int4_unpacked": info.get("int4_unpacked", []),
            "note": "weight values only (biases and requantization constants apart): int8 one byte each, int4 two "
                    "per byte; stored: int4 layers packed unless their kernel keeps int8 bytes"}


def with_profile(layers: list[dict], profile: list[dict] | None) -> list[dict]:
    layers = [dict(layer) for layer in layers]
    by_index = {p["index"]: p for p in profile or []}
    for layer in layers:
        if layer["index"] in by_index:
            layer["instructions"] = by_index[layer["index"]].get("instructions")
    return layers


def build_report(info: dict, profile: list[dict] | None = None) -> dict:
    layers = with_profile(info["layers"], profile)
    steps = len(layers)
    live = live_bytes_per_step(info.get("arena", []), steps)
    memory = {key: info[key] for key in ("flash_bytes", "ram_bytes", "arena_bytes", "flash_budget", "ram_budget",
                                         "flash", "ram", "fits", "stack", "regions") if key in info}
    memory["summary"] = memory_summary(info)
    report = {
        "model": {"name": info["name"], "board": info["board"], "profile": info.get("profile"),
                  "precision": info["precision"], "inputs": info["inputs"], "outputs": info["outputs"],
                  "weight_bytes": info.get("weight_bytes"), "macs": sum(l["macs"] for l in layers),
                  "layers": steps, "float_layers": info.get("float_layers", []),
                  "int16_layers": info.get("int16_layers", [])},
        "layers": layers,
        "memory": memory,
        "weights": weights_summary(info, layers),
        "weight_bits": weight_bits_summary(info),
        "arena": {"bytes": info["arena_bytes"], "live_bytes_per_layer": live, "peak_live_bytes": max(live, default=0),
                  "buffers": info.get("arena", [])},
        "tiling": info.get("tiling"),  # --arena-budget: the layers run in row bands, the recompute
        "profiled": bool(profile),
        "fallbacks": info.get("fallbacks", []),
    }
    if info.get("range_splits"):  # outputs that keep one scale per Concat input (quant/range_split.py)
        report["range_splits"] = info["range_splits"]
    return report


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """A long layer name with its middle elided, so the table keeps its columns on screen."""
    if len(name) <= width:
        return name
    keep = width - 1
    return name[:keep // 2] + "\u2026" + name[-(keep - keep // 2):]


def render_html(report: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = short_name
    labels = [f"{l['index']} {l['op']} {l['name']}" for l in report["layers"]]
    arena_chart = bar_chart(report["arena"]["live_bytes_per_layer"], labels, "bytes", "bytes live in the arena")
    profile_chart = None
    if report["profiled"]:
        profile_chart = bar_chart([l.get("instructions") or 0 for l in report["layers"]], labels, "instructions",
                                  "guest instructions")
    return env.get_template("report/report.html.j2").render(report=report, arena_chart=arena_chart,
                                                            profile_chart=profile_chart)


def write_report(info: BuildInfo, out_dir: Path, profile: list[dict] | None = None, name: str = "report") -> dict:
    """out_dir/<name>.json and <name>.html (an image of several models writes one per model)."""
    check_keys(info)
    report = build_report(info, profile)
    (out_dir / f"{name}.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / f"{name}.html").write_text(render_html(report))
    return report
