"""Generate the graph-import fixtures of tests/fixtures/import/ (issue 39): small models built
with onnx.helper and numpy in the shapes that exporters and quantizers write them, so the
tests need neither the exporters nor the original models.

- vad_if.onnx: a Silero-style voice-activity detector, exported "for runtimes without control
  flow" yet with one `If` on the scalar sample-rate input `sr` around the whole net (16 kHz
  branch and 8 kHz branch, different weights); a Conv front end, an LSTM with its state h/c as
  inputs and outputs, a sigmoid probability. Builds with --input-value sr=16000 (or 8000).
- logmel_db.onnx: torchaudio's AmplitudeToDB(stype="power", top_db=80) on a log-mel input, as
  its export writes it: Clip(x_db, ReduceMax(x_db) - 80, ) (a min computed at run time), then a
  small classifier.
- paddle_conv.onnx: a paddle2onnx-style conv net (opset 11) whose batch is `dim_value: -1` on
  the input and the output, with Reshape to [0, -1]; builds with --input-shape x=1x3x16x16.
- dynq_convnet.onnx: a Conv + Relu + MatMul net quantized by ONNX Runtime's
  `quantize_dynamic` (DynamicQuantizeLinear, ConvInteger, MatMulInteger, Cast, Mul), int8
  weights; and dynq_convnet_float.onnx, the float model it came from.
- vad_if_dynq.onnx: vad_if.onnx through `quantize_dynamic` with its If branches quantized
  (extra_options EnableSubgraph): ConvInteger, MatMulInteger and com.microsoft's
  DynamicQuantizeLSTM inside the branches (and no com.microsoft opset import, as ORT writes it).

Run from the repository (the .venv has onnx, numpy and onnxruntime):
    .venv/bin/python scripts/make_fixtures_import.py
The .onnx files are checked in.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "import"
FLOAT = TensorProto.FLOAT


def const(name: str, data: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(data), name)


def save(model: onnx.ModelProto, name: str) -> None:
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(OUT / name))
    print(f"wrote {OUT / name}")


# ---------------------------------------------------------------- Silero-style VAD


CHUNK, HIDDEN, FILTERS = 256, 16, 8


def vad_branch(tag: str, rng: np.random.Generator, kernel: int, stride: int) -> onnx.GraphProto:
    """One sample rate's net: reads the outer x, h, c; outputs prob, hn, cn."""
    frames = (CHUNK - kernel) // stride + 1
    p = f"{tag}_"
    inits = [
        const(p + "shape3", np.array([1, 1, CHUNK], np.int64)),
        const(p + "conv_w", (rng.standard_normal((FILTERS, 1, kernel)) / np.sqrt(kernel)).astype(np.float32)),
        const(p + "conv_b", (0.1 * rng.standard_normal(FILTERS)).astype(np.float32)),
        const(p + "lstm_w", (0.4 * rng.standard_normal((1, 4 * HIDDEN, FILTERS))).astype(np.float32)),
        const(p + "lstm_r", (0.3 * rng.standard_normal((1, 4 * HIDDEN, HIDDEN))).astype(np.float32)),
        const(p + "lstm_b", (0.1 * rng.standard_normal((1, 8 * HIDDEN))).astype(np.float32)),
        const(p + "shape2", np.array([1, HIDDEN], np.int64)),
        const(p + "out_w", (0.5 * rng.standard_normal((HIDDEN, 1))).astype(np.float32)),
        const(p + "out_b", np.array([0.05], np.float32)),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", p + "shape3"], [p + "x3"], name=p + "reshape_in"),
        helper.make_node("Conv", [p + "x3", p + "conv_w", p + "conv_b"], [p + "conv"], name=p + "conv",
                         kernel_shape=[kernel], strides=[stride]),
        helper.make_node("Relu", [p + "conv"], [p + "relu"], name=p + "relu"),
        helper.make_node("Transpose", [p + "relu"], [p + "seq"], name=p + "to_time_major", perm=[2, 0, 1]),
        helper.make_node("LSTM", [p + "seq", p + "lstm_w", p + "lstm_r", p + "lstm_b", "", "h", "c"],
                         [p + "y", p + "hn", p + "cn"], name=p + "lstm", hidden_size=HIDDEN),
        helper.make_node("Reshape", [p + "hn", p + "shape2"], [p + "h2"], name=p + "reshape_h"),
        helper.make_node("MatMul", [p + "h2", p + "out_w"], [p + "logit0"], name=p + "head"),
        helper.make_node("Add", [p + "logit0", p + "out_b"], [p + "logit"], name=p + "head_bias"),
        helper.make_node("Sigmoid", [p + "logit"], [p + "prob"], name=p + "prob"),
    ]
    assert frames > 0
    outputs = [helper.make_tensor_value_info(p + "prob", FLOAT, [1, 1]),
               helper.make_tensor_value_info(p + "hn", FLOAT, [1, 1, HIDDEN]),
               helper.make_tensor_value_info(p + "cn", FLOAT, [1, 1, HIDDEN])]
    return helper.make_graph(nodes, f"vad_{tag}", [], outputs, inits)


