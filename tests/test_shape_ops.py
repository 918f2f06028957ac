"""Shape and data-movement ops (ops/movement.py, ops/resize.py, ops/static.py) against ONNX
Runtime through the real frontend, their int8 rule (codes move unchanged, linear Resize
blends them), and the compile-time evaluation of shape subgraphs as exporters write them.

The one-node cases reuse test_ops_reference.py's harness (a graph input, the other inputs
constants); the ops that only exist at compile time are tested inside small graphs whose
output depends on the model input."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.errors import ModelError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.ops import REGISTRY
from cuvil_sdk.passes import optimize
from cuvil_sdk.quant.calibrate import calibrate
from cuvil_sdk.quant.quantize import quantize_graph
from cuvil_sdk.reference import run_float, run_int, run_quantized_model
from test_ops_reference import (BOARD, PROFILE, SHAPE_OP_MODULES, C, Case, X, assert_close, load_case, ort_run,
                                with_output_shape)

I64 = np.int64
BIG = np.iinfo(np.int64).max

CASES: dict[str, Case] = {
    # Slice: constant starts/ends/axes/steps, negative steps, clamping
    "slice-basic": Case("Slice", [X(2, 5, 6), C([0, 1], I64), C([2, 4], I64), C([0, 2], I64)]),
    "slice-steps": Case("Slice", [X(1, 6, 7, 8), C([1, 0], I64), C([6, 8], I64), C([1, 3], I64), C([2, 3], I64)]),
    "slice-negative-step": Case("Slice", [X(3, 8), C([-1], I64), C([-BIG], I64), C([1], I64), C([-1], I64)]),
    "slice-negative-step2": Case("Slice", [X(1, 4, 9), C([7, 3], I64), C([1, 0], I64), C([2, 1], I64),
                                          C([-3, -1], I64)]),
    "slice-clamp": Case("Slice", [X(4, 5), C([-100, 2], I64), C([BIG, 1000], I64)]),
    "slice-default-axes": Case("Slice", [X(6, 5), C([1], I64), C([-1], I64)]),
    "slice-start-past-dim": Case("Slice", [X(1, 6, 4), C([1, 9], I64), C([3, 0], I64), C([1, -1], I64),
                                           C([1, -2], I64)]),
    "slice-5d": Case("Slice", [X(2, 3, 4, 5, 6), C([1, -1, 0], I64), C([3, 0, 5], I64), C([1, 3, 4], I64),
                               C([1, -2, 2], I64)]),
    # Gather: constant indices, any axis, scalar and 2-D indices, negative indices
    "gather-axis0": Case("Gather", [X(5, 4), C([4, 0, 2], I64)]),
    "gather-axis1-scalar": Case("Gather", [X(2, 6, 3), C(-1, I64)], axis=1),
    "gather-axis-last-2d": Case("Gather", [X(2, 7), C([[0, 6], [3, 3]], np.int32)], axis=-1),
    "gather-axis2": Case("Gather", [X(1, 3, 5, 2), C([1, -5, 4], I64)], axis=2),
    # Expand / Tile
    "expand-channels": Case("Expand", [X(1, 1, 4, 4), C([1, 3, 4, 4], I64)]),
    "expand-rank-up": Case("Expand", [X(3, 1), C([2, 3, 5], I64)]),
    "expand-ones": Case("Expand", [X(2, 3), C([1, 1], I64)]),
    "tile": Case("Tile", [X(2, 3, 2), C([2, 1, 3], I64)]),
    "tile-4d": Case("Tile", [X(1, 2, 2, 3), C([2, 2, 1, 2], I64)]),
    "tile-6d": Case("Tile", [X(2, 1, 2, 1, 3, 2), C([1, 2, 2, 3, 1, 2], I64)]),
    "resize-nearest-5d": Case("Resize", [X(1, 2, 2, 3, 2), None, C([1, 1, 2, 1.5, 2])], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    # DepthToSpace / SpaceToDepth
    "depthtospace-dcr": Case("DepthToSpace", [X(1, 8, 3, 2)], blocksize=2),
    "depthtospace-crd": Case("DepthToSpace", [X(2, 18, 2, 3)], blocksize=3, mode="CRD"),
    "spacetodepth": Case("SpaceToDepth", [X(2, 3, 4, 6)], blocksize=2),
    # Resize: nearest rounding modes, linear, coordinate modes, scales or sizes
    "resize-nearest-x2": Case("Resize", [X(1, 2, 3, 4), C([]), C([1, 1, 2, 2])], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "resize-nearest-halfpixel-sizes": Case("Resize", [X(1, 2, 4, 5), None, None, C([1, 2, 7, 3], I64)],
                                           mode="nearest"),
    "resize-nearest-ceil-align": Case("Resize", [X(1, 1, 4, 4), None, C([1, 1, 1.5, 2.5])], mode="nearest",
                                      coordinate_transformation_mode="align_corners", nearest_mode="ceil"),
    "resize-nearest-prefer-ceil": Case("Resize", [X(1, 1, 3, 5), None, C([1, 1, 2, 0.6])], mode="nearest",
                                       nearest_mode="round_prefer_ceil"),
    "resize-nearest-pytorch-hp": Case("Resize", [X(1, 2, 5, 4), None, None, C([1, 2, 1, 9], I64)],
                                      mode="nearest", coordinate_transformation_mode="pytorch_half_pixel"),
    "resize-linear-halfpixel": Case("Resize", [X(1, 2, 4, 5), None, C([1, 1, 2, 2])], mode="linear"),
    "resize-linear-align": Case("Resize", [X(2, 1, 3, 4), None, None, C([2, 1, 7, 5], I64)], mode="linear",
                                coordinate_transformation_mode="align_corners"),
    "resize-linear-asym-down": Case("Resize", [X(1, 3, 8, 6), None, C([1, 1, 0.5, 0.75])], mode="linear",
                                    coordinate_transformation_mode="asymmetric"),
    "resize-linear-pytorch-hp": Case("Resize", [X(1, 2, 3, 6), None, None, C([1, 2, 1, 4], I64)], mode="linear",
                                     coordinate_transformation_mode="pytorch_half_pixel"),
    "resize-linear-3d": Case("Resize", [X(1, 2, 5), None, C([1, 1, 2.5])], mode="linear", opset=18),
    "resize-opset11": Case("Resize", [X(1, 2, 3, 3), C([]), C([1, 1, 2, 2])], opset=11, mode="linear",
                           coordinate_transformation_mode="align_corners"),
    "resize-opset10-nearest": Case("Resize", [X(1, 2, 3, 4), C([1, 1, 2, 2.5])], opset=10, mode="nearest"),
    "resize-opset10-linear": Case("Resize", [X(1, 2, 3, 4), C([1, 1, 2, 1.5])], opset=10, mode="linear"),
    # Resize: cubic, antialias, axes, keep_aspect_ratio_policy, half_pixel_symmetric, tf_crop_and_resize
    "resize-cubic-up": Case("Resize", [X(1, 2, 4, 5), None, None, C([1, 2, 7, 9], I64)], mode="cubic"),
    "resize-cubic-down-exclude": Case("Resize", [X(1, 2, 6, 7), None, C([1, 1, 0.6, 0.8])], mode="cubic",
                                      cubic_coeff_a=-0.5, exclude_outside=1),
    "resize-cubic-align": Case("Resize", [X(2, 1, 3, 4), None, C([1, 1, 2, 1.5])], mode="cubic",
                               coordinate_transformation_mode="align_corners"),
    "resize-axes-not-larger": Case("Resize", [X(1, 2, 4, 6), None, None, C([5, 8], I64)], mode="nearest",
                                   axes=[2, 3], keep_aspect_ratio_policy="not_larger", opset=18),
    "resize-axes-not-smaller": Case("Resize", [X(1, 2, 4, 6), None, None, C([9, 5], I64)], mode="linear",
                                    axes=[3, 2], keep_aspect_ratio_policy="not_smaller", opset=18),
    "resize-linear-hps": Case("Resize", [X(1, 2, 3, 5), None, C([1, 1, 1.5, 0.6])], mode="linear",
                              coordinate_transformation_mode="half_pixel_symmetric", opset=19),
    "resize-tf-crop": Case("Resize", [X(1, 2, 5, 6), C([0.2, -0.25, 1.3, 0.9]), None, C([4, 5], I64)], mode="linear",
                           axes=[2, 3], coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.5,
                           opset=18),
    "resize-antialias-linear": Case("Resize", [X(1, 2, 9, 11), None, C([1, 1, 0.5, 0.4])], mode="linear",
                                    antialias=1, opset=18),
    "resize-antialias-cubic": Case("Resize", [X(1, 2, 9, 11), None, None, C([1, 2, 4, 3], I64)], mode="cubic",
                                   antialias=1, opset=18),
    "upsample-nearest": Case("Upsample", [X(1, 2, 3, 4), C([1, 1, 2, 3])], opset=9, mode="nearest"),
    "upsample-linear": Case("Upsample", [X(1, 2, 3, 4), C([1, 1, 2, 2])], opset=9, mode="linear"),
    "transpose-5d": Case("Transpose", [X(1, 2, 3, 4, 5)], perm=[0, 1, 3, 4, 2]),
    "cast-float": Case("Cast", [X(2, 3)], to=TensorProto.FLOAT),
    # Where at run time: a constant condition, run-time or constant operands
    "where-two-inputs": Case("Where", [C([[True, False, True, True]], np.bool_), X(1, 3, 4), X(1, 3, 1)]),
    "where-const-fill": Case("Where", [C(np.eye(4), np.bool_), X(2, 1, 4, 4), C(-1.5)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_movement_op_matches_onnxruntime(tmp_path, name):
    case = CASES[name]
    g, feeds, expected = load_case(case, tmp_path)
    assert g.tensors[g.outputs[0]].shape == expected.shape
    assert_close(run_float(g, feeds)[g.outputs[0]], expected)
    optimize(g)
    assert_close(run_float(g, feeds)[g.outputs[0]], expected)


def test_upsample_converted_or_native(tmp_path):
    """An opset-9 Upsample is upgraded to a Resize by the frontend; opset 10+ ships its own."""
    g, _, _ = load_case(CASES["upsample-nearest"], tmp_path)
    assert [n.op for n in g.nodes] in (["Resize"], ["Upsample"])


# --- Split: several outputs --------------------------------------------------------------------------
def split_model(opset: int, n_out: int, split: list[int] | None = None, as_input: bool = True, **attrs):
    inputs, inits = ["x"], []
    if split is not None and as_input:
        inits.append(numpy_helper.from_array(np.array(split, I64), "split"))
        inputs.append("split")
    elif split is not None:
        attrs["split"] = split
    outs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node("Split", inputs, outs, name="split0", **attrs)
    graph = helper.make_graph([node], "s", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 3])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset, n_out, split, as_input, attrs", [
    (13, 3, [2, 4, 1], True, {"axis": 1}),
    (11, 2, [1, 1], False, {"axis": 0}),
    (13, 3, None, False, {"axis": -1}),
    (18, 3, None, False, {"axis": 1, "num_outputs": 3}),  # 7 into 3: 3, 3, 1
])
def test_split_matches_onnxruntime(tmp_path, opset, n_out, split, as_input, attrs):
    model = split_model(opset, n_out, split, as_input, **attrs)
    x = np.random.default_rng(1).standard_normal((2, 7, 3)).astype(np.float32)
    expected = ort_run(model, {"x": x})
    for out, want in zip(model.graph.output, expected):
        out.type.tensor_type.shape.dim.extend([onnx.TensorShapeProto.Dimension(dim_value=d) for d in want.shape])
    onnx.save(model, str(tmp_path / "s.onnx"))
    g = load_model(tmp_path / "s.onnx", PROFILE, BOARD, {})
    ours = run_float(g, {"x": x})
    for name, want in zip(g.outputs, expected):
        assert g.tensors[name].shape == want.shape
        np.testing.assert_array_equal(ours[name], want)


# --- compile-time ops inside graphs -------------------------------------------------------------------
def graph_model(nodes, inits, x_shape, y_shape=None, opset=13) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=f"{op}_{outs[0]}", **attrs)


def exporter_flatten():
    """torch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    return [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
            node("Unsqueeze", ["n", "axes0"], ["n1"]), node("Concat", ["n1", "minus1"], ["shape"], axis=0),
            node("Reshape", ["x", "shape"], ["y"])], {"zero": np.array(0, I64), "axes0": np.array([0], I64),
                                                      "minus1": np.array([-1], I64)}


