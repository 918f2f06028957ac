"""Protobuf-level mutations of ONNX models for the loader fuzz test (test_loader_fuzz.py).

Each mutation takes a ModelProto (a copy: it may change it in place) and a seeded
random.Random, and returns the bytes of the file to compile: most work on the parsed model
(nodes deleted or duplicated, dangling or cyclic tensor names, wrong element types, huge
dims, bad attributes, foreign opsets), the last ones on the serialized bytes (flipped,
truncated, duplicated). Seeded: a failure names the seed that reproduces it.
"""
from __future__ import annotations

import random
from typing import Callable

import onnx
from onnx import TensorProto, helper

ELEM_TYPES = [TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.INT64,
              TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.STRING, 0, 99]
HUGE = [0, -1, 2**31, 2**40, 2**62, 7]
OPS = ["Conv", "Relu", "Add", "Reshape", "Gemm", "Slice", "Gather", "Resize", "Split", "Concat", "Shape", "Range",
       "Where", "Expand", "Tile", "ConstantOfShape", "MaxPool", "Transpose", "Softmax", "Loop", "Foo", ""]

Mutation = Callable[[onnx.ModelProto, random.Random], bytes]


def pick_node(m: onnx.ModelProto, rng: random.Random) -> onnx.NodeProto:
    return m.graph.node[rng.randrange(len(m.graph.node))]


def tensor_names(m: onnx.ModelProto) -> list[str]:
    names = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    return names + [o for n in m.graph.node for o in n.output]


def delete_node(m, rng):
    del m.graph.node[rng.randrange(len(m.graph.node))]
    return m.SerializeToString()


def duplicate_node(m, rng):
    m.graph.node.insert(rng.randrange(len(m.graph.node) + 1), pick_node(m, rng))
    return m.SerializeToString()


def dangling_input(m, rng):
    node = pick_node(m, rng)
    if node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(["nowhere", "", "x" * 300, "../../etc/passwd"])
    else:
        node.input.append("nowhere")
    return m.SerializeToString()


def make_cycle(m, rng):
    """A node reads the output of itself or of a later node."""
    k = rng.randrange(len(m.graph.node))
    later = m.graph.node[rng.randrange(k, len(m.graph.node))]
    node = m.graph.node[k]
    if node.input and later.output:
        node.input[rng.randrange(len(node.input))] = later.output[0]
    return m.SerializeToString()


def rewire_input(m, rng):
    """A node reads another existing tensor (wrong shapes, wrong types, graph outputs)."""
    node = pick_node(m, rng)
    if node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(tensor_names(m))
    return m.SerializeToString()


def wrong_dtype(m, rng):
    items = list(m.graph.initializer)
    if items and rng.random() < 0.6:
        t = rng.choice(items)
        t.data_type = rng.choice(ELEM_TYPES)
    else:
        rng.choice(list(m.graph.input) + list(m.graph.output)).type.tensor_type.elem_type = rng.choice(ELEM_TYPES)
    return m.SerializeToString()


def huge_dims(m, rng):
    if m.graph.initializer and rng.random() < 0.5:
        t = rng.choice(list(m.graph.initializer))
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(HUGE)
        else:
            t.dims.append(rng.choice(HUGE))
    else:
        vi = rng.choice(list(m.graph.input) + list(m.graph.output))
        dims = vi.type.tensor_type.shape.dim
        if dims:
            d = dims[rng.randrange(len(dims))]
            if rng.random() < 0.3:
                d.dim_param = "N"
            else:
                d.dim_value = rng.choice(HUGE)
        else:
            vi.type.tensor_type.shape.dim.add().dim_value = rng.choice(HUGE)
    return m.SerializeToString()


def constant_value(m, rng):
    """A constant input (initializer) with other values: out-of-range indices, zero steps,
    negative sizes, NaN, empty."""
    if not m.graph.initializer:
        return m.SerializeToString()
    t = rng.choice(list(m.graph.initializer))
    values = rng.choice([[0], [-1], [2**40], [-(2**62)], [0, 0, 0, 0], [], [1, -5, 3, 9], [7] * 9])
    dtype = t.data_type if t.data_type in (TensorProto.INT64, TensorProto.INT32) else TensorProto.INT64
    if rng.random() < 0.3:
        dtype, values = TensorProto.FLOAT, rng.choice([[float("nan")], [float("inf"), 1.0], [1e38, -1e38], []])
    if dtype == TensorProto.INT32:
        values = [min(max(v, -2**31), 2**31 - 1) for v in values]
    dims = [] if len(values) == 1 and rng.random() < 0.3 else [len(values)]
    t.CopyFrom(helper.make_tensor(t.name, dtype, dims, values))
    return m.SerializeToString()


