"""The loader under fuzzing: protobuf-level mutations (fuzz_mutations.py) of the example
models, of the shape-ops fixture and of two zoo models go through the real CLI entry
(`cuvil-sdk compile ... --json`: cli.main in-process for speed, and a few real subprocesses). Every outcome must be
the SDK's own: an exit code of its set (0, 2, 3, 4; 1 is an internal error), one error line,
no traceback, nothing written outside the output folder.

The loop runs for CUVIL_FUZZ_SECONDS (60 by default) from a fixed first seed; a failure
names the seed and mutations that reproduce it (fuzz_mutations.mutate(model, seed)). Each
crash the fuzzer found is a regression test below, on a hand-made model."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzz_mutations import SDK_EXIT_CODES, compile_in_process, mutate, outcome_problems

ROOT = Path(__file__).resolve().parents[1]
SEED_MODELS = [ROOT / "sdk" / "examples" / f"{m}.onnx" for m in ("digits_cnn", "ad_fp32", "resnet8_qdq",
                                                                  "resnet8_fp32")]
SEED_MODELS += [ROOT / "board_tests" / "fixtures" / "shape_head.onnx"] * 2  # the shape ops, twice as often
SEED_MODELS += [ROOT / "tests" / "fixtures" / "zoo" / "transformer_encoder.onnx",  # as exporters write them
                ROOT / "tests" / "fixtures" / "seq" / "kws_lstm.onnx"]
BUDGET_S = float(os.environ.get("CUVIL_FUZZ_SECONDS", "60"))
FIRST_SEED = 1


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run_case(work: Path, data: bytes, precision: str) -> tuple[int, str, str, set[str]]:
    """Compile one mutated file in a fresh folder: (exit code, stdout, stderr, files that
    appeared outside the output folder)."""
    case = work / "case"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    (case / "m.onnx").write_bytes(data)
    before = listing(work)
    code, out, err = compile_in_process(str(case / "m.onnx"), str(case / "out"), precision)
    stray = {p for p in listing(work) - before if not p.startswith("case/out")}
    return code, out, err, stray


@pytest.mark.slow
def test_mutated_models_get_only_the_sdks_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default output folder or a stray file would land here
    monkeypatch.delenv("CUVIL_DEBUG", raising=False)
    seeds = [onnx.load(str(p)) for p in SEED_MODELS]
    failures, codes, seed, start = [], {}, FIRST_SEED, time.monotonic()
    while time.monotonic() - start < BUDGET_S:
        what, data = mutate(seeds[seed % len(seeds)], seed)
        precision = "int8" if seed % 3 == 0 else "fp32"
        code, out, err, stray = run_case(tmp_path, data, precision)
        codes[code] = codes.get(code, 0) + 1
        problems = outcome_problems(code, out, err) + ([f"wrote {sorted(stray)}"] if stray else [])
        if problems:
            failures.append(f"seed {seed} ({SEED_MODELS[seed % len(seeds)].name}, {what}, {precision}): "
                            f"{', '.join(problems)}: {err.strip()[:300]}")
        seed += 1
    assert not failures, "\n".join(failures)
    assert seed - FIRST_SEED >= 10 and codes.get(3, 0) > 0, f"too few cases ran: {codes}"


@pytest.mark.slow
def test_mutated_models_through_the_real_executable(tmp_path):
    """Three mutated files through the installed `cuvil-sdk` (a process of its own)."""
    exe = Path(sys.executable).with_name("cuvil-sdk")
    assert exe.is_file(), f"{exe} is missing: run scripts/setup.sh"
    model = onnx.load(str(SEED_MODELS[-1]))
    for seed in (4, 9, 11):  # an op changed; an output dropped + a wrong element type; truncated bytes
        _, data = mutate(model, seed)
        folder = tmp_path / str(seed)
        folder.mkdir()
        (folder / "m.onnx").write_bytes(data)
        r = subprocess.run([str(exe), "compile", "m.onnx", "--board", "host", "--profile", "standard",
                            "--precision", "fp32", "-o", "out", "--json"], cwd=folder, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode in SDK_EXIT_CODES, r.stderr
        assert not outcome_problems(r.returncode, r.stdout, r.stderr), r.stderr
        assert listing(folder) - {"m.onnx"} <= {"out"} | {p for p in listing(folder) if p.startswith("out/")}


# --- regressions: each crash the fuzzer found, on a hand-made model --------------------------------
def nodes_model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], x_shape=(1, 4), y_shape=(1, 4)):
    graph = helper.make_graph(nodes, "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def one_node_model(node: onnx.NodeProto, inits: list[onnx.TensorProto], x_shape=(1, 4), y_shape=(1, 4)):
    return nodes_model([node], inits, x_shape, y_shape)


def compile_model(tmp_path: Path, model: onnx.ModelProto) -> tuple[int, str]:
    data = model.SerializeToString()
    code, out, err, stray = run_case(tmp_path, data, "fp32")
    assert not stray and not outcome_problems(code, out, err), err
    return code, err.strip()


@pytest.mark.parametrize("name, shown", [("clip0", "clip0"), ("clip\nzero", "clip\\x0azero")])
def test_regression_clip_bounds_must_be_scalars(tmp_path, name, shown):
    """A Clip whose min is a vector: was a TypeError in float(). A newline in the node's name
    is shown escaped: the error stays one line."""
    node = helper.make_node("Clip", ["x", "lo"], ["y"], name=name)
    model = one_node_model(node, [numpy_helper.from_array(np.zeros(4, np.float32), "lo")])
    assert compile_model(tmp_path, model) == (3, f"cuvil-sdk: error: node '{shown}' (Clip): min and max must be "
                                                 f"scalar constants")


def test_regression_raw_data_longer_than_dims(tmp_path):
    """raw_data of 16 floats under dims [7] (the checker refuses only too few bytes): was a numpy
    reshape error."""
    w = numpy_helper.from_array(np.ones(16, np.float32), "w")
    w.dims[0] = 7
    model = one_node_model(helper.make_node("Add", ["x", "w"], ["y"], name="add0"), [w], (1, 7), (1, 7))
    code, err = compile_model(tmp_path, model)
    assert code == 3 and "initializer 'w': its data does not match its type and dims [7]" in err


@pytest.mark.parametrize("scale, zero_point, message", [
    ([0.1, 0.2, 0.3], [0, 0, 0], "3 scales for axis 1 of a tensor of shape [4, 2]"),
    ([0.1, 0.2], [], "scale [2] and zero point [0] must be one scalar or one vector of the same length"),
])
def test_regression_dequantize_weights_with_mismatched_parameters(tmp_path, scale, zero_point, message):
    """Per-channel scales on the wrong axis, and an empty zero point: were numpy broadcast errors."""
    inits = [numpy_helper.from_array(np.ones((4, 2), np.int8), "wq"),
             numpy_helper.from_array(np.asarray(scale, np.float32), "s"),
             numpy_helper.from_array(np.asarray(zero_point, np.int8), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], name="dq0", axis=1),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="mm0")]
    code, err = compile_model(tmp_path, nodes_model(nodes, inits, (1, 4), (1, 2)))
    assert code == 3 and f"node 'dq0' (DequantizeLinear): {message}" in err


def test_regression_quantize_zero_point_not_scalar(tmp_path):
    """An activation's QuantizeLinear with a scalar scale and a 2-D zero point: was a reshape error."""
    inits = [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.zeros((2, 3), np.int8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q0"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq0")]
    code, err = compile_model(tmp_path, nodes_model(nodes, inits, (2, 3), (2, 3)))
    assert code == 3 and "(QuantizeLinear): scale [] and zero point [2, 3] must be one scalar" in err