def comparisons_mask():
    """Where(Greater(a, b) Or Not(Equal(a, c)), a, b) added to x: every logic op on constants."""
    a, b = np.array([[1.0, -2.0, 3.0]], np.float32), np.array([[0.5, 0.5, 5.0]], np.float32)
    c = np.array([[1.0, 7.0, 3.0]], np.float32)
    nodes = [node("Greater", ["a", "b"], ["gt"]), node("Equal", ["a", "c"], ["eq"]), node("Not", ["eq"], ["ne"]),
             node("Or", ["gt", "ne"], ["m1"]), node("Less", ["a", "b"], ["lt"]),
             node("GreaterOrEqual", ["a", "c"], ["ge"]), node("LessOrEqual", ["b", "c"], ["le"]),
             node("And", ["ge", "le"], ["m2"]), node("Or", ["m1", "m2"], ["m3"]), node("And", ["m3", "lt"], ["m4"]),
             node("Or", ["m4", "m1"], ["mask"]), node("Where", ["mask", "a", "b"], ["w"]),
             node("Add", ["x", "w"], ["y"])]
    return nodes, {"a": a, "b": b, "c": c}


def range_and_fill():
    """Range -> Cast -> Unsqueeze, ConstantOfShape of Shape(x), ArgMax/ArgMin, Size: all folded."""
    k = np.array([[3.0, 9.0, 9.0, 1.0], [5.0, 0.0, 0.0, 2.0]], np.float32)
    nodes = [node("Range", ["start", "limit", "delta"], ["r"]), node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             node("Shape", ["x"], ["sx"]), node("ConstantOfShape", ["sx"], ["ones"],
                                                value=numpy_helper.from_array(np.array([0.5], np.float32))),
             node("ArgMax", ["k"], ["am"], axis=0, keepdims=0, select_last_index=1),
             node("ArgMin", ["k"], ["an"], axis=-1, keepdims=1),
             node("Size", ["x"], ["size"]), node("Cast", ["am"], ["amf"], to=TensorProto.FLOAT),
             node("Cast", ["an"], ["anf"], to=TensorProto.FLOAT), node("Cast", ["size"], ["sizef"], to=TensorProto.FLOAT),
             node("Mul", ["x", "rf"], ["t1"]), node("Add", ["t1", "ones"], ["t2"]), node("Add", ["t2", "amf"], ["t3"]),
             node("Add", ["t3", "sizef"], ["t4"]), node("Mul", ["t4", "anf"], ["y"])]
    return nodes, {"start": np.array(4, I64), "limit": np.array(-4, I64), "delta": np.array(-2, I64), "k": k}