def vad_if() -> onnx.ModelProto:
    rng = np.random.default_rng(39)
    then_g = vad_branch("sr16k", rng, kernel=16, stride=8)
    else_g = vad_branch("sr8k", rng, kernel=8, stride=4)
    nodes = [
        helper.make_node("Constant", [], ["k16000"], name="k16000", value=const("", np.array(16000, np.int64))),
        helper.make_node("Equal", ["sr", "k16000"], ["is16k"], name="is16k"),
        helper.make_node("If", ["is16k"], ["output", "hn", "cn"], name="If_sr", then_branch=then_g,
                         else_branch=else_g),
    ]
    inputs = [helper.make_tensor_value_info("x", FLOAT, [1, CHUNK]),
              helper.make_tensor_value_info("sr", TensorProto.INT64, []),
              helper.make_tensor_value_info("h", FLOAT, [1, 1, HIDDEN]),
              helper.make_tensor_value_info("c", FLOAT, [1, 1, HIDDEN])]
    outputs = [helper.make_tensor_value_info("output", FLOAT, [1, 1]),
               helper.make_tensor_value_info("hn", FLOAT, [1, 1, HIDDEN]),
               helper.make_tensor_value_info("cn", FLOAT, [1, 1, HIDDEN])]
    graph = helper.make_graph(nodes, "silero_style_vad", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


# ---------------------------------------------------------------- AmplitudeToDB(top_db)


def logmel_db() -> onnx.ModelProto:
    """x: mel power [1, 1, 40, 32] -> db = 10 log10(max(x, amin)) - 10 log10(max(amin, ref)),
    db = Clip(db, max(db) - top_db) (torchaudio's amplitude_to_DB), then Conv, Relu, global
    average pool and a Gemm to 3 classes. Outputs db and logits."""
    rng = np.random.default_rng(80)
    inits = [const("amin", np.array(1e-10, np.float32)), const("ten_over_ln10", np.array(10 / np.log(10), np.float32)),
             const("db_ref", np.array(0.0, np.float32)), const("top_db", np.array(80.0, np.float32)),
             const("conv_w", (0.05 * rng.standard_normal((4, 1, 3, 3))).astype(np.float32)),
             const("conv_b", (0.1 * rng.standard_normal(4)).astype(np.float32)),
             const("fc_w", (rng.standard_normal((3, 4)) / 2).astype(np.float32)),
             const("fc_b", np.zeros(3, np.float32))]
    nodes = [
        helper.make_node("Clip", ["x", "amin", ""], ["x_clamped"], name="clamp_amin"),
        helper.make_node("Log", ["x_clamped"], ["ln"], name="ln"),
        helper.make_node("Mul", ["ln", "ten_over_ln10"], ["db_raw"], name="to_db"),
        helper.make_node("Sub", ["db_raw", "db_ref"], ["db_ref_sub"], name="minus_ref"),
        helper.make_node("ReduceMax", ["db_ref_sub"], ["db_max"], name="db_max", keepdims=0),
        helper.make_node("Sub", ["db_max", "top_db"], ["db_floor"], name="db_floor"),
        helper.make_node("Clip", ["db_ref_sub", "db_floor", ""], ["db"], name="top_db_clip"),
        helper.make_node("Conv", ["db", "conv_w", "conv_b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("GlobalAveragePool", ["relu"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "amplitude_to_db", [helper.make_tensor_value_info("x", FLOAT, [1, 1, 40, 32])],
                              [helper.make_tensor_value_info("db", FLOAT, [1, 1, 40, 32]),
                               helper.make_tensor_value_info("logits", FLOAT, [1, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


# ---------------------------------------------------------------- paddle2onnx-style -1 batch


def paddle_conv() -> onnx.ModelProto:
    rng = np.random.default_rng(11)
    inits = [const("conv1_w", (rng.standard_normal((8, 3, 3, 3)) / 5).astype(np.float32)),
             const("conv1_b", (0.1 * rng.standard_normal(8)).astype(np.float32)),
             const("conv2_w", (rng.standard_normal((16, 8, 3, 3)) / 8).astype(np.float32)),
             const("conv2_b", (0.1 * rng.standard_normal(16)).astype(np.float32)),
             const("flat_shape", np.array([0, -1], np.int64)),
             const("fc_w", (rng.standard_normal((16, 10)) / 4).astype(np.float32)),
             const("fc_b", (0.1 * rng.standard_normal(10)).astype(np.float32))]
    nodes = [
        helper.make_node("Conv", ["x", "conv1_w", "conv1_b"], ["conv2d_0.tmp_0"], name="conv2d_0", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2d_0.tmp_0"], ["relu_0.tmp_0"], name="relu_0"),
        helper.make_node("Conv", ["relu_0.tmp_0", "conv2_w", "conv2_b"], ["conv2d_1.tmp_0"], name="conv2d_1",
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2d_1.tmp_0"], ["relu_1.tmp_0"], name="relu_1"),
        helper.make_node("GlobalAveragePool", ["relu_1.tmp_0"], ["pool2d_0.tmp_0"], name="pool2d_0"),
        helper.make_node("Reshape", ["pool2d_0.tmp_0", "flat_shape"], ["reshape2_0.tmp_0"], name="reshape2_0"),
        helper.make_node("MatMul", ["reshape2_0.tmp_0", "fc_w"], ["linear_0.tmp_0"], name="linear_0"),
        helper.make_node("Add", ["linear_0.tmp_0", "fc_b"], ["linear_0.tmp_1"], name="linear_0_bias"),
        helper.make_node("Softmax", ["linear_0.tmp_1"], ["softmax_0.tmp_0"], name="softmax_0", axis=1),
    ]
    graph = helper.make_graph(nodes, "paddle_conv", [helper.make_tensor_value_info("x", FLOAT, [-1, 3, 16, 16])],
                              [helper.make_tensor_value_info("softmax_0.tmp_0", FLOAT, [-1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=6,
                             producer_name="PaddlePaddle")


# ---------------------------------------------------------------- ORT dynamic quantization


def dynq_float() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    inits = [const("conv_w", (rng.standard_normal((8, 3, 3, 3)) / 4).astype(np.float32)),
             const("conv_b", (0.1 * rng.standard_normal(8)).astype(np.float32)),
             const("fc_w", (rng.standard_normal((8 * 6 * 6, 10)) / 12).astype(np.float32)),
             const("fc_b", (0.1 * rng.standard_normal(10)).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["conv_out"], name="conv"),
             helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu"),
             helper.make_node("Flatten", ["relu_out"], ["flat"], name="flatten"),
             helper.make_node("MatMul", ["flat", "fc_w"], ["fc_out"], name="fc"),
             helper.make_node("Add", ["fc_out", "fc_b"], ["y"], name="fc_bias")]
    graph = helper.make_graph(nodes, "dynq_convnet", [helper.make_tensor_value_info("x", FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def dynq_convnet() -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    save(dynq_float(), "dynq_convnet_float.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "q.onnx"
        quantize_dynamic(str(OUT / "dynq_convnet_float.onnx"), str(out), weight_type=QuantType.QInt8)
        save(onnx.load(str(out)), "dynq_convnet.onnx")


def vad_if_dynq() -> None:
    """The VAD, dynamically quantized branches and all. ORT leaves the com.microsoft domain out
    of the opset imports (its own runtime does not mind; onnx's checker would): saved as written."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = OUT / "vad_if_dynq.onnx"
    quantize_dynamic(str(OUT / "vad_if.onnx"), str(out), weight_type=QuantType.QInt8,
                     extra_options={"EnableSubgraph": True})
    print(f"wrote {out}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    save(vad_if(), "vad_if.onnx")
    save(logmel_db(), "logmel_db.onnx")
    save(paddle_conv(), "paddle_conv.onnx")
    dynq_convnet()
    vad_if_dynq()


if __name__ == "__main__":
    main()