def bad_attribute(m, rng):
    node = pick_node(m, rng)
    if node.attribute and rng.random() < 0.4:
        del node.attribute[rng.randrange(len(node.attribute))]
        return m.SerializeToString()
    name = rng.choice([a.name for a in node.attribute] + ["axis", "perm", "pads", "kernel_shape", "strides", "mode",
                                                            "split", "blocksize", "to", "value", "group", "axes"])
    value = rng.choice([0, -1, 2**40, -(2**62), 1.5, "garbage", b"\xff\xfe", [], [0], [-3, 2**33], [1.0, 2.0],
                        ["a", "b"], helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0])])
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    try:
        node.attribute.append(helper.make_attribute(name, value))
    except (ValueError, TypeError):
        pass
    return m.SerializeToString()


def change_op(m, rng):
    pick_node(m, rng).op_type = rng.choice(OPS)
    return m.SerializeToString()


def change_opset(m, rng):
    if m.opset_import:
        m.opset_import[0].version = rng.choice([1, 6, 7, 9, 10, 11, 12, 17, 18, 21, 22, 30, 1000, -1])
    if rng.random() < 0.2:
        m.ir_version = rng.choice([0, 1, 3, 99])
    return m.SerializeToString()


def drop_graph_io(m, rng):
    which = rng.choice(["input", "output", "initializer"])
    items = getattr(m.graph, which)
    if items:
        del items[rng.randrange(len(items))]
    elif which == "output":
        m.graph.output.add().name = "ghost"
    return m.SerializeToString()


ODD_NAMES = ["a\nb", "*/ int x; /*", "", " ", "é\u202e", "x" * 5000, "int", "\x00", "../out", "%s%n"]


def odd_names(m, rng):
    """A tensor or node renamed everywhere it is used (or only in one place) to a name that
    breaks lines, C comments or paths."""
    new = rng.choice(ODD_NAMES)
    if rng.random() < 0.3:
        pick_node(m, rng).name = new
        return m.SerializeToString()
    old = rng.choice(tensor_names(m))
    everywhere = rng.random() < 0.7
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.name == old:
            vi.name = new
    for t in m.graph.initializer:
        if t.name == old:
            t.name = new
    for n in m.graph.node:
        for names in (n.input, n.output):
            for i, name in enumerate(names):
                if name == old and (everywhere or rng.random() < 0.5):
                    names[i] = new
    return m.SerializeToString()


def flip_bytes(m, rng):
    data = bytearray(m.SerializeToString())
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate_bytes(m, rng):
    data = m.SerializeToString()
    return data[:rng.randrange(len(data))]


def splice_bytes(m, rng):
    """A slice of the file repeated inside it (duplicated fields, or nonsense)."""
    data = m.SerializeToString()
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randint(1, 64))
    at = rng.randrange(len(data))
    return data[:at] + data[a:b] + data[at:]


MUTATIONS: list[Mutation] = [delete_node, duplicate_node, dangling_input, make_cycle, rewire_input, wrong_dtype,
                             huge_dims, constant_value, bad_attribute, change_op, change_opset, drop_graph_io,
                             odd_names, flip_bytes, truncate_bytes, splice_bytes]


def mutate(model: onnx.ModelProto, seed: int) -> tuple[str, bytes]:
    """(what was done, the mutated file) for one seed: one to three mutations in a row."""
    rng = random.Random(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        mutation = rng.choice(MUTATIONS)
        done.append(mutation.__name__)
        data = mutation(m, rng) if m.graph.node else m.SerializeToString()
        try:
            m = onnx.ModelProto.FromString(data)
        except Exception:  # bytes that no longer parse: that is the test case
            return "+".join(done), data
    return "+".join(done), m.SerializeToString()


# --- running one mutated model through the CLI, in-process ----------------------------------------
SDK_EXIT_CODES = {0, 2, 3, 4}  # ok, usage, model rejected, over budget (compile runs no tool or target)


def compile_in_process(model_path: str, out_dir: str, precision: str) -> tuple[int, str, str]:
    """`cuvil-sdk compile MODEL --json` through cli.main: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from cuvil_sdk.cli import main
    out, err = io.StringIO(), io.StringIO()
    argv = ["compile", model_path, "--board", "host", "--profile", "standard", "--precision", precision,
            "--calib", "random", "-o", out_dir, "--json"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def outcome_problems(code: int, stdout: str, stderr: str) -> list[str]:
    """What is wrong with a run's outcome: an exit code outside the SDK's set (1 is an
    internal error: a bug), a traceback, or an error that is not one line."""
    problems = []
    if code not in SDK_EXIT_CODES:
        problems.append(f"exit code {code}")
    if "Traceback" in stdout + stderr:
        problems.append("a traceback")
    errors = [line for line in stderr.splitlines() if "error" in line]
    if code != 0 and len(errors) != 1:
        problems.append(f"{len(errors)} error lines")
    return problems
