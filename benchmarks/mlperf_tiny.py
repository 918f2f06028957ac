"""The four MLPerf Tiny reference architectures as ONNX models, for benchmarks.

ResNet-8 (image classification) and the FC autoencoder (anomaly detection) are the
MLCommons reference models in sdk/examples. DS-CNN (keyword spotting) and
MobileNetV1-0.25 (visual wake words) are built here from their published
descriptions (MLPerf Tiny v1.0 reference code) with random He-initialised weights and
batch norm already folded: the architecture, shapes and MAC counts match, the weights
do not, so these two are for speed and memory figures, not accuracy.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EXAMPLES = Path(__file__).resolve().parents[1] / "sdk" / "examples"


class Builder:
    """`weights`: trained (weight, bias) pairs in the order the model asks for them (convs, then
    the FC), else random He-initialised ones."""

    def __init__(self, seed: int, weights: list[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.trained = list(weights) if weights is not None else None
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}{self.count}"

    def const(self, hint: str, value: np.ndarray) -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv(self, x: str, cin: int, cout: int, kernel: tuple[int, int], stride: int, group: int = 1,
             relu: bool = True) -> str:
        fan_in = cin // group * kernel[0] * kernel[1]
        w = self.rng.standard_normal((cout, cin // group, *kernel)) * np.sqrt(2.0 / fan_in)
        b = self.rng.standard_normal(cout) * 0.05
        w, b = self.take(w, b)
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, self.const("w", w), self.const("b", b)], [y],
                                           kernel_shape=list(kernel), strides=[stride, stride], group=group,
                                           auto_pad="SAME_UPPER", name=y))
        return self.relu(y) if relu else y

    def take(self, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The next trained pair (same shapes as the random one), or the random one."""
        if self.trained is None:
            return w, b
        tw, tb = self.trained.pop(0)
        assert tw.shape == w.shape and tb.shape == b.shape, (tw.shape, w.shape)
        return tw, tb

    def relu(self, x: str) -> str:
        y = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [x], [y], name=y))
        return y

    def relu6(self, x: str) -> str:
        y = self.name("relu6")
        self.nodes.append(helper.make_node("Clip", [x, self.const("lo", np.array(0.0)), self.const("hi", np.array(6.0))],
                                           [y], name=y))
        return y

    def add(self, a: str, b: str) -> str:
        y = self.name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [y], name=y))
        return y

    def head(self, x: str, pool: tuple[int, int], channels: int, classes: int) -> str:
        p, f, g = self.name("pool"), self.name("flat"), "logits"
        self.nodes.append(helper.make_node("AveragePool", [x], [p], kernel_shape=list(pool), name=p))
        self.nodes.append(helper.make_node("Flatten", [p], [f], name=f))
        w, bias = self.take(self.rng.standard_normal((classes, channels)) * np.sqrt(1.0 / channels), np.zeros(classes))
        self.nodes.append(helper.make_node("Gemm", [f, self.const("fc_w", w), self.const("fc_b", bias)],
                                           [g], transB=1, name="fc"))
        self.nodes.append(helper.make_node("Softmax", [g], ["probabilities"], axis=-1, name="softmax"))
        return "probabilities"

    def model(self, name: str, input_shape: list[int], output: str, classes: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                  input_shape)],
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, classes])],
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(model)
        return model


def ds_cnn(seed: int = 0, weights: list | None = None) -> onnx.ModelProto:
    """DS-CNN (small) keyword spotting: 49x10 MFCC input, 12 classes."""
    b = Builder(seed, weights)
    x = b.conv("input", 1, 64, (10, 4), 2)
    for _ in range(4):
        x = b.conv(x, 64, 64, (3, 3), 1, group=64)
        x = b.conv(x, 64, 64, (1, 1), 1)
    return b.model("ds_cnn", [1, 1, 49, 10], b.head(x, (25, 5), 64, 12), 12)