GRAPHS = {"exporter-flatten": (exporter_flatten, (2, 3, 4)), "comparisons-where": (comparisons_mask, (2, 3)),
          "range-fill-argmax": (range_and_fill, (2, 4))}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_compile_time_subgraph_folds(tmp_path, name):
    make, x_shape = GRAPHS[name]
    nodes, inits = make()
    model = graph_model(nodes, inits, x_shape)
    x = np.random.default_rng(3).standard_normal(x_shape).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    onnx.save(with_output_shape(model, expected.shape), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", PROFILE, BOARD, {})
    folded_only = {n.op_type for n in nodes} - {"Reshape", "Add", "Mul"}
    assert not folded_only & {n.op for n in g.nodes}, [n.op for n in g.nodes]
    assert_close(run_float(g, {"x": x})["y"], expected)


@pytest.mark.parametrize("op, inputs", [("Range", ["x", "one", "one"]), ("ConstantOfShape", ["x"])])
def test_runtime_dynamic_shape_is_refused(tmp_path, op, inputs):
    """An op whose output shape would be a run-time input's value: one line naming it and why."""
    nodes = [node("Cast", ["x"], ["xi"], to=TensorProto.INT64), node(op, ["xi", *inputs[1:]], ["t"]),
             node("Cast", ["t"], ["y"], to=1)]
    onnx.save(graph_model(nodes, {"one": np.array(1, I64)}, (1,), [2]), str(tmp_path / "r.onnx"))
    with pytest.raises(ModelError, match=f"node '{op}_t' \\({op}\\): input 'xi' is computed at run time, and the "
                                         f"output's shape would depend on its values \\(a dynamic output shape\\)"):
        load_model(tmp_path / "r.onnx", PROFILE, BOARD, {})


def test_runtime_comparison_and_gather_indices_are_computed(tmp_path):
    """Comparisons, ArgMax and Gather of run-time integer tensors run (ops/compare.py, index.py,
    gather.py): the graph keeps them and the reference equals ONNX Runtime exactly."""
    nodes = [node("Greater", ["x", "zero"], ["m"]), node("Cast", ["m"], ["i"], to=TensorProto.INT64),
             node("Gather", ["table", "i"], ["g"]), node("ArgMax", ["g"], ["a"], axis=-1),
             node("Cast", ["a"], ["y"], to=1)]
    table = np.arange(15, dtype=np.float32).reshape(5, 3) % 4
    model = graph_model(nodes, {"table": table, "zero": np.array(0, np.float32)}, (2,), [2, 1])
    onnx.save(model, str(tmp_path / "g.onnx"))
    g = load_model(tmp_path / "g.onnx", PROFILE, BOARD, {})
    assert {"Greater", "Gather", "ArgMax"} <= {n.op for n in g.nodes}
    assert g.tensors["m"].dtype == "bool" and g.tensors["i"].dtype == "int64" and g.tensors["a"].dtype == "int64"
    x = np.array([-1.0, 2.0], np.float32)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_array_equal(run_float(g, {"x": x})["y"], want)


def test_folded_constant_too_large_for_flash(tmp_path):
    nodes = [node("ConstantOfShape", ["shape"], ["big"]), node("Add", ["x", "big"], ["y"])]
    onnx.save(graph_model(nodes, {"shape": np.array([1 << 20, 1 << 20], I64)}, (1,), [1 << 20, 1 << 20]),
              str(tmp_path / "b.onnx"))
    with pytest.raises(ModelError, match="constant 'big' of node 'ConstantOfShape_big' .* larger than the flash"):
        load_model(tmp_path / "b.onnx", PROFILE, BOARD, {})


# --- int8: data movement keeps the scale; linear Resize stays close to float -------------------------
INT8 = ["where-two-inputs", "where-const-fill", "slice-negative-step2", "gather-axis2", "expand-channels", "tile-4d", "depthtospace-crd", "spacetodepth",
        "resize-nearest-halfpixel-sizes", "resize-linear-halfpixel", "resize-linear-align", "resize-cubic-up",
        "resize-cubic-down-exclude", "resize-axes-not-smaller"]


@pytest.mark.parametrize("name", INT8)
def test_int8_rule(tmp_path, name):
    case = CASES[name]
    g, feeds, expected = load_case(case, tmp_path)
    optimize(g)
    calib = [case.model_and_feeds(seed)[1] for seed in range(1, 9)]
    quantize_graph(g, calibrate(g, calib, len(calib)))
    (y,), x = g.outputs, g.inputs[0]
    if case.op != "Where":  # data movement keeps the input's scale
        assert g.tensors[y].q.scalar() == g.tensors[x].q.scalar()
    if case.op == "Where":  # requantized to the output's scale: within half a step of each scale
        model, feeds = case.model_and_feeds(1)  # a calibration sample: no saturation
        _, deq = run_quantized_model(g, feeds)
        (want,) = ort_run(model, feeds)
        steps = [g.tensors[name].q.scalar()[0] for name in [y, *g.inputs]]
        assert np.abs(deq[y] - want).max() <= max(steps) * 1.01
        return
    codes = np.random.default_rng(5).integers(-128, 128, g.tensors[x].shape).astype(np.int8)
    got = run_int(g, {x: codes})[y]
    want = run_float(g, {x: codes.astype(np.float32)})[y]  # the same op on the codes, in float
    if "linear" in name or "axes" in name:  # one rounding of a convex blend: within half a code of the exact blend (+ Q11 weights)
        assert np.abs(got.astype(np.float64) - want).max() <= 0.5 + 128 * 2 / 2048
    elif "cubic" in name:  # 4 x 4 Q11 taps (sum of |weights| < 1.5 per axis), rounded once, saturated
        assert np.abs(got.astype(np.float64) - np.clip(want, -128, 127)).max() <= 0.5 + 128 * 2 * 1.5 * 4 / 2048
    else:
        np.testing.assert_array_equal(got, want.astype(np.int8))


def test_every_shape_op_is_tested():
    ops = {n for n, op in REGISTRY.items() if type(op).__module__.rsplit(".", 1)[-1] in SHAPE_OP_MODULES
           and not n.startswith("_")}  # (_Fill, a model output known at compile time: test_integer_ops.py)
    assert len(ops) >= 13  # (Gather, the comparisons, ArgMax and Cast have their own grid: test_integer_ops.py)
    graphs = {n.op_type for make, _ in GRAPHS.values() for n in make()[0]}
    covered = {c.op for c in CASES.values()} | {"Split"} | graphs
    assert ops - covered == set()
    assert "Transpose" in covered  # above 4-D it is a remap too


@pytest.mark.parametrize("nodes, inits, message", [
    ([node("Tile", ["x", "reps"], ["y"])], {"reps": np.array([1, 2**40], I64)},
     "tensor 'y' of node 'Tile_y' (3298534883328 values) is larger than the RAM"),
    ([node("Expand", ["x", "shape"], ["y"])], {"shape": np.array([2**30, 2**30, 3], I64)},
     "tensor 'y' of node 'Expand_y' (3458764513820540928 values) is larger than the RAM"),
    ([node("Resize", ["x", "", "scales"], ["y"])], {"scales": np.array([1, 1e12], np.float32)},
     "node 'Resize_y' (Resize): scales [1.0, 999999995904.0] are too large"),
    ([node("Equal", ["a", "b"], ["m"]), node("Where", ["m", "x", "x"], ["y"])],
     {"a": np.zeros((2**18, 1, 1), np.float32), "b": np.zeros((1, 2**12, 3), np.float32)},
     "constant 'm' of node 'Equal_m' (3221225472 values) is larger than the flash"),
])
def test_huge_outputs_refused_before_they_are_made(tmp_path, nodes, inits, message):
    """Sizes come from the ops' arguments alone: nothing of that size is ever allocated."""
    rank = 3 if nodes[0].op_type in ("Expand", "Equal") else 2
    onnx.save(graph_model(nodes, inits, (1, 3), [f"d{k}" for k in range(rank)]), str(tmp_path / "h.onnx"))
    with pytest.raises(ModelError, match=message.replace("(", "\\(").replace(")", "\\)").replace("[", "\\[")):
        load_model(tmp_path / "h.onnx", PROFILE, BOARD, {})


@pytest.mark.parametrize("attrs, message", [
    ({"mode": "nearest", "antialias": 1}, "antialias applies to linear and cubic modes, not nearest"),
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"},
     "tf_crop_and_resize is supported in linear and cubic modes"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     "tf_crop_and_resize needs a constant roi of 8 values"),
])
def test_resize_refusals(tmp_path, attrs, message):
    nodes = [node("Resize", ["x", "", "scales"], ["y"], **attrs)]
    onnx.save(graph_model(nodes, {"scales": np.ones(4, np.float32)}, (1, 1, 4, 4), [1, 1, 4, 4], opset=18),
              str(tmp_path / "r.onnx"))
    with pytest.raises(ModelError, match=message):
        load_model(tmp_path / "r.onnx", PROFILE, BOARD, {})


