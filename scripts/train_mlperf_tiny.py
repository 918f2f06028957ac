"""Train the MLPerf Tiny DS-CNN and MobileNetV1-0.25 (96x96) architectures briefly, so that the
Cortex-M7 benchmark runs them with trained weights (per-channel scales over a wide range, the
biases of folded batch norm) instead of random ones.

Needs PyTorch (the /work/torchenv venv); the SDK and CI never do. The architectures are
benchmarks/mlperf_tiny.py's, with batch norm after each conv while training; batch norm is
folded into the convs and the weights are written into mlperf_tiny's own ONNX graphs, so the
trained files have exactly the benchmark graphs. The data are mlperf_tiny.synthetic's tasks (no
download). Writes benchmarks/models/{ds_cnn_kws,mobilenet_v1_025_vww}_trained.onnx.

    /work/torchenv/bin/python scripts/train_mlperf_tiny.py [--epochs 4]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mlperf_tiny  # noqa: E402


class ConvBn(nn.Module):
    """Conv (no bias) + batch norm + optional ReLU, with ONNX's SAME_UPPER padding."""

    def __init__(self, cin: int, cout: int, kernel: tuple[int, int], stride: int, group: int = 1, relu: bool = True):
        super().__init__()
        self.kernel, self.stride, self.relu = kernel, stride, relu
        self.conv = nn.Conv2d(cin, cout, kernel, stride, groups=group, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = []
        for size, k in zip(reversed(x.shape[2:]), reversed(self.kernel)):  # W then H, as F.pad wants
            out = -(-size // self.stride)
            total = max((out - 1) * self.stride + k - size, 0)
            pads += [total // 2, total - total // 2]
        y = self.bn(self.conv(nn.functional.pad(x, pads)))
        return torch.relu(y) if self.relu else y

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        bn = self.bn
        scale = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach()
        w = self.conv.weight.detach() * scale.reshape(-1, 1, 1, 1)
        b = bn.bias.detach() - bn.running_mean * scale
        return w.numpy().astype(np.float64), b.numpy().astype(np.float64)


class Net(nn.Module):
    def __init__(self, layers: list[ConvBn], pool: tuple[int, int], channels: int, classes: int):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.pool = nn.AvgPool2d(pool)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.fc(torch.flatten(self.pool(x), 1))

    def weights(self) -> list[tuple[np.ndarray, np.ndarray]]:
        pairs = [layer.folded() for layer in self.layers]
        return pairs + [(self.fc.weight.detach().numpy().astype(np.float64),
                         self.fc.bias.detach().numpy().astype(np.float64))]


def ds_cnn() -> Net:
    layers = [ConvBn(1, 64, (10, 4), 2)]
    for _ in range(4):
        layers += [ConvBn(64, 64, (3, 3), 1, group=64), ConvBn(64, 64, (1, 1), 1)]
    return Net(layers, (25, 5), 64, 12)


def mobilenet_v1_025() -> Net:
    layers, channels = [ConvBn(3, 8, (3, 3), 2)], 8
    for out, stride in [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]:
        layers += [ConvBn(channels, channels, (3, 3), stride, group=channels), ConvBn(channels, out, (1, 1), 1)]
        channels = out
    return Net(layers, (3, 3), 256, 2)


def train(net: Net, name: str, epochs: int, count: int) -> float:
    x, y = mlperf_tiny.synthetic(name, count, seed=1)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for epoch in range(epochs):
        net.train()
        order = torch.randperm(count)
        for i in range(0, count, 32):
            idx = order[i:i + 32]
            loss = nn.functional.cross_entropy(net(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"{name}: epoch {epoch + 1} loss {loss.item():.3f}", flush=True)
    net.eval()
    xv, yv = mlperf_tiny.synthetic(name, 256, seed=2)
    with torch.no_grad():
        return float((net(torch.from_numpy(xv)).argmax(1).numpy() == yv).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    out = mlperf_tiny.TRAINED
    out.mkdir(parents=True, exist_ok=True)
    for name, make, build, count in (("ds_cnn_kws", ds_cnn, mlperf_tiny.ds_cnn, 768),
                                     ("mobilenet_v1_025_vww", mobilenet_v1_025, mlperf_tiny.mobilenet_v1_025_vww, 320)):
        net = make()
        accuracy = train(net, name, args.epochs, count)
        model = build(weights=net.weights())
        onnx.save(model, out / f"{name}_trained.onnx")
        print(f"{name}: held-out accuracy {accuracy:.3f} -> {out / (name + '_trained.onnx')}")


if __name__ == "__main__":
    main()
