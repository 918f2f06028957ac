"""Export MobileNetV2-1.0 (224x224), ResNet-50 and a YOLOv3-tiny-style detector (320x320) as
PyTorch's default ONNX exporter writes them (opset 18), with random weights and batch-norm
statistics, for the host/rpi5 no-fallback check, the latency benchmark
(benchmarks/bench_torch_models.py) and the compile-time benchmark (bench_compile.py). Needs torch (run it with
/work/torchenv/bin/python); the architectures are written out here (torchvision is not
installable beside this torch), following torchvision's definitions. The exported models are
not checked in (tens of MB); the test suite uses a reduced model with the same layer kinds
(scripts/make_fixtures_simd_wide.py).

usage: export_torch_models.py OUTDIR [--only mobilenet_v2|resnet50|yolo_tiny]
"""
from __future__ import annotations

import argparse
import pathlib

import torch
from torch import nn


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True,
            relu6: bool = True) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6(inplace=True) if relu6 else nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [conv_bn(cin, hidden, 1)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]  # expansion, channels, repeats, first stride

    def __init__(self, classes: int = 1000):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2)], 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.mean([2, 3]))  # torchvision's global pool: ReduceMean over H, W


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(conv_bn(cin, width, 1, relu6=False), conv_bn(width, width, 3, stride, relu6=False),
                                  conv_bn(width, cout, 1, act=False))
        self.down = None if stride == 1 and cin == cout else conv_bn(cin, cout, 1, stride, act=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        layers = [conv_bn(3, 64, 7, 2, relu6=False), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.avgpool(self.features(x)), 1))


def conv_leaky(cin: int, cout: int, k: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, 1, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.LeakyReLU(0.1, inplace=True))


class YoloTiny(nn.Module):
    """A YOLOv3-tiny-style detector (Darknet's yolov3-tiny.cfg layers, 8.9 M parameters): 3x3
    conv + batch norm + LeakyReLU(0.1) with 2x2 max pooling down to stride 32, two heads of
    3 anchors x (5 + 80 classes) = 255 channels at strides 32 and 16 (10x10 and 20x20 for a
    320x320 input), the second fed by a nearest 2x upsample concatenated with the stride-16
    features. Outputs are the raw head maps (box decoding and NMS stay outside the model).
    Darknet's stride-1 max pool before the 1024-channel conv is left out (it keeps the size)."""

    def __init__(self, outputs: int = 255):
        super().__init__()
        layers, cin = [], 3
        for cout in (16, 32, 64, 128):
            layers += [conv_leaky(cin, cout, 3), nn.MaxPool2d(2, 2)]
            cin = cout
        self.stride16 = nn.Sequential(*layers, conv_leaky(128, 256, 3))
        self.stride32 = nn.Sequential(nn.MaxPool2d(2, 2), conv_leaky(256, 512, 3), conv_leaky(512, 1024, 3),
                                      conv_leaky(1024, 256, 1))
        self.head32 = nn.Sequential(conv_leaky(256, 512, 3), nn.Conv2d(512, outputs, 1))
        self.lateral = nn.Sequential(conv_leaky(256, 128, 1), nn.Upsample(scale_factor=2, mode="nearest"))
        self.head16 = nn.Sequential(conv_leaky(384, 256, 3), nn.Conv2d(256, outputs, 1))

    def forward(self, x):
        c16 = self.stride16(x)
        c32 = self.stride32(c16)
        return self.head32(c32), self.head16(torch.cat([self.lateral(c32), c16], 1))


MODELS = {"mobilenet_v2": MobileNetV2, "resnet50": ResNet50, "yolo_tiny": YoloTiny}
INPUT_SIZE = {"yolo_tiny": 320}  # others: 224
OUTPUT_NAMES = {"yolo_tiny": ["boxes_stride32", "boxes_stride16"]}


def randomise_bn(model: nn.Module, seed: int) -> None:
    """Trained-looking batch-norm statistics (random running mean/var, affine), so folded
    weights and per-channel scales vary as in a trained model."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


def export(name: str, out: pathlib.Path) -> pathlib.Path:
    torch.manual_seed(0)
    model = MODELS[name]()
    randomise_bn(model, 1)
    model.eval()
    path = out / f"{name}.onnx"
    size = INPUT_SIZE.get(name, 224)
    torch.onnx.export(model, (torch.randn(1, 3, size, size),), str(path), opset_version=18,
                      input_names=["input"], output_names=OUTPUT_NAMES.get(name, ["logits"]))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--only", choices=sorted(MODELS))
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    for name in [args.only] if args.only else sorted(MODELS):
        print(export(name, args.outdir))


if __name__ == "__main__":
    main()
