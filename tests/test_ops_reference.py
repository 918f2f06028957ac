"""Every registered op against ONNX Runtime: one-node models through the real frontend
(`load_model`), then the op's shape inference and float reference (`run_float`) must
equal ORT's output shape and values. A second set quantizes small graphs (passes,
calibration, int8 rule) and checks the integer reference stays close to float.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.frontend import load_model
from cuvil_sdk.ir import Graph, Node, Tensor
from cuvil_sdk.ops import REGISTRY, supported_ops
from cuvil_sdk.passes import optimize
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.calibrate import calibrate
from cuvil_sdk.quant.quantize import quantize_graph
from cuvil_sdk.reference import run_float, run_quantized_model

PROFILE = get_profile("standard")
BOARD = get_board("host")


# --- building one-node models ----------------------------------------------------------------

def X(*shape, scale=1.0):  # noqa: N802 (X, C, W: read like the inputs they declare)
    """A runtime (graph) input of this shape; fed standard normal values times scale."""
    return ("input", tuple(shape), scale)


def C(value, dtype=np.float32):  # noqa: N802
    """A constant input (an initializer)."""
    return ("const", np.asarray(value, dtype=dtype), None)


def W(*shape, positive=False):  # noqa: N802
    """A random constant float input (weights)."""
    rng = np.random.default_rng(hash(shape) % 2**32)
    data = rng.standard_normal(shape).astype(np.float32)
    return C(np.abs(data) + 0.1 if positive else data)


NONE = None  # an omitted optional input ("")


class Case:
    def __init__(self, op, inputs, opset=13, **attrs):
        self.op, self.inputs, self.opset, self.attrs = op, inputs, opset, attrs

    def model_and_feeds(self, seed: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        rng = np.random.default_rng(seed)
        names, graph_inputs, inits, feeds = [], [], [], {}
        for i, spec in enumerate(self.inputs):
            if spec is None:
                names.append("")
                continue
            kind, value, scale = spec
            name = f"in{i}"
            names.append(name)
            if kind == "input":
                graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value)))
                feeds[name] = (rng.standard_normal(value) * scale).astype(np.float32)
            else:
                inits.append(numpy_helper.from_array(value, name))
        node = helper.make_node(self.op, names, ["y"], name=f"{self.op.lower()}0", **self.attrs)
        graph = helper.make_graph([node], "one", graph_inputs,
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        return model, feeds


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def with_output_shape(model: onnx.ModelProto, shape: tuple[int, ...]) -> onnx.ModelProto:
    """The model with its output's static shape declared (the ONNX checker wants one)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    out = model.graph.output[0]
    out.type.tensor_type.shape.SetInParent()
    for d in shape:
        out.type.tensor_type.shape.dim.add().dim_value = d
    return model


def load_case(case: Case, tmp_path, seed: int = 0):
    """(cuvil graph, feeds, ORT output) for one case."""
    model, feeds = case.model_and_feeds(seed)
    (expected,) = ort_run(model, feeds)
    path = tmp_path / "one.onnx"
    onnx.save(with_output_shape(model, expected.shape), str(path))
    g = load_model(path, PROFILE, BOARD, {})
    return g, feeds, expected


def assert_close(ours: np.ndarray, expected: np.ndarray) -> None:
    assert ours.shape == expected.shape
    assert ours.dtype == np.float32, ours.dtype
    magnitude = max(1.0, float(np.abs(expected).max()) if expected.size else 1.0)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5 * magnitude)


# --- the grid ----------------------------------------------------------------------------------

