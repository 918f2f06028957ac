"""Unsupported uses of the math, reduction and normalization ops: `compile` says what, in one
line, exits 3 and writes nothing (test_frontend_errors.py's harness)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from test_frontend_errors import cli_server, compile_fails, runner, save  # noqa: F401  (fixtures)


def one_node(tmp_path, op, inputs, shapes, out_shape, inits=(), opset=21, **attrs):
    """A model of one node named `bad0`: graph inputs `shapes` (name -> shape), initializers."""
    node = helper.make_node(op, list(inputs), ["y"], name="bad0", **attrs)
    graph = helper.make_graph([node], "net",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in shapes.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), tmp_path / "m.onnx")


def test_gelu_unknown_approximation(tmp_path):
    model = one_node(tmp_path, "Gelu", ["x"], {"x": (1, 4)}, (1, 4), approximate="fast")
    message = compile_fails(tmp_path, model)
    assert "bad0" in message and "approximate 'fast' is not supported" in message, message


def calib_file(tmp_path, shape) -> str:
    path = tmp_path / "calib.npy"
    np.save(path, np.random.default_rng(0).uniform(0.5, 2.0, (4, *shape[1:])).astype(np.float32))
    return str(path)


def test_reduce_prod_has_no_int8_rule(tmp_path):
    axes = [("axes", np.array([1], np.int64))]
    model = one_node(tmp_path, "ReduceProd", ["x", "axes"], {"x": (1, 4)}, (1, 1), axes)
    message = compile_fails(tmp_path, model, "--calib", calib_file(tmp_path, (1, 4)), precision="int8")
    assert "bad0" in message and "has no int8 rule: build it with --precision fp32" in message, message


def test_layernorm_scale_at_run_time(tmp_path):
    model = one_node(tmp_path, "LayerNormalization", ["x", "s"], {"x": (1, 4), "s": (4,)}, (1, 4))
    message = compile_fails(tmp_path, model)
    assert "bad0" in message and "the scale must be a constant initializer" in message, message


def test_groupnorm_groups_do_not_divide_channels(tmp_path):
    inits = [("s", np.ones(6, np.float32)), ("b", np.zeros(6, np.float32))]
    model = one_node(tmp_path, "GroupNormalization", ["x", "s", "b"], {"x": (1, 6, 2, 2)}, (1, 6, 2, 2), inits,
                     num_groups=4)
    message = compile_fails(tmp_path, model)
    assert "bad0" in message and "6 channels do not split into 4 groups" in message, message


def test_int8_division_by_a_constant_zero(tmp_path):
    """x / 0 is caught on the calibration data, naming the layer"""
    inits = [("d", np.array([1.0, 0.0, 2.0, 4.0], np.float32))]
    model = one_node(tmp_path, "Div", ["x", "d"], {"x": (1, 4)}, (1, 4), inits)
    message = compile_fails(tmp_path, model, "--calib", calib_file(tmp_path, (1, 4)), precision="int8")
    assert "layer 'bad0' (Div): its output 'y' is not finite" in message, message
