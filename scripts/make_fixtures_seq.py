"""Generate the recurrent and attention fixtures of tests/fixtures/seq/ with PyTorch, as users
export them (torch.onnx.export, the TorchScript exporter, opset 17): exporters write LSTM and
GRU with their own choices (gate order i, o, f, c in W, initial states as constant zeros, a
Squeeze after Y, Transposes for batch_first, GRU's linear_before_reset=1).

Run once with the PyTorch environment (never needed by the SDK or CI):
    /work/torchenv/bin/python scripts/make_fixtures_seq.py
The .onnx files are checked in; tests/fixtures/seq/README.md says where they come from.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "seq"
OPSET = 17


class KeywordSpotter(nn.Module):
    """An LSTM keyword spotter: 10 MFCC coefficients x 49 frames, a strided convolution along
    time (a 1-D convolution written as a (3, 1) Conv2d), an LSTM, the last hidden state to 12
    classes. Input [1, 10, 49, 1]."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(10, 16, (3, 1), stride=(2, 1))
        self.lstm = nn.LSTM(16, 24)
        self.fc = nn.Linear(24, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = torch.relu(self.conv(x))  # [1, 16, 24, 1]
        seq = f.reshape(1, 16, 24).permute(2, 0, 1)  # [24, 1, 16], time major
        _, (h, _) = self.lstm(seq)
        return self.fc(h.reshape(1, 24))


class BiGRU(nn.Module):
    """A bidirectional, batch_first GRU tagger: [1, 12, 8] -> [1, 12, 2 x 10] -> 5 scores per step."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(8, 10, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(20, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.fc(y)


class TinyAttention(nn.Module):
    """One self-attention block from ops that exist today: Q, K, V projections, Q @ K^T scaled,
    softmax, @ V, an output projection and a residual. Input [1, 6, 16] (6 tokens)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(16, 16) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = torch.matmul(q, k.transpose(1, 2)) * 0.25
        return x + self.o(torch.matmul(torch.softmax(scores, dim=-1), v))


def export(model: nn.Module, shape: tuple[int, ...], name: str) -> None:
    torch.manual_seed(0)
    model.eval()
    path = OUT / f"{name}.onnx"
    torch.onnx.export(model, (torch.randn(shape),), str(path), opset_version=OPSET, input_names=["x"],
                      output_names=["y"], dynamo=False, do_constant_folding=True)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def fold_initial_states(path: Path, out: Path, shape: tuple[int, ...]) -> None:
    """The exporter computes the zero initial states of LSTM/GRU from the input's shape (Shape,
    Gather, Unsqueeze, Concat, Expand); with a static shape they are constants: evaluate them
    once and keep the constants, the rest of the model as exported."""
    model = onnx.load(path)
    graph = model.graph
    states = [n.input[i] for n in graph.node if n.op_type in ("LSTM", "GRU") for i in (5, 6) if len(n.input) > i
              and n.input[i]]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(name) for name in states)
    values = ReferenceEvaluator(probe).run(None, {"x": np.zeros(shape, np.float32)})
    graph.initializer.extend(numpy_helper.from_array(np.asarray(v, np.float32), name) for name, v in zip(states, values))
    keep = [n for n in graph.node if not set(n.output) & set(states)]
    while True:  # drop the state subgraphs, now unread
        read = {i for n in keep for i in n.input} | {o.name for o in graph.output}
        alive = [n for n in keep if set(n.output) & read]
        if len(alive) == len(keep):
            break
        keep = alive
    del graph.node[:]
    graph.node.extend(keep)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, out)
    print(f"wrote {out} (initial states folded)")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    export(KeywordSpotter(), (1, 10, 49, 1), "kws_lstm_torch")
    fold_initial_states(OUT / "kws_lstm_torch.onnx", OUT / "kws_lstm.onnx", (1, 10, 49, 1))
    torch.manual_seed(1)
    export(BiGRU(), (1, 12, 8), "bigru_tagger_torch")
    fold_initial_states(OUT / "bigru_tagger_torch.onnx", OUT / "bigru_tagger.onnx", (1, 12, 8))
    torch.manual_seed(2)
    export(TinyAttention(), (1, 6, 16), "tiny_attention")


if __name__ == "__main__":
    main()