CASES: dict[str, Case] = {
    # Conv
    "conv-3x3-pad1-bias": Case("Conv", [X(1, 3, 8, 8), W(4, 3, 3, 3), W(4)], pads=[1, 1, 1, 1]),
    "conv-3x3-nobias": Case("Conv", [X(1, 3, 8, 8), W(4, 3, 3, 3)]),
    "conv-1x1": Case("Conv", [X(1, 8, 5, 5), W(6, 8, 1, 1), W(6)]),
    "conv-batch2": Case("Conv", [X(2, 3, 6, 6), W(5, 3, 3, 3), W(5)], pads=[1, 1, 1, 1]),
    "conv-group2": Case("Conv", [X(1, 4, 7, 7), W(6, 2, 3, 3), W(6)], group=2, pads=[1, 1, 1, 1]),
    "conv-depthwise": Case("Conv", [X(1, 4, 9, 9), W(4, 1, 3, 3), W(4)], group=4, pads=[1, 1, 1, 1]),
    "conv-depthwise-x2": Case("Conv", [X(1, 4, 9, 9), W(8, 1, 3, 3), W(8)], group=4, strides=[2, 2]),
    "conv-stride2": Case("Conv", [X(1, 3, 9, 9), W(4, 3, 3, 3)], strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv-stride-2x1": Case("Conv", [X(1, 3, 8, 7), W(4, 3, 3, 3)], strides=[2, 1]),
    "conv-dilation2": Case("Conv", [X(1, 2, 10, 10), W(3, 2, 3, 3), W(3)], dilations=[2, 2]),
    "conv-dilation-1x3": Case("Conv", [X(1, 2, 9, 11), W(3, 2, 3, 3)], dilations=[1, 3], pads=[1, 0, 1, 2]),
    "conv-asym-pads": Case("Conv", [X(1, 3, 8, 8), W(4, 3, 3, 3), W(4)], pads=[0, 1, 2, 3]),
    "conv-same-upper": Case("Conv", [X(1, 3, 9, 9), W(4, 3, 4, 4), W(4)], auto_pad="SAME_UPPER"),
    "conv-same-upper-s2": Case("Conv", [X(1, 3, 9, 8), W(4, 3, 3, 3)], auto_pad="SAME_UPPER", strides=[2, 2]),
    "conv-same-lower": Case("Conv", [X(1, 3, 9, 9), W(4, 3, 4, 4), W(4)], auto_pad="SAME_LOWER"),
    "conv-same-lower-s2": Case("Conv", [X(1, 3, 8, 9), W(4, 3, 4, 2)], auto_pad="SAME_LOWER", strides=[2, 2]),
    "conv-valid": Case("Conv", [X(1, 3, 9, 9), W(4, 3, 3, 3)], auto_pad="VALID", strides=[2, 2]),
    "conv-kernel-3x5": Case("Conv", [X(1, 3, 8, 10), W(4, 3, 3, 5), W(4)], pads=[1, 2, 1, 2]),
    "conv-odd": Case("Conv", [X(2, 3, 7, 5), W(5, 3, 2, 3), W(5)], strides=[3, 2], pads=[1, 0, 0, 1]),
    "conv-kernel-is-input": Case("Conv", [X(1, 2, 5, 5), W(3, 2, 5, 5)]),
    # ConvTranspose (weight [in][out/group][kh][kw])
    "convt-default": Case("ConvTranspose", [X(1, 2, 4, 5), W(2, 3, 3, 3), W(3)]),
    "convt-s2-pads": Case("ConvTranspose", [X(1, 3, 5, 4), W(3, 2, 3, 3)], strides=[2, 2], pads=[1, 0, 0, 1]),
    "convt-outpad": Case("ConvTranspose", [X(1, 2, 4, 4), W(2, 2, 3, 2), W(2)], strides=[3, 2], output_padding=[2, 1]),
    "convt-group2": Case("ConvTranspose", [X(2, 4, 3, 5), W(4, 3, 3, 3)], group=2, strides=[2, 1]),
    "convt-depthwise-dilated": Case("ConvTranspose", [X(1, 3, 5, 5), W(3, 1, 3, 3)], group=3, dilations=[2, 3]),
    "convt-output-shape": Case("ConvTranspose", [X(1, 2, 3, 3), W(2, 2, 3, 3)], strides=[3, 2],
                               output_shape=[10, 8]),
    "convt-same-upper": Case("ConvTranspose", [X(1, 2, 5, 4), W(2, 3, 4, 3)], strides=[2, 2], auto_pad="SAME_UPPER"),
    "convt-same-lower": Case("ConvTranspose", [X(1, 2, 5, 4), W(2, 3, 3, 4)], strides=[2, 2], auto_pad="SAME_LOWER"),
    # Gemm
    "gemm-transA": Case("Gemm", [X(5, 3), W(5, 4), W(4)], transA=1),
    "gemm-transA-transB-matrix-C": Case("Gemm", [X(5, 3), W(4, 5), W(3, 4)], transA=1, transB=1, alpha=0.5,
                                        beta=2.0),
    "gemm-column-C": Case("Gemm", [X(3, 5), W(5, 4), W(3, 1)]),
    "gemm-transB0": Case("Gemm", [X(3, 5), W(5, 4), W(4)]),
    "gemm-transB1": Case("Gemm", [X(3, 5), W(4, 5), W(4)], transB=1),
    "gemm-bias-1xN": Case("Gemm", [X(3, 5), W(4, 5), W(1, 4)], transB=1),
    "gemm-bias-scalar": Case("Gemm", [X(3, 5), W(5, 4), C([0.5])]),
    "gemm-bias-0d": Case("Gemm", [X(2, 5), W(5, 4), C(-1.5)]),
    "gemm-nobias": Case("Gemm", [X(1, 6), W(3, 6)], transB=1),
    "gemm-alpha-beta": Case("Gemm", [X(3, 5), W(4, 5), W(4)], transB=1, alpha=0.5, beta=2.0),
    # MatMul
    "matmul-2d": Case("MatMul", [X(3, 5), W(5, 4)]),
    "matmul-3d": Case("MatMul", [X(2, 3, 5), W(5, 4)]),
    "matmul-4d": Case("MatMul", [X(1, 2, 3, 5), W(5, 2)]),
    "matmul-b-1d": Case("MatMul", [X(2, 3, 5), W(5)]),
    "matmul-a-1d": Case("MatMul", [X(5), W(5, 3)]),
    "matmul-b-3d-unit-batch": Case("MatMul", [X(3, 5), W(1, 5, 4)]),
    "matmul-batched-b": Case("MatMul", [X(2, 3, 5), W(2, 5, 4)]),
    "matmul-broadcast-both": Case("MatMul", [X(3, 1, 2, 5), W(1, 2, 5, 4)]),
    "matmul-a-1d-batched-b": Case("MatMul", [X(5), W(2, 5, 3)]),
    # MatMul of two activations (ops/matmul.py): numpy.matmul's ranks and broadcasting
    "matmul-act-2d": Case("MatMul", [X(3, 5), X(5, 4)]),
    "matmul-act-batched": Case("MatMul", [X(2, 3, 5), X(2, 5, 4)]),
    "matmul-act-bcast": Case("MatMul", [X(2, 1, 3, 5), X(4, 5, 2)]),
    "matmul-act-1d-3d": Case("MatMul", [X(5), X(2, 5, 3)]),
    "matmul-act-3d-1d": Case("MatMul", [X(2, 3, 5), X(5)]),
    # LSTM / GRU (ops/recurrent.py): output Y (Y_h, Y_c and layout 1: tests/test_seq_ops.py)
    "lstm-forward": Case("LSTM", [X(5, 2, 3), W(1, 16, 3), W(1, 16, 4), W(1, 32)], hidden_size=4),
    "lstm-bidirectional-h0-c0": Case("LSTM", [X(4, 2, 3), W(2, 12, 3), W(2, 12, 3), W(2, 24), NONE, W(2, 2, 3),
                                              W(2, 2, 3)], hidden_size=3, direction="bidirectional"),
    "lstm-reverse-seq-lens": Case("LSTM", [X(4, 1, 2), W(1, 20, 2), W(1, 20, 5), NONE, C([4], np.int32)],
                                  hidden_size=5, direction="reverse"),
    "lstm-computed-states": Case("LSTM", [X(5, 2, 3), W(1, 16, 3), W(1, 16, 4), W(1, 32), NONE, X(1, 2, 4),
                                          X(1, 2, 4)], hidden_size=4),
    "gru-forward": Case("GRU", [X(6, 2, 3), W(1, 12, 3), W(1, 12, 4), W(1, 24)], hidden_size=4),
    "gru-computed-state": Case("GRU", [X(6, 2, 3), W(2, 12, 3), W(2, 12, 4), W(2, 24), NONE, X(2, 2, 4, scale=0.5)],
                               hidden_size=4, direction="bidirectional"),
    "gru-linear-before-reset": Case("GRU", [X(5, 1, 4), W(1, 9, 4), W(1, 9, 3), W(1, 18), NONE, W(1, 1, 3)],
                                    hidden_size=3, linear_before_reset=1),
    "gru-bidirectional": Case("GRU", [X(3, 2, 2), W(2, 15, 2), W(2, 15, 5), W(2, 30)], hidden_size=5,
                              direction="bidirectional"),
    # Add / Mul
    "add-per-channel": Case("Add", [X(1, 3, 4, 4), W(3, 1, 1)]),
    "add-scalar-0d": Case("Add", [X(1, 3, 4, 4), C(0.75)]),
    "add-scalar-1": Case("Add", [X(1, 3, 4, 4), C([-2.0])]),
    "add-two-inputs": Case("Add", [X(1, 3, 4, 4), X(1, 3, 4, 4)]),
    "add-two-broadcast": Case("Add", [X(1, 3, 4, 4), X(1, 3, 1, 1)]),
    "add-rank-broadcast": Case("Add", [X(2, 3), X(3)]),
    "add-const-first": Case("Add", [W(3, 1, 1), X(1, 3, 4, 4)]),
    "add-both-broadcast": Case("Add", [X(1, 3, 1, 4), X(1, 1, 5, 1)]),
    "mul-per-channel": Case("Mul", [X(1, 3, 4, 4), W(3, 1, 1)]),
    "mul-scalar": Case("Mul", [X(1, 3, 4, 4), C(-0.5)]),
    "mul-two-inputs": Case("Mul", [X(1, 3, 4, 4), X(1, 3, 4, 4)]),
    "mul-two-broadcast": Case("Mul", [X(1, 1, 4, 4), X(1, 3, 1, 1)]),
    # Concat
    "concat-axis1": Case("Concat", [X(1, 2, 4, 4), X(1, 3, 4, 4)], axis=1),
    "concat-axis3": Case("Concat", [X(1, 2, 4, 3), X(1, 2, 4, 5)], axis=3),
    "concat-axis-neg1-three": Case("Concat", [X(1, 2, 3), X(1, 2, 1), X(1, 2, 4)], axis=-1),
    "concat-2d-axis0": Case("Concat", [X(2, 3), X(1, 3)], axis=0),
    "concat-const": Case("Concat", [W(1, 2, 4), X(1, 3, 4)], axis=1),
    # MaxPool
    "maxpool-k2s2": Case("MaxPool", [X(1, 3, 8, 8)], kernel_shape=[2, 2], strides=[2, 2]),
    "maxpool-k3s1-pad1": Case("MaxPool", [X(1, 3, 7, 7)], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "maxpool-asym-pads": Case("MaxPool", [X(1, 2, 8, 8)], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0]),
    "maxpool-ceil": Case("MaxPool", [X(1, 2, 8, 8)], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "maxpool-ceil-pad": Case("MaxPool", [X(1, 2, 9, 10)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                             ceil_mode=1),
    "maxpool-same-upper": Case("MaxPool", [X(1, 2, 9, 9)], kernel_shape=[3, 3], strides=[2, 2],
                               auto_pad="SAME_UPPER"),
    "maxpool-same-lower": Case("MaxPool", [X(1, 2, 8, 8)], kernel_shape=[2, 2], auto_pad="SAME_LOWER"),
    "maxpool-valid": Case("MaxPool", [X(1, 2, 9, 9)], kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID"),
    "maxpool-kernel-2x3": Case("MaxPool", [X(2, 2, 8, 9)], kernel_shape=[2, 3], strides=[2, 1]),
    "maxpool-negative": Case("MaxPool", [X(1, 2, 6, 6, scale=-1.0)], kernel_shape=[3, 3], pads=[2, 2, 2, 2]),
    # AveragePool
    "avgpool-k2s2": Case("AveragePool", [X(1, 3, 8, 8)], kernel_shape=[2, 2], strides=[2, 2]),
    "avgpool-pad-exclude": Case("AveragePool", [X(1, 3, 7, 7)], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "avgpool-pad-include": Case("AveragePool", [X(1, 3, 7, 7)], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                count_include_pad=1),
    "avgpool-asym-include": Case("AveragePool", [X(1, 2, 8, 8)], kernel_shape=[3, 3], strides=[2, 2],
                                 pads=[0, 1, 2, 0], count_include_pad=1),
    "avgpool-ceil": Case("AveragePool", [X(1, 2, 8, 8)], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "avgpool-ceil-pad-include": Case("AveragePool", [X(1, 2, 9, 10)], kernel_shape=[3, 3], strides=[2, 2],
                                     pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    "avgpool-ceil-pad-exclude": Case("AveragePool", [X(1, 2, 9, 10)], kernel_shape=[3, 3], strides=[2, 2],
                                     pads=[1, 1, 1, 1], ceil_mode=1),
    "avgpool-same-upper": Case("AveragePool", [X(1, 2, 9, 9)], kernel_shape=[3, 3], strides=[2, 2],
                               auto_pad="SAME_UPPER"),
    "avgpool-kernel-3x2": Case("AveragePool", [X(2, 2, 9, 8)], kernel_shape=[3, 2], strides=[1, 2]),
    "globalavgpool": Case("GlobalAveragePool", [X(1, 3, 5, 7)]),
    "globalavgpool-1x1": Case("GlobalAveragePool", [X(2, 4, 1, 1)]),
    "globalmaxpool": Case("GlobalMaxPool", [X(2, 3, 5, 7)]),
    "globalmaxpool-1d": Case("GlobalMaxPool", [X(2, 3, 7)]),
    "globalavgpool-3d": Case("GlobalAveragePool", [X(1, 3, 4, 5, 2)]),
    "maxpool-dilated": Case("MaxPool", [X(1, 2, 9, 10)], kernel_shape=[3, 2], dilations=[2, 3], strides=[2, 1],
                            pads=[1, 0, 2, 1], ceil_mode=1, opset=12),
    "avgpool-dilated-include-pad": Case("AveragePool", [X(1, 2, 9, 10)], kernel_shape=[2, 3], dilations=[3, 2],
                                        pads=[1, 2, 1, 0], count_include_pad=1, opset=19),
    "avgpool-dilated-ceil": Case("AveragePool", [X(1, 2, 10, 9)], kernel_shape=[3, 3], dilations=[2, 2],
                                 strides=[2, 2], ceil_mode=1, opset=19),
    "maxpool-3d": Case("MaxPool", [X(1, 2, 6, 7, 5)], kernel_shape=[2, 3, 2], strides=[2, 1, 2],
                       pads=[1, 1, 0, 0, 1, 1]),
    "maxpool-3d-dilated-ceil": Case("MaxPool", [X(1, 2, 9, 8, 9)], kernel_shape=[3, 2, 2], strides=[2, 2, 3],
                                    dilations=[2, 1, 2], ceil_mode=1),
    "avgpool-3d-include-pad": Case("AveragePool", [X(2, 2, 6, 5, 7)], kernel_shape=[3, 2, 3], strides=[2, 1, 2],
                                   pads=[1, 0, 1, 1, 1, 0], count_include_pad=1),
    "avgpool-3d-dilated-exclude": Case("AveragePool", [X(1, 3, 8, 7, 6)], kernel_shape=[2, 3, 2],
                                       dilations=[3, 1, 2], pads=[1, 1, 1, 0, 1, 0], opset=19),
    # PyTorch's global average pool: ReduceMean over H, W (axes as attribute before opset 18, an input after)
    "reducemean-hw-keepdims": Case("ReduceMean", [X(1, 6, 5, 7)], axes=[2, 3], keepdims=1),
    "reducemean-hw-negative": Case("ReduceMean", [X(2, 4, 3, 3)], axes=[-1, -2], keepdims=0),
    "reducemean-hw-opset18": Case("ReduceMean", [X(1, 8, 4, 6), C([2, 3], np.int64)], opset=18, keepdims=0),
    # data movement
    "reshape-0-minus1": Case("Reshape", [X(1, 2, 3, 4), C([0, -1], np.int64)]),
    "reshape-explicit": Case("Reshape", [X(1, 2, 3, 4), C([2, 12], np.int64)]),
    "reshape-flat": Case("Reshape", [X(1, 2, 3, 4), C([-1], np.int64)]),
    "reshape-0-0-minus1": Case("Reshape", [X(1, 2, 3, 4), C([0, 0, -1], np.int64)]),
    "reshape-up-rank": Case("Reshape", [X(2, 12), C([2, -1, 2, 3], np.int64)]),
    "flatten-axis0": Case("Flatten", [X(2, 3, 4, 5)], axis=0),
    "flatten-axis1": Case("Flatten", [X(2, 3, 4, 5)]),
    "flatten-axis2": Case("Flatten", [X(2, 3, 4, 5)], axis=2),
    "flatten-axis-neg1": Case("Flatten", [X(2, 3, 4, 5)], axis=-1),
    "transpose-nhwc": Case("Transpose", [X(1, 2, 3, 4)], perm=[0, 2, 3, 1]),
    "transpose-nchw": Case("Transpose", [X(1, 3, 4, 2)], perm=[0, 3, 1, 2]),
    "transpose-default": Case("Transpose", [X(2, 3, 4)]),
    "transpose-2d": Case("Transpose", [X(3, 5)], perm=[1, 0]),
    "squeeze-axis0": Case("Squeeze", [X(1, 3, 4), C([0], np.int64)]),
    "squeeze-two": Case("Squeeze", [X(2, 1, 4, 1), C([1, 3], np.int64)]),
    "squeeze-negative": Case("Squeeze", [X(2, 3, 1), C([-1], np.int64)]),
    "squeeze-all": Case("Squeeze", [X(1, 3, 1, 4)]),
    "unsqueeze-axis0": Case("Unsqueeze", [X(3, 4), C([0], np.int64)]),
    "unsqueeze-two": Case("Unsqueeze", [X(3, 4), C([1, 3], np.int64)]),
    "unsqueeze-negative": Case("Unsqueeze", [X(3, 4), C([-1], np.int64)]),
    "pad-zero": Case("Pad", [X(1, 2, 4, 4), C([0, 0, 1, 1, 0, 0, 1, 1], np.int64)]),
    "pad-value": Case("Pad", [X(1, 2, 4, 4), C([0, 0, 1, 2, 0, 0, 3, 0], np.int64), C(2.5)]),
    "pad-channels": Case("Pad", [X(1, 2, 3, 3), C([0, 1, 0, 0, 0, 2, 0, 0], np.int64), C(-1.0)]),
    "pad-2d": Case("Pad", [X(3, 4), C([1, 0, 0, 2], np.int64), C(0.5)], mode="constant"),
    "pad-reflect": Case("Pad", [X(1, 2, 5, 4), C([0, 1, 2, 3, 0, 0, 4, 1], np.int64)], mode="reflect"),
    "pad-edge": Case("Pad", [X(1, 2, 3, 4), C([0, 0, 2, 1, 0, 1, 3, 2], np.int64)], mode="edge"),
    "pad-wrap": Case("Pad", [X(2, 3, 4), C([0, 2, 3, 1, 1, 5], np.int64)], mode="wrap", opset=19),
    "pad-axes": Case("Pad", [X(1, 2, 3, 4), C([1, 2, 0, 3], np.int64), C(1.5), C([-1, 2], np.int64)], opset=18),
    "identity": Case("Identity", [X(2, 3)]),
    "dropout": Case("Dropout", [X(1, 3, 4, 4)]),
    "dropout-ratio": Case("Dropout", [X(2, 5), C(0.3)]),
    # activations
    "relu": Case("Relu", [X(1, 3, 4, 4)]),
    "clip-min-max": Case("Clip", [X(1, 3, 4, 4, scale=3.0), C(-1.0), C(1.5)]),
    "clip-min-only": Case("Clip", [X(2, 8, scale=3.0), C(0.0)]),
    "clip-max-only": Case("Clip", [X(2, 8, scale=3.0), NONE, C(6.0)]),
    "clip-none": Case("Clip", [X(2, 8, scale=3.0)]),
    "clip-relu6": Case("Clip", [X(1, 3, 4, 4, scale=5.0), C(0.0), C(6.0)]),
    "leakyrelu-default": Case("LeakyRelu", [X(1, 3, 4, 4)]),
    "leakyrelu-0.2": Case("LeakyRelu", [X(1, 3, 4, 4)], alpha=0.2),
    "sigmoid": Case("Sigmoid", [X(1, 3, 4, 4, scale=4.0)]),
    "hardswish": Case("HardSwish", [X(1, 3, 4, 4, scale=4.0)], opset=14),
    "tanh": Case("Tanh", [X(1, 3, 4, 4, scale=2.0)]),
    "softmax-2d": Case("Softmax", [X(2, 5)]),
    "softmax-axis1-2d": Case("Softmax", [X(2, 7)], axis=1),
    "softmax-4d-last": Case("Softmax", [X(1, 2, 3, 4)], axis=3),
    "softmax-large": Case("Softmax", [X(3, 10, scale=50.0)], axis=-1),
    # normalization
    "batchnorm": Case("BatchNormalization", [X(1, 3, 4, 4), W(3), W(3), W(3), W(3, positive=True)]),
    "batchnorm-eps": Case("BatchNormalization", [X(2, 4, 3, 3), W(4), W(4), W(4), W(4, positive=True)],
                          epsilon=1e-2),
    "batchnorm-2d": Case("BatchNormalization", [X(5, 3), W(3), W(3), W(3), W(3, positive=True)]),
    # older opsets: the frontend upgrades them to 13 (attributes become inputs)
    "opset11-softmax-last": Case("Softmax", [X(2, 6)], opset=11, axis=1),
    "opset11-clip": Case("Clip", [X(2, 8, scale=3.0), C(-0.5), C(0.5)], opset=11),
    "opset6-clip-attrs": Case("Clip", [X(2, 8, scale=3.0)], opset=6, min=-1.0, max=2.0),
    "opset11-squeeze": Case("Squeeze", [X(2, 1, 4, 1)], opset=11, axes=[1, 3]),
    "opset11-unsqueeze": Case("Unsqueeze", [X(3, 4)], opset=11, axes=[0, 2]),
    "opset2-pad": Case("Pad", [X(1, 2, 3, 3)], opset=2, pads=[0, 0, 1, 0, 0, 0, 0, 2], value=1.5),
    "opset11-pad": Case("Pad", [X(1, 2, 3, 3), C([0, 0, 1, 0, 0, 0, 0, 2], np.int64), C(-2.0)], opset=11),
    "opset10-dropout": Case("Dropout", [X(2, 5)], opset=10, ratio=0.2),
    "opset9-batchnorm": Case("BatchNormalization", [X(1, 3, 4, 4), W(3), W(3), W(3), W(3, positive=True)],
                             opset=9),
    "opset11-gemm": Case("Gemm", [X(3, 5), W(4, 5), W(4)], opset=11, transB=1, alpha=2.0),
    "opset11-flatten-neg": Case("Flatten", [X(2, 3, 4)], opset=11, axis=-2),
    "opset11-conv-same": Case("Conv", [X(1, 2, 7, 7), W(3, 2, 2, 2)], opset=11, auto_pad="SAME_UPPER"),
    "opset11-avgpool": Case("AveragePool", [X(1, 2, 7, 7)], opset=11, kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    "opset12-maxpool-dilated-none": Case("MaxPool", [X(1, 2, 6, 6)], opset=12, kernel_shape=[2, 2]),
}


# element-wise math, reductions, softmax and normalization (issue 14)
MATH_CASES: dict[str, Case] = {
    "sub-bcast": Case("Sub", [X(1, 3, 4, 4), X(1, 3, 1, 4)]),
    "sub-const-first": Case("Sub", [C(1.0), X(2, 5)]),
    "div-two": Case("Div", [X(2, 3, 4), X(2, 3, 4)]),
    "div-const": Case("Div", [X(2, 3, 4), W(3, 4, positive=True)]),
    "mod-fmod1": Case("Mod", [X(2, 3, 4, scale=4.0), W(3, 4, positive=True)], fmod=1),
    "mod-fmod0-signs": Case("Mod", [X(2, 3, 4, scale=4.0), C([[1.5], [-0.75], [2.0]])], fmod=0, opset=28),
    "pow-scalar": Case("Pow", [X(2, 3, 4), C(2.0)]),
    "pow-two": Case("Pow", [X(2, 3), X(2, 3)]),  # NaN for a negative base, as ORT
    "pow-base-const": Case("Pow", [C(2.0), X(2, 3, 4)]),
    "min-three": Case("Min", [X(2, 3, 4), X(3, 4), X(1, 4)]),
    "max-two": Case("Max", [X(2, 3, 4), X(3, 1)]),
    "max-one": Case("Max", [X(2, 3)]),
    "sum-four": Case("Sum", [X(2, 3, 4), X(3, 4), X(1, 4), W(4)]),
    "prelu-channel": Case("PRelu", [X(1, 3, 4, 4), W(3, 1, 1)]),
    "prelu-scalar": Case("PRelu", [X(2, 5), C([0.25])]),
    "sqrt": Case("Sqrt", [X(2, 5)]),
    "exp": Case("Exp", [X(2, 5, scale=3.0)]),
    "log": Case("Log", [X(2, 5)]),
    "erf": Case("Erf", [X(2, 5)]),
    "neg": Case("Neg", [X(2, 5)]),
    "abs": Case("Abs", [X(2, 5)]),
    "reciprocal": Case("Reciprocal", [X(2, 5)]),
    "hardsigmoid": Case("HardSigmoid", [X(2, 5, scale=4.0)], alpha=0.3, beta=0.4),
    "elu": Case("Elu", [X(2, 5)], alpha=0.5),
    "selu": Case("Selu", [X(2, 5)]),
    "softplus": Case("Softplus", [X(2, 5, scale=30.0)]),
    "gelu": Case("Gelu", [X(2, 5, scale=3.0)], opset=20),
    "gelu-tanh": Case("Gelu", [X(2, 5, scale=3.0)], opset=20, approximate="tanh"),
    "mish": Case("Mish", [X(2, 5, scale=3.0)], opset=18),
    "softmax-axis1-3d": Case("Softmax", [X(2, 5, 3)], axis=1),
    "softmax-axis0": Case("Softmax", [X(4, 3)], axis=0),
    "logsoftmax-last": Case("LogSoftmax", [X(3, 10, scale=3.0)]),
    "logsoftmax-axis1-4d": Case("LogSoftmax", [X(1, 4, 3, 2)], axis=1),
    "opset11-logsoftmax": Case("LogSoftmax", [X(3, 6)], opset=11, axis=1),
    "reducesum-axes-input": Case("ReduceSum", [X(2, 3, 4), C([1], np.int64)], keepdims=0),
    "reducesum-noop-empty": Case("ReduceSum", [X(2, 3, 4), C([], np.int64)], noop_with_empty_axes=1),
    "reducesum-all": Case("ReduceSum", [X(2, 3, 4)]),
    "reducemean-axis1": Case("ReduceMean", [X(2, 3, 4)], axes=[1]),
    "reducemean-opset18-alternating": Case("ReduceMean", [X(2, 3, 4, 5), C([0, 2], np.int64)], opset=18),
    "reducemax-last": Case("ReduceMax", [X(2, 3, 4)], axes=[-1], keepdims=0),
    "reducemin-all": Case("ReduceMin", [X(2, 3, 4)], keepdims=0),
    "reduceprod": Case("ReduceProd", [X(2, 3, 4)], axes=[2]),
    "reducesumsquare": Case("ReduceSumSquare", [X(2, 3, 4)], axes=[0, 1]),
    "reducel1": Case("ReduceL1", [X(2, 3, 4)], axes=[1]),
    "reducel2-opset18": Case("ReduceL2", [X(2, 3, 4), C([2], np.int64)], opset=18, keepdims=0),
    "reducelogsum": Case("ReduceLogSum", [X(2, 3, 4)], axes=[1]),  # NaN where a sum is negative, as ORT
    "reducelogsumexp": Case("ReduceLogSumExp", [X(2, 3, 4, scale=20.0)], axes=[2]),
    "layernorm-last": Case("LayerNormalization", [X(2, 3, 8), W(8), W(8)], opset=17),
    "layernorm-axis1-nobias": Case("LayerNormalization", [X(2, 3, 8), W(3, 8)], opset=17, axis=1, epsilon=1e-3),
    "instancenorm": Case("InstanceNormalization", [X(2, 3, 4, 5), W(3), W(3)], epsilon=1e-3),
    "instancenorm-1d": Case("InstanceNormalization", [X(2, 3, 7), W(3), W(3)]),
    "groupnorm-opset21": Case("GroupNormalization", [X(2, 6, 4, 5), W(6), W(6)], opset=21, num_groups=3),
}
CASES.update(MATH_CASES)

@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_onnxruntime(tmp_path, name):
    case = CASES[name]
    g, feeds, expected = load_case(case, tmp_path)
    assert [n.op for n in g.nodes] == [case.op]
    # shape inference: the IR's output shape is ORT's
    assert g.tensors[g.outputs[0]].shape == expected.shape
    node = g.nodes[0]
    assert tuple(REGISTRY[case.op].infer(node, g)[0]) == expected.shape
    ours = run_float(g, feeds)[g.outputs[0]]
    assert_close(ours, expected)


# 1-D layers: the frontend runs them on the 2-D ops (passes/layers_1d.py: Unsqueeze, the layer, Squeeze)
CASES_1D: dict[str, Case] = {
    "conv-1d": Case("Conv", [X(1, 3, 17), W(4, 3, 3), W(4)], pads=[1, 1]),
    "conv-1d-stride-dilation": Case("Conv", [X(2, 4, 23), W(6, 2, 5)], group=2, strides=[2], dilations=[2],
                                    pads=[0, 3]),
    "conv-1d-same-lower": Case("Conv", [X(1, 3, 10), W(2, 3, 4)], auto_pad="SAME_LOWER", strides=[3]),
    "maxpool-1d": Case("MaxPool", [X(1, 3, 16)], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "maxpool-1d-ceil": Case("MaxPool", [X(1, 3, 16)], kernel_shape=[3], strides=[2], ceil_mode=1),
    "avgpool-1d-include-pad": Case("AveragePool", [X(1, 2, 15)], kernel_shape=[4], strides=[3], pads=[2, 1],
                                   count_include_pad=1),
    "avgpool-1d-same-upper": Case("AveragePool", [X(1, 2, 15)], kernel_shape=[4], strides=[2],
                                  auto_pad="SAME_UPPER"),
    "convt-1d": Case("ConvTranspose", [X(1, 3, 7), W(3, 2, 4), W(2)], strides=[3], pads=[1, 2], output_padding=[1]),
}


@pytest.mark.parametrize("name", sorted(CASES_1D))
def test_1d_layer_matches_onnxruntime(tmp_path, name):
    case = CASES_1D[name]
    g, feeds, expected = load_case(case, tmp_path)
    assert [n.op for n in g.nodes] == ["Unsqueeze", case.op, "Squeeze"]
    assert len(g.tensors[g.nodes[1].inputs[0]].shape) == 4
    assert g.tensors[g.outputs[0]].shape == expected.shape
    assert_close(run_float(g, feeds)[g.outputs[0]], expected)


# --- ops the frontend removes or imports: tested on hand-built IR ---------------------------------

def test_constant_op(tmp_path):
    value = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    nodes = [helper.make_node("Constant", [], ["k"], name="const0", value=numpy_helper.from_array(value, "kv")),
             helper.make_node("Add", ["x", "k"], ["y"], name="add0")]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    onnx.save(model, str(tmp_path / "c.onnx"))
    g = load_model(tmp_path / "c.onnx", PROFILE, BOARD, {})
    assert_close(run_float(g, {"x": x})["y"], expected)
    # the op itself, as constant folding would call it
    node = Node("Constant", "const0", [], ["k"], {"value": value})
    op = REGISTRY["Constant"]
    assert tuple(op.infer(node, Graph())[0]) == value.shape
    np.testing.assert_array_equal(op.run_float(node, Graph(), [])[0], value)


def qdq_graph(op: str, x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, axis: int | None,
              x_const: bool = False) -> tuple[Graph, Node]:
    g = Graph("qdq")
    g.tensors["x"] = Tensor("x", x.shape, str(x.dtype), x if x_const else None)
    g.tensors["s"] = Tensor("s", scale.shape, "float32", scale)
    inputs = ["x", "s"]
    if zp is not None:
        g.tensors["z"] = Tensor("z", zp.shape, str(zp.dtype), zp)
        inputs.append("z")
    attrs = {} if axis is None else {"axis": axis}
    node = Node(op, f"{op.lower()}0", inputs, ["y"], attrs)
    g.nodes.append(node)
    if not x_const:
        g.inputs.append("x")
    return g, node


def qdq_ort(op: str, x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, axis: int | None) -> np.ndarray:
    inits = [numpy_helper.from_array(scale, "s")] + ([numpy_helper.from_array(zp, "z")] if zp is not None else [])
    attrs = {} if axis is None else {"axis": axis}
    out_type = TensorProto.FLOAT if op == "DequantizeLinear" else \
        (helper.np_dtype_to_tensor_dtype(zp.dtype) if zp is not None else TensorProto.UINT8)
    node = helper.make_node(op, ["x", "s"] + (["z"] if zp is not None else []), ["y"], **attrs)
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info(
        "x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
        [helper.make_tensor_value_info("y", out_type, list(x.shape))], inits)
    (y,) = ort_run(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x})
    return y


QDQ_CASES = {
    "q-int8": ("QuantizeLinear", np.float32, np.array(0.05, np.float32), np.array(3, np.int8), None),
    "q-uint8": ("QuantizeLinear", np.float32, np.array(0.02, np.float32), np.array(128, np.uint8), None),
    "q-no-zp": ("QuantizeLinear", np.float32, np.array(0.03, np.float32), None, None),
    "q-per-axis": ("QuantizeLinear", np.float32, np.array([0.01, 0.05, 0.1], np.float32),
                   np.array([0, -3, 5], np.int8), 1),
    "dq-int8": ("DequantizeLinear", np.int8, np.array(0.05, np.float32), np.array(-7, np.int8), None),
    "dq-uint8": ("DequantizeLinear", np.uint8, np.array(0.02, np.float32), np.array(128, np.uint8), None),
    "dq-per-axis": ("DequantizeLinear", np.int8, np.array([0.01, 0.05, 0.1], np.float32),
                    np.array([0, 0, 0], np.int8), 0),
    "dq-int32-bias": ("DequantizeLinear", np.int32, np.array(0.001, np.float32), np.array(0, np.int32), None),
}


@pytest.mark.parametrize("name", sorted(QDQ_CASES))
def test_qdq_ops_match_onnxruntime(name):
    op, dtype, scale, zp, axis = QDQ_CASES[name]
    rng = np.random.default_rng(1)
    if op == "QuantizeLinear":
        x = (rng.standard_normal((2, 3, 4)) * 3).astype(np.float32)
        x.flat[:4] = [0.025, -0.075, 100.0, -100.0]  # ties (round half to even) and saturation
    elif dtype == np.int32:
        x = rng.integers(-5000, 5000, size=(3,)).astype(np.int32)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max + 1, size=(3, 2, 4)).astype(dtype)
    expected = qdq_ort(op, x, scale, zp, axis)
    g, node = qdq_graph(op, x, scale, zp, axis, x_const=(op == "DequantizeLinear"))
    REGISTRY[op].check(node, g)
    assert tuple(REGISTRY[op].infer(node, g)[0]) == expected.shape
    (ours,) = REGISTRY[op].run_float(node, g, [x])
    assert ours.dtype == expected.dtype
    if op == "QuantizeLinear":
        np.testing.assert_array_equal(ours, expected)
    else:
        np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7)


# the shape and data-movement ops have their own grid (test_shape_ops.py, which checks that it covers them),
# and so have the ops of integer and bool tensors (test_integer_ops.py)
SHAPE_OP_MODULES = ("movement", "resize", "static", "select")
INTEGER_OP_MODULES = ("cast", "compare", "index", "gather")
# ops imported as other layers (ONNX Runtime's dynamic quantization): tests/test_graph_import.py, which
# checks that it covers them, against ONNX Runtime and onnx's reference evaluator
IMPORTED_OP_MODULES = ("dynamic_quant",)


def test_every_registered_op_is_covered():
    covered = {c.op for c in CASES.values()} | {spec[0] for spec in QDQ_CASES.values()} | {"Constant"}
    covered |= {n for n, op in REGISTRY.items() if not n.startswith("_")
                and type(op).__module__.rsplit(".", 1)[-1] in SHAPE_OP_MODULES + INTEGER_OP_MODULES + IMPORTED_OP_MODULES}
    assert covered == set(supported_ops()), f"untested: {sorted(set(supported_ops()) - covered)}"


# --- the int8 rule: quantized one-node graphs stay close to float ----------------------------------

INT8_CASES = {
    "conv": Case("Conv", [X(1, 3, 8, 8), W(4, 3, 3, 3), W(4)], pads=[1, 1, 1, 1]),
    "conv-depthwise-s2": Case("Conv", [X(1, 4, 9, 9), W(4, 1, 3, 3), W(4)], group=4, strides=[2, 2],
                              pads=[1, 1, 1, 1]),
    "conv-same-lower": Case("Conv", [X(1, 3, 8, 8), W(4, 3, 4, 4), W(4)], auto_pad="SAME_LOWER", dilations=[1, 1]),
    "gemm": Case("Gemm", [X(2, 16), W(8, 16), W(8)], transB=1),
    "gemm-transB0": Case("Gemm", [X(2, 16), W(16, 8), W(8)]),
    "gemm-alpha-beta": Case("Gemm", [X(2, 16), W(8, 16), W(8)], transB=1, alpha=0.5, beta=2.0),
    "matmul-3d": Case("MatMul", [X(2, 3, 16), W(16, 8)]),
    "matmul-batched-b": Case("MatMul", [X(2, 3, 16), W(2, 16, 8)]),
    "matmul-broadcast-both": Case("MatMul", [X(3, 1, 2, 16), W(1, 2, 16, 8)]),
    "matmul-act-batched": Case("MatMul", [X(2, 3, 16), X(2, 16, 8)]),
    "lstm-bidirectional": Case("LSTM", [X(12, 1, 6), W(2, 32, 6), W(2, 32, 8), W(2, 64)], hidden_size=8,
                               direction="bidirectional"),
    "gru-linear-before-reset": Case("GRU", [X(12, 2, 6), W(1, 24, 6), W(1, 24, 8), W(1, 48)], hidden_size=8,
                                    linear_before_reset=1),
    "gru-reset-first": Case("GRU", [X(12, 2, 6), W(1, 24, 6), W(1, 24, 8), W(1, 48)], hidden_size=8),
    "lstm-computed-states": Case("LSTM", [X(10, 2, 6), W(1, 32, 6), W(1, 32, 8), W(1, 64), NONE, X(1, 2, 8, scale=0.5),
                                          X(1, 2, 8)], hidden_size=8),
    "add-const": Case("Add", [X(1, 3, 4, 4), W(3, 1, 1)]),
    "add-two-inputs": Case("Add", [X(1, 3, 4, 4), X(1, 3, 4, 4, scale=3.0)]),
    "add-broadcast": Case("Add", [X(1, 3, 4, 4), X(1, 3, 1, 1)]),
    "mul-two-inputs": Case("Mul", [X(1, 3, 4, 4), X(1, 3, 4, 4)]),
    "avgpool": Case("AveragePool", [X(1, 3, 8, 8)], kernel_shape=[2, 2], strides=[2, 2]),
    "avgpool-pad-exclude": Case("AveragePool", [X(1, 3, 7, 7)], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "avgpool-pad-include-ceil": Case("AveragePool", [X(1, 2, 9, 10)], kernel_shape=[3, 3], strides=[2, 2],
                                     pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    "globalavgpool": Case("GlobalAveragePool", [X(1, 3, 5, 7)]),
    "reducemean-hw-opset18": Case("ReduceMean", [X(1, 8, 4, 6), C([2, 3], np.int64)], opset=18, keepdims=0),
    "maxpool-ceil-pad": Case("MaxPool", [X(1, 2, 9, 10)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                             ceil_mode=1),
    "concat": Case("Concat", [X(1, 2, 4, 4), X(1, 3, 4, 4, scale=4.0)], axis=1),
    "concat-const": Case("Concat", [X(1, 2, 4, 4), W(1, 3, 4, 4)], axis=1),
    "pad-reflect": Case("Pad", [X(1, 2, 5, 4), C([0, 0, 2, 3, 0, 0, 4, 1], np.int64)], mode="reflect"),
    "convt-s2-group2": Case("ConvTranspose", [X(1, 4, 5, 5), W(4, 3, 3, 3), W(6)], strides=[2, 2], group=2,
                            pads=[1, 1, 0, 0], output_padding=[1, 1]),
    "conv-1d": Case("Conv", [X(1, 4, 20), W(6, 4, 3), W(6)], strides=[2], pads=[1, 1]),
    "maxpool-1d": Case("MaxPool", [X(1, 3, 20)], kernel_shape=[3], strides=[2], ceil_mode=1),
    "avgpool-1d": Case("AveragePool", [X(1, 3, 20)], kernel_shape=[4], pads=[1, 2]),
    "convt-1d": Case("ConvTranspose", [X(1, 4, 9), W(4, 3, 3), W(3)], strides=[2]),
    "globalmaxpool": Case("GlobalMaxPool", [X(1, 3, 5, 7)]),
    "globalavgpool-1d": Case("GlobalAveragePool", [X(1, 6, 9)]),
    "avgpool-dilated": Case("AveragePool", [X(1, 3, 9, 9)], kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1],
                            opset=19),
    "avgpool-3d": Case("AveragePool", [X(1, 2, 6, 6, 6)], kernel_shape=[2, 3, 2], strides=[2, 1, 2],
                       pads=[0, 1, 1, 1, 1, 0]),
    "maxpool-3d": Case("MaxPool", [X(1, 2, 6, 6, 6)], kernel_shape=[3, 2, 2], dilations=[2, 1, 1]),
    "gemm-transA-matrix-C": Case("Gemm", [X(16, 2), W(16, 8), W(2, 8)], transA=1),
    "sigmoid": Case("Sigmoid", [X(1, 3, 4, 4, scale=4.0)]),
    "softmax": Case("Softmax", [X(4, 10, scale=2.0)]),
}
INT8_CASES.update({
    "sub-two": Case("Sub", [X(1, 3, 4, 4), X(1, 3, 1, 4, scale=2.0)]),
    "div-const": Case("Div", [X(2, 3, 4), W(3, 4, positive=True)]),
    "pow-scalar": Case("Pow", [X(2, 3, 4), C(2.0)]),
    "min-three": Case("Min", [X(2, 3, 4), X(3, 4), X(1, 4)]),
    "max-two": Case("Max", [X(2, 3, 4), X(3, 4, scale=2.0)]),
    "sum-four": Case("Sum", [X(2, 3, 4), X(3, 4), X(1, 4), W(4)]),
    "prelu-channel": Case("PRelu", [X(1, 3, 4, 4), W(3, 1, 1)]),
    "gelu": Case("Gelu", [X(2, 16, scale=2.0)], opset=20),
    "mish": Case("Mish", [X(2, 16, scale=2.0)], opset=18),
    "softmax-axis1": Case("Softmax", [X(2, 6, 5, scale=2.0)], axis=1),
    "logsoftmax": Case("LogSoftmax", [X(4, 10, scale=2.0)]),
    "reducesum": Case("ReduceSum", [X(2, 8, 6), C([1], np.int64)], keepdims=0),
    "reducemean-axis1": Case("ReduceMean", [X(2, 8, 6)], axes=[1]),
    "reducemax": Case("ReduceMax", [X(2, 8, 6)], axes=[2]),
    "reducel2": Case("ReduceL2", [X(2, 8, 6)], axes=[1]),
    "layernorm": Case("LayerNormalization", [X(2, 4, 16, scale=2.0), W(16), W(16)], opset=17),
    "instancenorm": Case("InstanceNormalization", [X(1, 3, 5, 6), W(3), W(3)]),
    "groupnorm": Case("GroupNormalization", [X(1, 6, 4, 5), W(6), W(6)], opset=21, num_groups=2),
})


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("name", sorted(INT8_CASES))
def test_int8_rule_close_to_float(tmp_path, name):
    case = INT8_CASES[name]
    g, _, _ = load_case(case, tmp_path)
    optimize(g)
    calib = [case.model_and_feeds(seed)[1] for seed in range(1, 17)]
    tests = [case.model_and_feeds(seed)[1] for seed in range(100, 104)]
    model = case.model_and_feeds(0)[0]
    float_out = [ort_run(model, feeds)[0] for feeds in tests]
    quantize_graph(g, calibrate(g, calib, len(calib)))
    for feeds, expected in zip(tests, float_out):
        q_out, deq = run_quantized_model(g, feeds)
        (name_out,) = g.outputs
        assert q_out[name_out].dtype == np.int8
        assert deq[name_out].shape == expected.shape
        assert cosine(deq[name_out], expected) > 0.99, cosine(deq[name_out], expected)
