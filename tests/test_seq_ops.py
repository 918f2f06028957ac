"""MatMul of two activations, LSTM and GRU (ops/matmul.py, ops/recurrent.py, ops/recurrent_int.py):

- the float reference against the `onnx` package's own backend node cases (test_lstm_*,
  test_gru_*, test_matmul_*: their inputs and expected outputs, generated in memory), W, R,
  B and the initial states made initializers as the SDK needs them;
- what is refused, with one line naming the node;
- the integer rule's pieces (tables, cell format, int32 bounds) and int8 against float on a
  keyword-spotter-length sequence.
The generated C against the integer reference: board_tests (kernel_cases.py `seq_` cases,
test_seq_models.py)."""
from __future__ import annotations

import contextlib
import importlib
import io
import subprocess
import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.errors import ModelError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.ops import recurrent_int as qrnn
from cuvil_sdk.passes import optimize
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.calibrate import calibrate
from cuvil_sdk.quant.quantize import quantize_graph
from cuvil_sdk.reference import run_float, run_quantized_model

PROFILE, BOARD = get_profile("standard"), get_board("host")


def node_cases() -> dict[str, tuple[onnx.ModelProto, list[np.ndarray], list[np.ndarray]]]:
    """The onnx package's node cases of these three ops (importing their modules runs them)."""
    from onnx.backend.test.case import node as registry
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        for module in ("lstm", "gru", "matmul"):
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
    # by op, not by name: other tests import every case module (test_matmulinteger is not MatMul)
    return {c.name: (c.model, *c.data_sets[0]) for c in registry._NodeTestCases
            if {n.op_type for n in c.model.graph.node} <= {"LSTM", "GRU", "MatMul"}}


CASES = node_cases()
REFUSED = {"test_lstm_with_peepholes"}


def with_constants(model: onnx.ModelProto, inputs: list[np.ndarray], runtime: int) -> onnx.ModelProto:
    """The case's model with inputs from `runtime` on as initializers (weights, states)."""
    graph = model.graph
    inits = [numpy_helper.from_array(value, graph.input[i].name) for i, value in enumerate(inputs) if i >= runtime]
    new = helper.make_graph(list(graph.node), graph.name, list(graph.input[:runtime]), list(graph.output), inits)
    return helper.make_model(new, opset_imports=list(model.opset_import))


@pytest.mark.parametrize("name", sorted(set(CASES) - REFUSED))
def test_onnx_backend_node_case(tmp_path, name):
    model, inputs, outputs = CASES[name]
    runtime = 2 if "matmul" in name else 1
    onnx.save(with_constants(model, inputs, runtime), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    got = run_float(g, {model.graph.input[i].name: inputs[i] for i in range(runtime)})
    assert len(outputs) == len(g.outputs)
    for out, want in zip(g.outputs, outputs):
        assert got[out].shape == want.shape, out
        np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-6, err_msg=f"{name} output {out}")


def test_onnx_backend_peephole_case_is_refused(tmp_path):
    model, inputs, _ = CASES["test_lstm_with_peepholes"]
    onnx.save(with_constants(model, inputs, 1), str(tmp_path / "m.onnx"))
    with pytest.raises(ModelError, match=r"\(LSTM\): peephole weights P are not supported$"):
        load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})


@pytest.mark.slow
def test_cli_refuses_peepholes_in_one_line_with_the_model_exit_code(tmp_path):
    model, inputs, _ = CASES["test_lstm_with_peepholes"]
    onnx.save(with_constants(model, inputs, 1), str(tmp_path / "m.onnx"))
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "build", "--board", "host", "--profile", "standard",
                        "--model", "m.onnx", "--precision", "fp32", "-o", "out"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == ModelError.exit_code == 3
    said = [l for l in r.stderr.strip().splitlines() if "declares opset" not in l]  # the backend case's opset is 22+
    assert said == ["cuvil-sdk: error: node 'LSTM_0' (LSTM): peephole weights P are not supported"]  # no node name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


# --- refusals ---------------------------------------------------------------------------------
def lstm_model(hidden: int = 3, lens=None, runtime_h0: tuple[int, ...] | None = None, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    const = {"W": rng.standard_normal((1, 4 * hidden, 2)), "R": rng.standard_normal((1, 4 * hidden, hidden))}
    if lens is not None:
        const["L"] = np.asarray(lens, np.int32)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 2])]
    if runtime_h0:
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, list(runtime_h0)))
    node = helper.make_node("LSTM", ["x", "W", "R", "", "L" if lens is not None else "", "h0" if runtime_h0 else ""],
                            ["y"], name="rnn0", hidden_size=hidden, **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1, 2, hidden])],
                              [numpy_helper.from_array(v.astype(np.float32) if v.dtype.kind == "f" else v, k)
                               for k, v in const.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("kwargs, message", [
    ({"clip": 3.0}, "the clip attribute is not supported"),
    ({"activations": ["Sigmoid", "Relu", "Tanh"]}, r"only the default activations \(sigmoid, tanh, tanh\)"),
    ({"input_forget": 1}, "input_forget=1 is not supported"),
    ({"lens": [4, 3]}, "sequence_lens must be absent or a constant equal to the sequence length"),
    ({"direction": "sideways"}, "unknown direction 'sideways'"),
    ({"runtime_h0": (1, 1, 3)}, r"initial_h must be \[1, 2, 3\], not \[1, 1, 3\]"),
])
def test_unsupported_lstm_is_refused_naming_the_node(tmp_path, kwargs, message):
    onnx.save(lstm_model(**kwargs), str(tmp_path / "m.onnx"))
    with pytest.raises(ModelError, match=rf"^node 'rnn0' \(LSTM\): {message}"):
        load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})


