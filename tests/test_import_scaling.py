"""Import is linear in the node count (issue 38, defect 10: 2,000 nodes took 3.8 s, 20,000 would
have taken minutes). Timing is the benchmark's (benchmarks/bench_import.py); the test counts the
work instead, deterministically: how many times nodes are compared by value (a list's `in` or
`remove`) or the whole graph is scanned for a producer or consumer. Those were quadratic. And the
linear topological sort orders nodes exactly as the wave sort it replaced."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.frontend import load_model
from cuvil_sdk.ir import Graph, Node, Tensor
from cuvil_sdk.passes import optimize
from cuvil_sdk.profiles import get_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_import import chain_model


def test_import_of_a_chain_does_linear_work(tmp_path, monkeypatch):
    counts = {"compare": 0, "scan": 0}
    compare, producer, consumers = Node.__eq__, Graph.producer, Graph.consumers

    def counted_compare(self, other):
        counts["compare"] += 1
        return compare(self, other)

    def scanned(method):
        def wrapper(self, name):
            counts["scan"] += len(self.nodes)
            return method(self, name)
        return wrapper
    monkeypatch.setattr(Node, "__eq__", counted_compare)
    monkeypatch.setattr(Graph, "producer", scanned(producer))
    monkeypatch.setattr(Graph, "consumers", scanned(consumers))
    nodes = 3000
    g = load_model(chain_model(nodes, tmp_path / "chain.onnx"), get_profile("standard"), get_board("host"), {})
    optimize(g)
    assert len(g.nodes) == nodes
    assert counts["compare"] <= 2 * nodes and counts["scan"] <= 2 * nodes, counts


def wave_order(g: Graph) -> list[str]:
    """The sort the linear one replaced: repeatedly take, in list order, every node whose inputs are ready."""
    ready = set(g.inputs) | {k for k, t in g.tensors.items() if t.is_const} | {""}
    pending, ordered = list(g.nodes), []
    while pending:
        progress = [n for n in pending if all(i in ready for i in n.inputs)]
        assert progress
        for n in progress:
            ordered.append(n.name)
            ready.update(n.outputs)
        pending = [n for n in pending if n not in progress]
    return ordered


@pytest.mark.parametrize("seed", range(20))
def test_the_linear_sort_orders_as_the_wave_sort(seed):
    rng = random.Random(seed)
    g = Graph("dag")
    g.inputs = ["x"]
    g.tensors["x"] = Tensor("x", (1,), "float32")
    available = ["x"]
    for i in range(rng.randint(5, 60)):
        reads = rng.sample(available, k=min(len(available), rng.randint(1, 3)))
        outputs = [f"t{i}_{k}" for k in range(rng.randint(1, 2))]
        for o in outputs:
            g.tensors[o] = Tensor(o, (1,), "float32")
        g.nodes.append(Node("Add", f"n{i}", reads + ([""] if rng.random() < 0.2 else []), outputs))
        available += outputs
    rng.shuffle(g.nodes)
    expected = wave_order(g)
    g.toposort()
    assert [n.name for n in g.nodes] == expected


def test_a_cycle_is_still_refused():
    g = Graph("cycle")
    g.inputs = ["x"]
    for name in ("x", "a", "b"):
        g.tensors[name] = Tensor(name, (1,), "float32")
    g.nodes = [Node("Add", "n0", ["x", "b"], ["a"]), Node("Neg", "n1", ["a"], ["b"])]
    with pytest.raises(ValueError, match="cycle"):
        g.toposort()
