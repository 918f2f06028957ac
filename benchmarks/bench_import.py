"""How the model import (frontend: parse, checks, IR, shape inference; then the graph passes) scales
with the node count: a chain of N elementwise nodes, built here with onnx.helper. Issue 38's goal:
linear, a 20,000-node chain imported in under 5 s on a 2-core machine. Wall time, best of 3.

    .venv/bin/python benchmarks/bench_import.py [--nodes 2000 20000] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.frontend import load_model
from cuvil_sdk.passes import optimize
from cuvil_sdk.profiles import get_profile


def chain_model(nodes: int, path: Path) -> Path:
    """x -> Neg -> Relu -> Neg -> ... : nothing folds or fuses, every node stays."""
    graph_nodes, previous = [], "x"
    for i in range(nodes):
        graph_nodes.append(helper.make_node("Relu" if i % 2 else "Neg", [previous], [f"t{i}"], name=f"n{i}"))
        previous = f"t{i}"
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def timed_import(path: Path) -> tuple[float, float]:
    """(frontend seconds, passes seconds), the best of three."""
    best = (float("inf"), float("inf"))
    for _ in range(3):
        started = time.perf_counter()
        g = load_model(path, get_profile("standard"), get_board("host"), {})
        loaded = time.perf_counter()
        optimize(g)
        best = min(best, (loaded - started, time.perf_counter() - loaded), key=sum)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2000, 5000, 20000])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            frontend, passes = timed_import(chain_model(n, Path(tmp) / f"chain{n}.onnx"))
            rows.append({"nodes": n, "frontend_s": round(frontend, 3), "passes_s": round(passes, 3),
                         "import_s": round(frontend + passes, 3), "us_per_node": round(1e6 * (frontend + passes) / n, 1)})
            print(f"{n:6} nodes: frontend {frontend:6.2f} s, passes {passes:6.2f} s, "
                  f"{rows[-1]['us_per_node']:7.1f} us per node (wall time, best of 3)", file=sys.stderr)
    if args.json:
        print(json.dumps({"unit": "seconds of wall time, best of 3", "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
