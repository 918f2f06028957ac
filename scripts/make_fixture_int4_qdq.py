"""Generate tests/fixtures/int4/int4_qdq.onnx: a small QDQ model whose weights are ONNX INT4
initializers behind opset-21 DequantizeLinear with per-axis scales (as ONNX Runtime's 4-bit
QDQ quantizer and PyTorch write them), int8 activations, int32 biases.

    x [1, 3, 9, 7] -> Q/DQ -> Conv 3x3 (8 channels, pad 1, INT4 weights axis 0) + Relu -> Q/DQ
      -> Conv 1x1 (5 channels: odd; INT4 weights, values -8..7) -> Q/DQ -> Flatten
      -> Gemm (transB = 1, 315 -> 6: K odd, INT4 weights axis 0) -> Q/DQ -> y [1, 6]

Run once (onnx only, no PyTorch): python scripts/make_fixture_int4_qdq.py. The .onnx file is
checked in (a few KB); the weights come from a fixed seed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "int4" / "int4_qdq.onnx"
OPSET = 21
RNG = np.random.default_rng(2028)


def int4_tensor(name: str, values: np.ndarray) -> onnx.TensorProto:
    """An INT4 initializer (helper.make_tensor packs two values per byte)."""
    return helper.make_tensor(name, TensorProto.INT4, list(values.shape), values.reshape(-1).astype(np.int64).tolist())


class Net:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def qdq(self, x: str, name: str, scale: float, zero_point: int) -> str:
        s = self.const(f"{name}_scale", np.array(scale, np.float32))
        z = self.const(f"{name}_zp", np.array(zero_point, np.int8))
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [f"{name}_q"], name=f"{name}_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [f"{name}_dq"], name=f"{name}_DQ"))
        return f"{name}_dq"

    def int4_weight(self, name: str, codes: np.ndarray, scales: np.ndarray) -> str:
        """INT4 codes (zero point 0) with one scale per output channel (axis 0)."""
        self.inits.append(int4_tensor(f"{name}_q", codes))
        s = self.const(f"{name}_scale", scales.astype(np.float32))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s], [name], name=f"{name}_DQ", axis=0))
        return name

    def int32_bias(self, name: str, codes: np.ndarray, scales: np.ndarray) -> str:
        q = self.const(f"{name}_q", codes.astype(np.int32))
        s = self.const(f"{name}_scale", scales.astype(np.float32))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s], [name], name=f"{name}_DQ", axis=0))
        return name


def main() -> None:
    net = Net()
    sx, s1, s2 = 0.02, 0.05, 0.04
    x = net.qdq("x", "xq", sx, -10)
    w1 = RNG.integers(-7, 8, (8, 3, 3, 3))
    w1s = RNG.uniform(0.02, 0.06, 8)
    b1 = RNG.integers(-200, 200, 8)
    c1 = "c1"
    net.nodes.append(helper.make_node("Conv", [x, net.int4_weight("w1", w1, w1s), net.int32_bias("b1", b1, sx * w1s)],
                                      [c1], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    net.nodes.append(helper.make_node("Relu", [c1], ["r1"], name="relu1"))
    r1 = net.qdq("r1", "r1q", s1, -128)
    w2 = RNG.integers(-8, 8, (5, 8, 1, 1))
    w2[0, 0, 0, 0], w2[1, 1, 0, 0] = -8, 7  # the whole INT4 range
    w2s = RNG.uniform(0.03, 0.08, 5)
    b2 = RNG.integers(-100, 100, 5)
    net.nodes.append(helper.make_node("Conv", [r1, net.int4_weight("w2", w2, w2s), net.int32_bias("b2", b2, s1 * w2s)],
                                      ["c2"], name="conv2", kernel_shape=[1, 1]))
    c2 = net.qdq("c2", "c2q", s2, 5)
    net.nodes.append(helper.make_node("Flatten", [c2], ["f"], name="flatten"))
    w3 = RNG.integers(-7, 8, (6, 5 * 9 * 7))
    w3s = RNG.uniform(0.005, 0.01, 6)
    b3 = RNG.integers(-50, 50, 6)
    net.nodes.append(helper.make_node("Gemm", ["f", net.int4_weight("w3", w3, w3s), net.int32_bias("b3", b3, s2 * w3s)],
                                      ["g"], name="fc", transB=1))
    net.qdq("g", "yq", 0.02, 3)
    net.nodes.append(helper.make_node("Identity", ["yq_dq"], ["y"], name="out"))
    graph = helper.make_graph(net.nodes, "int4_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])], net.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_fixture_int4_qdq")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