def mobilenet_v1_025_vww(seed: int = 0, weights: list | None = None) -> onnx.ModelProto:
    """MobileNetV1 (width 0.25) visual wake words: 96x96 RGB input, 2 classes."""
    b = Builder(seed, weights)
    x = b.conv("input", 3, 8, (3, 3), 2)
    channels = 8
    for out, stride in [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]:
        x = b.conv(x, channels, channels, (3, 3), stride, group=channels)
        x = b.conv(x, channels, out, (1, 1), 1)
        channels = out
    return b.model("mobilenet_v1_025_vww", [1, 3, 96, 96], b.head(x, (3, 3), 256, 2), 2)


def divisible(value: float, by: int = 8) -> int:
    """MobileNetV2's channel rounding (_make_divisible): to a multiple of `by`, never 10% below."""
    rounded = max(by, int(value + by / 2) // by * by)
    return rounded + by if rounded < 0.9 * value else rounded


def mobilenet_v2(alpha: float = 0.35, size: int = 144, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2 (Sandler et al. 2018) at width `alpha` and `size` x `size` RGB input, as
    torchvision builds it: inverted residual blocks (1x1 expansion x6, 3x3 depthwise, 1x1
    projection, ReLU6, residual where the shape allows), the last 1x1 conv at 1280 channels;
    random He-initialised weights, batch norm folded. An MCU-size MobileNetV2 (issue 28)."""
    b = Builder(seed)
    channels = divisible(32 * alpha)
    x = b.relu6(b.conv("input", 3, channels, (3, 3), 2, relu=False))
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        out = divisible(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = channels * t
            y = x if t == 1 else b.relu6(b.conv(x, channels, hidden, (1, 1), 1, relu=False))
            y = b.relu6(b.conv(y, hidden, hidden, (3, 3), stride, group=hidden, relu=False))
            y = b.conv(y, hidden, out, (1, 1), 1, relu=False)
            x = b.add(x, y) if stride == 1 and channels == out else y
            channels = out
    last = max(1280, divisible(1280 * alpha))
    x = b.relu6(b.conv(x, channels, last, (1, 1), 1, relu=False))
    return b.model(f"mobilenet_v2_{alpha}_{size}", [1, 3, size, size], b.head(x, (-(-size // 32), -(-size // 32)), last,
                                                                              classes), classes)


TRAINED = Path(__file__).resolve().parent / "models"  # scripts/train_mlperf_tiny.py writes these


def synthetic(name: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic task a trained model learned (scripts/train_mlperf_tiny.py), as (x, labels):
    ds_cnn_kws: 49x10 "MFCC" maps, class c a horizontal band at row 4c and a vertical stripe at
    column c % 10, plus noise; mobilenet_v1_025_vww: 96x96 RGB noise with (class 1) or without
    (class 0) a bright upright rectangle somewhere."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 12 if name == "ds_cnn_kws" else 2, count)
    if name == "ds_cnn_kws":
        x = rng.normal(0.0, 0.5, (count, 1, 49, 10))
        for i, c in enumerate(labels):
            x[i, 0, 4 * c:4 * c + 3, :] += 1.5
            x[i, 0, :, c % 10] += 1.0
        return x.astype(np.float32), labels
    x = rng.uniform(0.0, 0.6, (count, 3, 96, 96))
    for i, c in enumerate(labels):
        if c:
            h, w = rng.integers(24, 60), rng.integers(12, 30)
            y0, x0 = rng.integers(0, 96 - h), rng.integers(0, 96 - w)
            x[i, :, y0:y0 + h, x0:x0 + w] += rng.uniform(0.3, 0.4, (3, 1, 1))
    return x.astype(np.float32), labels


def models(work: Path) -> dict[str, Path]:
    """The four reference models as files: name -> path (the built ones are written into work)."""
    work.mkdir(parents=True, exist_ok=True)
    paths = {"resnet8": EXAMPLES / "resnet8_fp32.onnx", "ad_autoencoder": EXAMPLES / "ad_fp32.onnx"}
    for name, make in (("ds_cnn_kws", ds_cnn), ("mobilenet_v1_025_vww", mobilenet_v1_025_vww)):
        path = work / f"{name}.onnx"
        if not path.exists():
            onnx.save(make(), path)
        paths[name] = path
    return paths


if __name__ == "__main__":
    import sys
    for name, path in models(Path(sys.argv[1] if len(sys.argv) > 1 else "mlperf-tiny-models")).items():
        print(name, path)
