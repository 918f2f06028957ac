"""Make board_tests/fixtures/simd_wide/mini_mbv2_r50.onnx: the layer kinds and the shapes of
MobileNetV2-1.0 and ResNet-50 at 224x224 that stress the SIMD kernel sets (rows 224 and 112
wide, depthwise 112x112x96 with stride 2, an inverted residual, a bottleneck with its residual
add, max pooling, 1280 channels, PyTorch's global pool as ReduceMean, a classifier), with few
weights (about 0.1 M), exported by PyTorch's default ONNX exporter as the full models are
(benchmarks/export_torch_models.py). Random weights and batch-norm statistics (seed 0).

Needs torch: /work/torchenv/bin/python scripts/make_fixtures_simd_wide.py
"""
from __future__ import annotations

import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
from export_torch_models import Bottleneck, InvertedResidual, conv_bn, randomise_bn

OUT = pathlib.Path(__file__).resolve().parents[1] / "board_tests" / "fixtures" / "simd_wide" / "mini_mbv2_r50.onnx"


class MiniMbv2R50(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, 7, 2, relu6=False),  # ResNet-50's stem: rows 224 wide, 7x7, stride 2
            conv_bn(16, 96, 1),  # MobileNetV2's expansion to 96 channels at 112x112
            conv_bn(96, 96, 3, 2, groups=96),  # depthwise 112x112x96, stride 2
            conv_bn(96, 24, 1, act=False),
            InvertedResidual(24, 24, 1, 2),  # residual add at 56x56
            Bottleneck(24, 8, 1),  # 1x1 -> 3x3 -> 1x1 and the residual add + ReLU
            nn.MaxPool2d(3, 2, 1),
            InvertedResidual(32, 32, 2, 2),
            conv_bn(32, 1280, 1),  # MobileNetV2's last 1x1 convolution: 1280 channels
        )
        self.classifier = nn.Linear(1280, 10)

    def forward(self, x):
        return self.classifier(self.features(x).mean([2, 3]))


def main() -> None:
    torch.manual_seed(0)
    model = MiniMbv2R50()
    randomise_bn(model, 1)
    model.eval()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), str(OUT), opset_version=18, input_names=["input"],
                      output_names=["logits"], external_data=False)
    print(OUT, sum(p.numel() for p in model.parameters()), "parameters")


if __name__ == "__main__":
    main()
