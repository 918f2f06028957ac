"""SUPPORTED_OPS.md is generated from the registry: `python -m cuvil_sdk.ops.docs > SUPPORTED_OPS.md`."""
from __future__ import annotations

from . import REGISTRY, supported_ops


def render() -> str:
    lines = ["# Supported ONNX ops", "", "Generated from the op registry (`python -m cuvil_sdk.ops.docs`); "
             "do not edit.", "", "| op | int8 rule | notes |", "|---|---|---|"]
    for name in supported_ops():
        op = REGISTRY[name]
        if op.int8_rule:
            rule = op.int8_rule
        elif op.alias:
            rule = "alias (no code)"
        elif op.output_qparams == "same":
            rule = "keeps input scale"
        else:
            rule = "requantized"
        lines.append(f"| {name} | {rule} | {op.summary} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
