"""Generate the fixtures of board_tests/fixtures/ints/ with PyTorch, as users export them
(torch.onnx.export, its default dynamo exporter, opset 18): three models whose tensors at run time
include integers (issue 30).

- seg_argmax.onnx: a segmentation head, Conv -> ReLU -> Conv (5 classes) -> argmax over the
  channels: an int64 class index per pixel. Input x [1, 3, 16, 16] float; output [1, 16, 16] int64.
- text_classifier.onnx: int64 token ids [1, 12] -> an embedding (Gather) -> the mean over the
  tokens -> a linear layer to 4 classes. Output [1, 4] float.
- detector_head.onnx: a feature map [1, 8, 6, 6] -> per-cell scores and boxes (1x1 convs) -> TopK
  of the 5 best scores -> Gather of their boxes (run-time indices). Outputs the scores [1, 5], the
  cells' int64 indices [1, 5] and the boxes [5, 4].

Run once with the PyTorch environment (never needed by the SDK or CI):
    /tmp/torchvenv/bin/python scripts/make_fixtures_ints.py
The .onnx files are checked in, each one file (no external data); README.md beside them says
where they come from. The weights are seeded random values (the models are not trained).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "board_tests" / "fixtures" / "ints"
OPSET = 18


class SegArgmax(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Conv2d(3, 8, 3, padding=1)
        self.classes = nn.Conv2d(8, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classes(torch.relu(self.features(x))).argmax(dim=1)


class TextClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embedding(ids).mean(dim=1))


class DetectorHead(nn.Module):
    def __init__(self, k: int = 5) -> None:
        super().__init__()
        self.k = k
        self.score = nn.Conv2d(8, 1, 1)
        self.box = nn.Conv2d(8, 4, 1)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        scores = torch.sigmoid(self.score(features)).flatten(1)  # [1, 36]
        boxes = self.box(features).flatten(2).transpose(1, 2)[0]  # [36, 4]
        top, cells = scores.topk(self.k, dim=1)
        return top, cells, boxes[cells[0]]


def export(model: nn.Module, args: tuple, name: str, inputs: list[str], outputs: list[str]) -> None:
    model.eval()
    path = OUT / f"{name}.onnx"
    torch.onnx.export(model, args, str(path), input_names=inputs, output_names=outputs, opset_version=OPSET,
                      dynamo=True, external_data=False)
    onnx.checker.check_model(str(path), full_check=True)
    print(f"{path.relative_to(OUT.parents[2])}: {path.stat().st_size} bytes, ops "
          f"{sorted({n.op_type for n in onnx.load(str(path)).graph.node})}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(30)
    export(SegArgmax(), (torch.randn(1, 3, 16, 16),), "seg_argmax", ["x"], ["classes"])
    export(TextClassifier(), (torch.from_numpy(np.arange(12, dtype=np.int64)[None] * 7 % 100),), "text_classifier",
           ["ids"], ["logits"])
    export(DetectorHead(), (torch.randn(1, 8, 6, 6),), "detector_head", ["features"], ["scores", "cells", "boxes"])


if __name__ == "__main__":
    main()
