"""Generate the model zoo of tests/fixtures/zoo/ with PyTorch, exactly as its exporters write
the models: small versions (reduced width, random weights) of the families edge users deploy.

Run once with a PyTorch environment (never needed by the SDK or CI; the .onnx files are
checked in, tests/fixtures/zoo/README.md says where they come from):

    pip install torch==2.13.0 onnxscript
    python scripts/make_zoo.py

Opsets 13 to 21 are all covered: opsets below 18 through the TorchScript exporter
(`dynamo=False`), 18 and up through the default (dynamo) exporter. One model is saved with
its weights in an external-data file, as large models are.
"""
from __future__ import annotations

from pathlib import Path

import onnx
import torch
import torch.nn.functional as F  # noqa: N812 (torch's idiom)
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "zoo"


def conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout))


class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a, self.b = conv_bn(cin, cout, 3, stride), conv_bn(cout, cout)
        self.skip = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.b(F.relu(self.a(x))) + self.skip(x))


class ResNetSmall(nn.Module):
    """ResNet-style classifier: stem, max pool, residual blocks, adaptive average pool, FC."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 1)
        self.blocks = nn.Sequential(ResBlock(8, 8, 1), ResBlock(8, 16, 2), ResBlock(16, 24, 2))
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        x = F.adaptive_avg_pool2d(self.blocks(x), 1)
        return self.fc(torch.flatten(x, 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int, act: type[nn.Module] = nn.ReLU6,
                 se: bool = False) -> None:
        super().__init__()
        mid = cin * expand
        self.expand = nn.Sequential(conv_bn(cin, mid, 1), act())
        self.depthwise = nn.Sequential(conv_bn(mid, mid, 3, stride, groups=mid), act())
        self.se = SqueezeExcite(mid) if se else nn.Identity()
        self.project = conv_bn(mid, cout, 1)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class SqueezeExcite(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.reduce, self.restore = nn.Conv2d(c, max(4, c // 4), 1), nn.Conv2d(max(4, c // 4), c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.restore(F.relu(self.reduce(s))))


class MobileNetV2Small(nn.Module):
    """MobileNetV2 at width 0.25 and 48x48: ReLU6 (Clip), depthwise, `x.mean([2, 3])` (ReduceMean)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 8, 3, 2), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 12, 2, 6),
                                    InvertedResidual(12, 12, 1, 6), InvertedResidual(12, 16, 2, 6))
        self.head = nn.Sequential(conv_bn(16, 64, 1), nn.ReLU6())
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.head(self.blocks(self.stem(x))).mean([2, 3]))


class MobileNetV3Small(nn.Module):
    """MobileNetV3-style: HardSwish, squeeze-and-excite (global pool, HardSigmoid, broadcast Mul)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 8, 3, 2), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(8, 8, 1, 2, nn.ReLU, se=True),
                                    InvertedResidual(8, 16, 2, 3, nn.Hardswish, se=True),
                                    InvertedResidual(16, 16, 1, 3, nn.Hardswish, se=True))
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.fc(torch.flatten(x, 1))


class KwsConv1d(nn.Module):
    """A 1-D convolution keyword spotter over 40 MFCC features x 49 frames."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv1d(40, 32, 5, 2, 2), nn.BatchNorm1d(32), nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv1d(32, 32, 3, 1, 2, dilation=2), nn.BatchNorm1d(32), nn.ReLU())
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool1d(self.conv2(self.conv1(x)), 2)
        return self.fc(F.adaptive_avg_pool1d(x, 1).flatten(1))


class TransformerEncoder(nn.Module):
    """One pre-norm transformer encoder layer on 8 tokens of 32 features: LayerNorm, two-head
    attention written with MatMul of activations, Softmax, GELU MLP, residuals."""

    def __init__(self, d: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.cls = nn.Linear(d, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, d = x.shape[1], x.shape[2]
        q, k, v = self.qkv(self.norm1(x)).reshape(1, t, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / self.dh ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(1, t, d))
        x = x + self.mlp(self.norm2(x))
        return self.cls(x.mean(1))


class UNetSmall(nn.Module):
    """A U-Net-like segmenter: two down steps, up by ConvTranspose and by Resize, skip Concats."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2 = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU()), nn.Sequential(
            nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(16, 16, 2, 2)
        self.dec1 = nn.Sequential(nn.Conv2d(32, 8, 3, 1, 1), nn.ReLU())
        self.dec2 = nn.Sequential(nn.Conv2d(16, 8, 3, 1, 1), nn.ReLU())
        self.out = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)                        # 32x32
        e2 = self.enc2(F.max_pool2d(e1, 2))      # 16x16
        m = self.mid(F.max_pool2d(e2, 2))        # 8x8
        d1 = self.dec1(torch.cat([self.up1(m), e2], 1))
        d2 = self.dec2(torch.cat([F.interpolate(d1, scale_factor=2.0, mode="bilinear", align_corners=False), e1], 1))
        return self.out(d2)


class YoloHead(nn.Module):
    """A YOLO-style detector head on a small backbone: per anchor box (x, y, w, h, objectness,
    3 classes) split, sigmoid, scaled by Mul, concatenated and reshaped to [1, boxes, 8]."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.SiLU())
        self.head = nn.Conv2d(16, 2 * 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.head(self.backbone(x))                      # [1, 16, 8, 8]
        p = p.reshape(1, 2, 8, 8 * 8).permute(0, 1, 3, 2)    # [1, anchors, cells, 8]
        xy, wh, rest = p.split([2, 2, 4], dim=-1)
        xy = torch.sigmoid(xy) * 2.0
        wh = (torch.sigmoid(wh) * 2.0) ** 2
        return torch.cat([xy, wh, torch.sigmoid(rest)], -1).reshape(1, 2 * 64, 8)


# name: (model, input shape, opset, exporter options)
ZOO = {
    "resnet_small": (ResNetSmall, (1, 3, 32, 32), 13, {}),
    "kws_conv1d": (KwsConv1d, (1, 40, 49), 15, {}),
    "mobilenetv2_small": (MobileNetV2Small, (1, 3, 48, 48), 17, {}),
    "mobilenetv3_small": (MobileNetV3Small, (1, 3, 48, 48), 18, {}),
    "unet_small": (UNetSmall, (1, 3, 32, 32), 19, {}),
    "transformer_encoder": (TransformerEncoder, (1, 8, 32), 20, {}),
    "yolo_head": (YoloHead, (1, 3, 32, 32), 21, {"external_data": True}),
}


def export(name: str, cls: type[nn.Module], shape: tuple[int, ...], opset: int, external_data: bool = False) -> None:
    torch.manual_seed(sorted(ZOO).index(name))
    model = cls().eval()
    for module in model.modules():  # trained-looking batch-norm statistics, not the identity
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    x = torch.randn(*shape)
    path = OUT / f"{name}.onnx"
    if opset < 18:
        torch.onnx.export(model, (x,), str(path), opset_version=opset, dynamo=False, input_names=["x"],
                          output_names=["y"])
    else:
        program = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, input_names=["x"],
                                    output_names=["y"])
        program.save(str(path))
    proto = onnx.load(str(path))
    if external_data:
        (OUT / f"{name}.onnx.data").unlink(missing_ok=True)
        onnx.save(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=f"{name}.onnx.data", size_threshold=256)
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{name}: opset {proto.opset_import[0].version}, {len(proto.graph.node)} nodes: {' '.join(ops)}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (cls, shape, opset, options) in ZOO.items():
        export(name, cls, shape, opset, **options)


if __name__ == "__main__":
    main()
