"""SUPPORTED_OPS.md is generated from the registry: `python -m cuvil_sdk.ops.docs > SUPPORTED_OPS.md`."""
from __future__ import annotations

from . import REGISTRY, supported_ops
from .registry import int8_rule_text


def render() -> str:
    lines = ["# Supported ONNX ops", "", "Generated from the op registry (`python -m cuvil_sdk.ops.docs`); "
             "do not edit.", "", "| op | int8 rule | notes |", "|---|---|---|"]
    for name in supported_ops():
        op = REGISTRY[name]
        lines.append(f"| {name} | {int8_rule_text(op)} | {op.summary} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