def center_crop_pad(x_shape, target):
    """CenterCropPad's ONNX function body: Shape -> Max -> Sub -> Div -> Pad, then Sub -> Div
    -> Add -> Slice; odd differences make Div's integer truncation decide the output size."""
    nodes = [node("Shape", ["x"], ["xs"]), node("Max", ["xs", "shape"], ["padded"]),
             node("Sub", ["padded", "xs"], ["amount"]), node("Div", ["amount", "two"], ["left"]),
             node("Sub", ["amount", "left"], ["right"]), node("Concat", ["left", "right"], ["pads"], axis=0),
             node("Pad", ["x", "pads"], ["p"]), node("Shape", ["p"], ["ps"]), node("Sub", ["ps", "shape"], ["diff"]),
             node("Div", ["diff", "two"], ["start"]), node("Add", ["start", "shape"], ["end"]),
             node("Slice", ["p", "start", "end"], ["y"])]
    return graph_model(nodes, {"shape": np.array(target, I64), "two": np.array([2], I64)}, x_shape, opset=18)


@pytest.mark.parametrize("x_shape, target", [((10, 7, 3), (20, 10, 3)), ((5, 9, 2), (2, 4, 2))])
def test_integer_shape_arithmetic_truncates_like_onnx(tmp_path, x_shape, target):
    """int64 Sub/Div/Add/Max fold in int64 with Div rounding toward zero (a float Div gave
    3 / 2 = 1.5 pads, which the Pad then truncated on both sides: one row short)."""
    model = center_crop_pad(x_shape, target)
    x = np.random.default_rng(5).standard_normal(x_shape).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    assert expected.shape == tuple(target)
    onnx.save(with_output_shape(model, expected.shape), str(tmp_path / "ccp.onnx"))
    g = load_model(tmp_path / "ccp.onnx", PROFILE, BOARD, {})
    assert_close(run_float(g, {"x": x})["y"], expected)


