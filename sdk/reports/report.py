"""What a build report says, computed here; the HTML template only places it.

report.json: model summary, per-layer table (op, kernel, MACs, weight bytes, activation
bytes, arena offset, instructions when profiled), memory by section against the
board's budget, the arena's live bytes over the layers, and the per-layer profile.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from ..codegen.lowering import TEMPLATES

CHART_WIDTH, CHART_HEIGHT = 720, 180


def live_bytes_per_step(buffers: list[dict], steps: int) -> list[int]:
    """Sum of the arena buffers alive at each layer (inputs live from the start)."""
    return [sum(b["bytes"] for b in buffers if max(b["first"], 0) <= s <= b["last"]) for s in range(steps)]


def bar_chart(values: list[float], labels: list[str], unit: str) -> dict[str, Any]:
    """Bar geometry for an inline SVG chart."""
    top = max(values, default=0) or 1
    width = CHART_WIDTH / max(len(values), 1)
    bars = [{"x": round(i * width + 1, 1), "w": round(max(width - 2, 1), 1),
             "h": round(v / top * (CHART_HEIGHT - 20), 1), "y": round(CHART_HEIGHT - v / top * (CHART_HEIGHT - 20), 1),
             "label": labels[i], "value": v} for i, v in enumerate(values)]
    return {"bars": bars, "width": CHART_WIDTH, "height": CHART_HEIGHT, "max": top, "unit": unit}


def build_report(info: dict, profile: list[dict] | None = None) -> dict:
    layers = [dict(layer) for layer in info["layers"]]
    if profile:
        by_index = {p["index"]: p for p in profile}
        for layer in layers:
            if layer["index"] in by_index:
                layer["instructions"] = by_index[layer["index"]].get("instructions")
    steps = len(layers)
    live = live_bytes_per_step(info.get("arena", []), steps)
    memory = {key: info[key] for key in ("flash_bytes", "ram_bytes", "arena_bytes", "flash_budget", "ram_budget",
                                         "flash", "ram", "fits", "stack") if key in info}
    return {
        "model": {"name": info["name"], "board": info["board"], "profile": info.get("profile"),
                  "precision": info["precision"], "inputs": info["inputs"], "outputs": info["outputs"],
                  "weight_bytes": info.get("weight_bytes"), "macs": sum(l["macs"] for l in layers),
                  "layers": steps, "float_layers": info.get("float_layers", []),
                  "int16_layers": info.get("int16_layers", [])},
        "layers": layers,
        "memory": memory,
        "arena": {"bytes": info["arena_bytes"], "live_bytes_per_layer": live, "peak_live_bytes": max(live, default=0),
                  "buffers": info.get("arena", [])},
        "profiled": bool(profile),
    }


def render_html(report: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    labels = [f"{l['index']} {l['op']}" for l in report["layers"]]
    arena_chart = bar_chart(report["arena"]["live_bytes_per_layer"], labels, "bytes live")
    profile_chart = None
    if report["profiled"]:
        profile_chart = bar_chart([l.get("instructions") or 0 for l in report["layers"]], labels, "instructions")
    return env.get_template("report/report.html.j2").render(report=report, arena_chart=arena_chart,
                                                            profile_chart=profile_chart)


def write_report(info: dict, out_dir: Path, profile: list[dict] | None = None) -> dict:
    report = build_report(info, profile)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / "report.html").write_text(render_html(report))
    return report