def test_regression_conv_bias_length(tmp_path):
    """A Conv whose bias is another layer's (320 values for 32 channels): was a numpy broadcast
    error in calibration."""
    inits = [numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "w"),
             numpy_helper.from_array(np.ones(5, np.float32), "b")]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv0")
    model = one_node_model(node, inits, (1, 3, 4, 4), (1, 2, 4, 4))
    assert compile_model(tmp_path, model) == (3, "cuvil-sdk: error: node 'conv0' (Conv): the bias has 5 values for 2 "
                                                 "output channels")


def test_regression_node_name_not_utf8(tmp_path):
    """A flipped byte that leaves a node name invalid UTF-8 (protobuf then gives bytes): was a
    TypeError writing manifest.json."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu@name")
    data = one_node_model(node, []).SerializeToString().replace(b"relu@name", b"relu\xbcname")
    code, out, err, stray = run_case(tmp_path, data, "fp32")
    assert (code, err.strip()) == (3, "cuvil-sdk: error: node name b'relu\\xbcname' is not valid UTF-8")
    assert not stray and not (tmp_path / "case" / "out").exists()


def test_regression_folded_node_is_checked():
    """A pooling node whose input became a scalar constant (the fuzzer got one past the ONNX
    checker): refused when it is folded, naming the node (was an unpacking error)."""
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.errors import ModelError
    from cuvil_sdk.frontend.loader import infer_shapes
    from cuvil_sdk.ir import Graph, Node, Tensor

    g = Graph()
    g.tensors["k"] = Tensor("k", (), "float32", np.array(1.0, np.float32))
    g.nodes.append(Node("GlobalAveragePool", "gap0", ["k"], ["p"]))
    with pytest.raises(ModelError, match=r"node 'gap0' \(GlobalAveragePool\): its constant inputs cannot be evaluated at compile "
                       r"time: "):
        infer_shapes(g, get_board("host"))


@pytest.mark.parametrize("shape, message", [
    ([0, 0, 0], "shape [0, 0, 0] copies (0) a dimension that the input (1, 4) does not have"),
    ([-2, -2], "shape [-2, -2] may hold one -1 and no other negative value"),
])
def test_regression_reshape_shape_values(tmp_path, shape, message):
    """A Reshape whose shape, computed by a Concat (so the ONNX checker cannot see it), has a 0
    past the input's rank (was an IndexError) or negative sizes other than one -1."""
    nodes = [helper.make_node("Concat", ["s0", "s1"], ["s"], name="concat0", axis=0),
             helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")]
    inits = [numpy_helper.from_array(np.array(shape[:1], np.int64), "s0"),
             numpy_helper.from_array(np.array(shape[1:], np.int64), "s1")]
    model = nodes_model(nodes, inits, (1, 4), [f"d{k}" for k in range(len(shape))])
    code, err = compile_model(tmp_path, model)
    assert code == 3 and f"node 'reshape0' (Reshape): {message}" in err


def test_regression_lstm_bias_shape(tmp_path):
    """An LSTM whose B is not [directions, 8 * hidden]: was an IndexError in the reference."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((1, 8, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((1, 8, 2)).astype(np.float32), "r"),
             numpy_helper.from_array(np.zeros(2, np.float32), "b")]
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], name="lstm0", hidden_size=2)
    model = one_node_model(node, inits, (4, 1, 3), ["t", "d", "n", "h"])
    assert compile_model(tmp_path, model) == (3, "cuvil-sdk: error: node 'lstm0' (LSTM): B must be [1, 16], not [2]")


def test_regression_empty_required_input_is_named():
    """A Concat whose second input name is empty (the fuzzer's dangling_input on shape_head.onnx,
    seed 677; was a KeyError): refused naming the node and the input."""
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.errors import ModelError
    from cuvil_sdk.frontend.loader import infer_shapes
    from cuvil_sdk.ir import Graph, Node, Tensor

    g = Graph()
    g.tensors["x"] = Tensor("x", (1, 4))
    g.nodes.append(Node("Concat", "cat0", ["x", ""], ["y"], {"axis": 1}))
    with pytest.raises(ModelError, match=r"node 'cat0' \(Concat\): input 1 is empty, but the op needs a tensor there"):
        infer_shapes(g, get_board("host"))