def test_integer_division_of_negative_constants_truncates():
    from cuvil_sdk.ir import Node
    div = Node("Div", "d", ["a", "b"], ["y"])
    (y,) = REGISTRY["Div"].run_float(div, None, [np.array([-7, 7, -6, 7], I64), np.array([2, -2, 4, 2], I64)])
    assert y.dtype == I64 and y.tolist() == [-3, -3, -1, 3]


def space_to_depth_model(mode: str) -> onnx.ModelProto:
    graph = helper.make_graph([node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12, 2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])  # `mode`: opset 28


@pytest.mark.parametrize("mode, perm", [("CRD", [0, 1, 3, 5, 2, 4]), ("DCR", [0, 3, 5, 1, 2, 4])])
def test_space_to_depth_modes(tmp_path, mode, perm):
    """The onnx reference's reshape / transpose (ORT has no opset-28 SpaceToDepth to compare with)."""
    onnx.save(space_to_depth_model(mode), str(tmp_path / "s2d.onnx"))
    g = load_model(tmp_path / "s2d.onnx", PROFILE, BOARD, {})
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 6)).astype(np.float32)
    expected = x.reshape(2, 3, 2, 2, 3, 2).transpose(perm).reshape(2, 12, 2, 3)
    np.testing.assert_array_equal(run_float(g, {"x": x})["y"], expected)