def test_explicit_default_activations_are_accepted(tmp_path):
    onnx.save(lstm_model(activations=["sigmoid", "tanh", "tanh"]), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    assert [n.op for n in g.nodes] == ["LSTM"]
    # the outputs left out and the state get names of their own: Y, Y_h, Y_c, scratch
    assert g.nodes[0].outputs == ["y", "rnn0_Y_h", "rnn0_Y_c", "rnn0_scratch"]


# --- the integer rule -------------------------------------------------------------------------
@pytest.mark.parametrize("table, function", [(qrnn.SIGMOID_TABLE, lambda x: 1 / (1 + np.exp(-x))),
                                             (qrnn.TANH_TABLE, np.tanh)])
def test_activation_tables(table, function):
    codes = np.arange(-32768, 32768)
    y = qrnn.lookup(table, codes)
    assert table.shape == (513,) and table.dtype == np.int16
    assert np.all(np.diff(y) >= 0), "monotonic over every Q3.12 code"
    assert y[32768] == table[256] == round(function(0.0) * 32768)
    np.testing.assert_array_equal(y[::128], table[:512])  # exact at the table's points
    err = np.abs(y / 32768.0 - function(codes / 4096.0)).max()
    assert err < 2.0 ** -12, err  # interpolation and rounding error, in Q0.15 units: < 8


@pytest.mark.parametrize("seq, c0, bits", [(1, 0.0, 15), (7, 0.0, 12), (8, 0.0, 12), (9, 0.0, 11), (49, 0.0, 9),
                                           (49, 20.0, 8)])
def test_cell_format_covers_the_cell_bound(seq, c0, bits):
    assert qrnn.cell_bits_for(seq, c0) == bits
    assert (seq + c0) * 2 ** bits <= 32768


def test_cell_bound_beyond_int16_is_refused():
    with pytest.raises(qrnn.RequantRangeError, match="beyond the int16 cell state"):
        qrnn.cell_bits_for(40000, 0.0)


def quantized(tmp_path, model: onnx.ModelProto, shape: tuple[int, ...], samples: int = 16):
    onnx.save(model, str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    optimize(g)
    rng = np.random.default_rng(1)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(samples)]
    float_g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    quantize_graph(g, calibrate(g, calib, len(calib)))
    return float_g, g


def rnn_model(op: str, seq: int, inp: int, hidden: int, scale: float, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    gates = 4 if op == "LSTM" else 3
    inits = [numpy_helper.from_array((rng.standard_normal(s) * scale).astype(np.float32), n)
             for n, s in (("W", (1, gates * hidden, inp)), ("R", (1, gates * hidden, hidden)),
                          ("B", (1, 2 * gates * hidden)))]
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y", "yh"], name="rnn0", hidden_size=hidden, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, 1, inp])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, 1, 1, hidden]),
                               helper.make_tensor_value_info("yh", TensorProto.FLOAT, [1, 1, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_int8_close_to_float_over_49_steps(tmp_path, op):
    """A keyword spotter's sequence (49 frames): the 16-bit state keeps the error small."""
    float_g, g = quantized(tmp_path, rnn_model(op, 49, 10, 24, 0.3), (49, 1, 10))
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = {"x": rng.standard_normal((49, 1, 10)).astype(np.float32)}
        want, (_, got) = run_float(float_g, x), run_quantized_model(g, x)
        for out in ("y", "yh"):
            a, b = want[out].reshape(-1).astype(np.float64), got[out].reshape(-1).astype(np.float64)
            assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.995, out
            scale = g.tensors[out].q.scalar()[0]
            assert np.abs(a - b).max() < 6 * scale, (out, np.abs(a - b).max() / scale)


def test_recurrent_weights_beyond_int32_sums_are_refused(tmp_path):
    """520 hidden units of weights all at the int8 maximum: 127 * 520 * 32768 >= 2^31."""
    hidden = 520
    model = rnn_model("GRU", 2, 2, hidden, 0.0)
    for init in model.graph.initializer:
        if init.name == "R":
            init.CopyFrom(numpy_helper.from_array(np.ones((1, 3 * hidden, hidden), np.float32), "R"))
    with pytest.raises(ModelError, match=r"layer 'rnn0' \(GRU\): the recurrent sums of a gate can leave int32"):
        quantized(tmp_path, model, (2, 1, 2), samples=2)