def test_space_to_depth_unknown_mode_refused(tmp_path):
    model = space_to_depth_model("CRD")
    model.graph.node[0].attribute[1].s = b"XYZ"
    onnx.save(model, str(tmp_path / "s2d.onnx"))
    with pytest.raises(ModelError, match=r"node 'SpaceToDepth_y' \(SpaceToDepth\): mode 'XYZ' is not supported"):
        load_model(tmp_path / "s2d.onnx", PROFILE, BOARD, {})


@pytest.mark.parametrize("sizes", [[6, 0], [0, 4, 2], [3, 0, 3]])
def test_empty_split_part_concatenated_back(tmp_path, sizes):
    """Split with a part of length 0, every part through Concat (RotaryEmbedding's body):
    the empty part becomes a constant that Concat drops; no zero-length buffer is left."""
    names = [f"p{k}" for k in range(len(sizes))]
    nodes = [node("Split", ["x", "sizes"], names, axis=-1), node("Mul", [names[-1 if sizes[-1] else 0], "two"], ["m"]),
             node("Concat", ["m", *names], ["y"], axis=-1)]
    model = graph_model(nodes, {"sizes": np.array(sizes, I64), "two": np.array(2.0, np.float32)}, (2, 3, 6))
    x = np.random.default_rng(4).standard_normal((2, 3, 6)).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    onnx.save(with_output_shape(model, expected.shape), str(tmp_path / "e.onnx"))
    g = load_model(tmp_path / "e.onnx", PROFILE, BOARD, {})
    assert all(g.tensors[o].size > 0 for n in g.nodes for o in n.outputs + n.inputs if o)
    assert_close(run_float(g, {"x": x})["y"], expected)
