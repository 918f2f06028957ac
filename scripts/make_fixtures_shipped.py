"""Make board_tests/fixtures/shipped/: the architectures users ship (issues 39 and 40), written
from their public definitions, with random weights (no trained weights can be had offline).

    python3 -m venv /work/zoo-venv
    /work/zoo-venv/bin/pip install torch onnx onnxscript ultralytics   # never an SDK dependency
    /work/zoo-venv/bin/python scripts/make_fixtures_shipped.py

Every model is exported the way users export it: torch.onnx.export, opset 17 (the TorchScript
exporter, dynamo=False), eval mode, fixed input shape. Fixed seeds throughout.

Origins (architectures only; no code copied):
- yolov8n: ultralytics' own `DetectionModel` built from its bundled yolov8n.yaml (Conv-BN-SiLU,
  C2f, SPPF, PAN neck, the decoupled head with DFL), exported as `yolo export format=onnx` does
  (fused Conv+BN, Detect in export mode: one (1, 84, anchors) output, xywh boxes in pixels and
  80 sigmoid class scores). Width multiple 0.125 instead of n's 0.25 (depth 0.33, the head's
  minimum widths kept) to keep the file under 4 MB; 160x160 input.
- pplcnet_x025: PP-LCNet x0.25 (PaddleClas' NET_CONFIG: HardSwish, depthwise 3x3/5x5, SE with
  HardSigmoid in the last two blocks, 1x1 1280 head conv), 224x224, 100 classes instead of
  1000 (the FC would be 5 MB alone).
- ocr_det_mv3_db: PaddleOCR-style text detector: MobileNetV3-small x0.5 backbone (strides 4 to
  32), DBFPN (1x1 lateral convs, nearest x2 top-down adds, 3x3 output convs, upsample and
  concat), DB head (conv, two ConvTranspose 2x2/2, sigmoid) giving the shrink probability map;
  160x160.
- ocr_rec_crnn: CRNN recogniser: VGG-style conv stack to height 1, two-layer BiLSTM (hidden 64),
  linear over 37 classes (CTC blank + 0-9 a-z); input 1x3x32x100, 25 time steps.
- ocr_rec_svtr: SVTR-Tiny's form (PaddleOCR's SVTRNet): patch embedding by two 3x3/2 convs,
  learned positions, stages of 3, 6, 3 post-norm mixing blocks (6 local, attention masked with
  -inf outside a 7x11 window as PaddleOCR's mask, then 6 global), 3x3 (2, 1) merging convs,
  combining (average over the height, 1x1 conv to 192, HardSwish), CTC linear over 37 classes;
  widths 32/64/96 with 1/2/3 heads instead of 64/128/256 (size); input 1x3x32x100.
- audio_dscnn: DS-CNN keyword spotter (ARM's "Hello Edge" DS-CNN-S form): 10x4 conv stride 2,
  four depthwise-separable blocks of 64 channels, average pool, 12 classes; log-mel input
  1x1x40x49.

Random weights make dead or exploding activations that no trained model has; so every
BatchNorm's statistics are estimated on synthetic inputs (train-mode passes) before export, as
training would leave them. The YOLO class-score biases (ultralytics' prior of -log(80*(640/s)^2/5),
some 1e-5 scores) are set once so that about 20 anchors per image pass 0.25 in float, as on a
busy scene in a trained detector, and the DB head's last bias so that 10% of the pixels pass
DB's 0.3 threshold (random weights put 0.5 everywhere, one component, no box); nothing here
looks at int8 results.

Data (.npz beside each model, seeded): `calib` (32 samples, for --calib) and `test` (the test
samples); images as uint8 with the model's `mean` and `std` (x = (u8 / 255 - mean) / std),
spectrograms as float32; synthetic: scenes of coloured shapes for the vision models, dark glyph strips on a
light background for the recogniser, log-mel-like spectrograms with band events for audio.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "board_tests" / "fixtures" / "shipped"
OPSET = 17
CALIB, TEST = 32, 64
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]


def make_divisible(v: float, divisor: int = 8) -> int:
    """PaddleClas/MobileNet channel rounding: nearest multiple of 8, never below 90% of v."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


# ---------------------------------------------------------------- synthetic data


def scenes(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """RGB images in [0, 1]: a gradient background, 3 to 8 filled rectangles and ellipses of
    random colours (something for detectors to find)."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    out = np.empty((n, 3, size, size), np.float32)
    for i in range(n):
        img = rng.uniform(0.2, 0.8, (3, 1, 1)) + rng.uniform(-0.2, 0.2, (3, 1, 1)) * (xx + yy)
        for _ in range(rng.integers(3, 9)):
            cx, cy, w, h = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9), rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
            if rng.random() < 0.5:
                mask = (np.abs(xx - cx) < w / 2) & (np.abs(yy - cy) < h / 2)
            else:
                mask = ((xx - cx) / (w / 2)) ** 2 + ((yy - cy) / (h / 2)) ** 2 < 1
            img = np.where(mask, rng.uniform(0, 1, (3, 1, 1)), img)
        out[i] = np.clip(img, 0, 1)
    return out


def text_strips(rng: np.random.Generator, n: int) -> np.ndarray:
    """3x32x100 grey strips in [0, 1]: 4 to 10 dark 5x7 random glyphs scaled to about 20 pixels
    high, spaced along a light background."""
    out = np.empty((n, 3, 32, 100), np.float32)
    for i in range(n):
        img = np.full((32, 100), rng.uniform(0.7, 1.0), np.float32)
        x = int(rng.integers(2, 8))
        for _ in range(rng.integers(4, 11)):
            glyph = np.kron(rng.random((7, 5)) < 0.45, np.ones((3, 2), bool))  # 21x10 pixels
            top = int(rng.integers(4, 9))
            if x + 10 > 100:
                break
            img[top:top + 21, x:x + 10][glyph] = rng.uniform(0.0, 0.3)
            x += 10 + int(rng.integers(0, 4))
        out[i] = np.repeat(img[None], 3, 0)
    return out


def log_mels(rng: np.random.Generator, n: int) -> np.ndarray:
    """1x40x49 log-mel-like spectrograms: a falling noise floor, 1 to 3 events (a band of mel
    bins over a span of frames, with harmonics), values about -8 to 4."""
    mel = np.arange(40, dtype=np.float32)[:, None]
    out = np.empty((n, 1, 40, 49), np.float32)
    for i in range(n):
        spec = -6.0 - 0.05 * mel + rng.normal(0, 0.5, (40, 49))
        for _ in range(rng.integers(1, 4)):
            f0, t0, t1 = rng.uniform(3, 20), int(rng.integers(0, 30)), int(rng.integers(31, 49))
            for h in (1, 2, 3):
                spec[:, t0:t1] += rng.uniform(4, 9) / h * np.exp(-((mel - f0 * h) ** 2) / 4.0)
        out[i, 0] = spec
    return out.astype(np.float32)


# ---------------------------------------------------------------- PP-LCNet

LCNET_BLOCKS = [  # (kernel, in, out, stride, SE), PaddleClas NET_CONFIG blocks2..blocks6
    (3, 16, 32, 1, False),
    (3, 32, 64, 2, False), (3, 64, 64, 1, False),
    (3, 64, 128, 2, False), (3, 128, 128, 1, False),
    (3, 128, 256, 2, False), *[(5, 256, 256, 1, False)] * 5,
    (5, 256, 512, 2, True), (5, 512, 512, 1, True),
]


def conv_bn_act(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                act: type[nn.Module] | None = nn.Hardswish) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Channel attention: global average, 1x1 reduce by 4, ReLU, 1x1 expand, HardSigmoid, scale."""

    def __init__(self, c: int, reduce: int = 4) -> None:
        super().__init__()
        mid = make_divisible(c / reduce)
        self.fc = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, mid, 1), nn.ReLU(),
                                nn.Conv2d(mid, c, 1), nn.Hardsigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.fc(x)


class DepthwiseSeparable(nn.Module):
    def __init__(self, k: int, cin: int, cout: int, stride: int, se: bool) -> None:
        super().__init__()
        self.dw = conv_bn_act(cin, cin, k, stride, groups=cin)
        self.se = SqueezeExcite(cin) if se else nn.Identity()
        self.pw = conv_bn_act(cin, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pw(self.se(self.dw(x)))


class PPLCNet(nn.Module):
    def __init__(self, scale: float = 0.25, classes: int = 100) -> None:
        super().__init__()
        c = lambda v: make_divisible(v * scale)  # noqa: E731
        self.stem = conv_bn_act(3, c(16), 3, 2)
        self.blocks = nn.Sequential(*[DepthwiseSeparable(k, c(i), c(o), s, se) for k, i, o, s, se in LCNET_BLOCKS])
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c(512), 1280, 1, bias=False), nn.Hardswish(),
                                  nn.Flatten(), nn.Linear(1280, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)))


# ---------------------------------------------------------------- MobileNetV3-small + DBFPN + DB head

MV3_SMALL = [  # (kernel, expansion, out, SE, activation, stride)
    (3, 16, 16, True, "relu", 2),
    (3, 72, 24, False, "relu", 2), (3, 88, 24, False, "relu", 1),
    (5, 96, 40, True, "hswish", 2), (5, 240, 40, True, "hswish", 1), (5, 240, 40, True, "hswish", 1),
    (5, 120, 48, True, "hswish", 1), (5, 144, 48, True, "hswish", 1),
    (5, 288, 96, True, "hswish", 2), (5, 576, 96, True, "hswish", 1), (5, 576, 96, True, "hswish", 1),
]
ACTS = {"relu": nn.ReLU, "hswish": nn.Hardswish}


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, k: int, mid: int, cout: int, se: bool, act: str, stride: int) -> None:
        super().__init__()
        a = ACTS[act]
        self.expand = conv_bn_act(cin, mid, 1, act=a) if mid != cin else nn.Identity()
        self.dw = conv_bn_act(mid, mid, k, stride, groups=mid, act=a)
        self.se = SqueezeExcite(mid) if se else nn.Identity()
        self.project = conv_bn_act(mid, cout, 1, act=None)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class MobileNetV3Backbone(nn.Module):
    """Features at strides 4, 8, 16, 32 (the stages PaddleOCR's det backbone returns; the last
    gets the 1x1 conv to 6x its width)."""

    def __init__(self, scale: float = 0.5) -> None:
        super().__init__()
        c = lambda v: make_divisible(v * scale)  # noqa: E731
        self.stem = conv_bn_act(3, c(16), 3, 2)
        stages, cur, cin = [], [], c(16)
        for k, exp, out, se, act, stride in MV3_SMALL:
            if stride == 2 and cur:
                stages.append(nn.Sequential(*cur))
                cur = []
            cur.append(InvertedResidual(cin, k, c(exp), c(out), se, act, stride))
            cin = c(out)
        cur.append(conv_bn_act(cin, c(576), 1))
        stages.append(nn.Sequential(*cur))
        self.stages = nn.ModuleList(stages)
        self.out_channels = [s[-1].project[1].num_features if isinstance(s[-1], InvertedResidual)
                             else s[-1][1].num_features for s in stages]

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats, x = [], self.stem(x)
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats


class DBFPN(nn.Module):
    def __init__(self, in_channels: list[int], inner: int = 64) -> None:
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, inner, 1, bias=False) for c in in_channels)
        self.smooth = nn.ModuleList(nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in in_channels)

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        lat = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in range(len(lat) - 2, -1, -1):  # top-down: nearest x2 and add
            lat[i] = lat[i] + nn.functional.interpolate(lat[i + 1], scale_factor=2.0, mode="nearest")
        outs = [conv(p) for conv, p in zip(self.smooth, lat)]
        outs = [outs[0]] + [nn.functional.interpolate(o, scale_factor=2.0 ** i, mode="nearest")
                            for i, o in enumerate(outs[1:], 1)]
        return torch.cat(outs[::-1], 1)


class DBHead(nn.Module):
    """The binarization branch of DB's head: the shrink-map probabilities at full resolution."""

    def __init__(self, cin: int) -> None:
        super().__init__()
        mid = cin // 4
        self.body = nn.Sequential(nn.Conv2d(cin, mid, 3, padding=1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                  nn.ConvTranspose2d(mid, mid, 2, 2), nn.BatchNorm2d(mid), nn.ReLU(),
                                  nn.ConvTranspose2d(mid, 1, 2, 2), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class TextDetector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = MobileNetV3Backbone(0.5)
        self.neck = DBFPN(self.backbone.out_channels, 64)
        self.head = DBHead(64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.neck(self.backbone(x)))


# ---------------------------------------------------------------- CRNN


class CRNN(nn.Module):
    """VGG-style convs (height 32 to 1, width 100 to 25), two-layer BiLSTM, per-step classes."""

    def __init__(self, classes: int = 37, hidden: int = 64) -> None:
        super().__init__()
        relu = nn.ReLU
        self.convs = nn.Sequential(
            conv_bn_act(3, 32, 3, act=relu), nn.MaxPool2d(2),                         # 16x50
            conv_bn_act(32, 64, 3, act=relu), nn.MaxPool2d(2),                        # 8x25
            conv_bn_act(64, 96, 3, act=relu), conv_bn_act(96, 96, 3, act=relu),
            nn.MaxPool2d((2, 1)),                                                     # 4x25
            conv_bn_act(96, 128, 3, act=relu), nn.MaxPool2d((2, 1)),                  # 2x25
            nn.Conv2d(128, 128, (2, 1), bias=False), nn.BatchNorm2d(128), relu())     # 1x25
        self.rnn = nn.LSTM(128, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = self.convs(x).squeeze(2).permute(0, 2, 1)  # (1, 25, 128)
        return self.fc(self.rnn(seq)[0])                   # (1, 25, 37) logits


# ---------------------------------------------------------------- SVTR-tiny-like


def local_mask(h: int, w: int, window: tuple[int, int] = (7, 11)) -> torch.Tensor:
    """SVTR's local mixing: token (i, j) sees the tokens of the 7x11 window centred on it; the
    rest get -inf before the softmax (as PaddleOCR's mask)."""
    ii, jj = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    ii, jj = ii.reshape(-1), jj.reshape(-1)
    near = ((ii[:, None] - ii[None, :]).abs() <= window[0] // 2) & ((jj[:, None] - jj[None, :]).abs() <= window[1] // 2)
    return torch.where(near, 0.0, float("-inf"))


class MixingAttention(nn.Module):
    def __init__(self, dim: int, heads: int, mask: torch.Tensor | None) -> None:
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.register_buffer("mask", mask if mask is not None else torch.zeros(0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if self.mask.numel():
            attn = attn + self.mask
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


class MixingBlock(nn.Module):
    """PaddleOCR's SVTR block (post-norm): x = LN(x + mixer(x)); x = LN(x + MLP(x))."""

    def __init__(self, dim: int, heads: int, mask: torch.Tensor | None) -> None:
        super().__init__()
        self.mixer, self.norm1 = MixingAttention(dim, heads, mask), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.mixer(x))
        return self.norm2(x + self.mlp(x))


class Merging(nn.Module):
    """Between stages: tokens back to a map, 3x3 conv stride (2, 1) (height halved), LayerNorm."""

    def __init__(self, cin: int, cout: int, h: int, w: int) -> None:
        super().__init__()
        self.h, self.w = h, w
        self.conv, self.norm = nn.Conv2d(cin, cout, 3, (2, 1), 1), nn.LayerNorm(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.transpose(1, 2).reshape(x.shape[0], -1, self.h, self.w)
        return self.norm(self.conv(x).flatten(2).transpose(1, 2))


class SVTRTiny(nn.Module):
    """SVTR-Tiny's form (patch embedding of two 3x3/2 convs, stages of 3, 6, 3 mixing blocks:
    6 local then 6 global, merging, combining by average pool over the height, 1x1 conv to
    192, HardSwish, CTC linear) at widths 32/64/96 with 1/2/3 heads instead of 64/128/256."""

    def __init__(self, classes: int = 37, dims: tuple[int, ...] = (32, 64, 96), heads: tuple[int, ...] = (1, 2, 3),
                 depths: tuple[int, ...] = (3, 6, 3)) -> None:
        super().__init__()
        self.embed = nn.Sequential(conv_bn_act(3, dims[0] // 2, 3, 2, act=nn.GELU),
                                   conv_bn_act(dims[0] // 2, dims[0], 3, 2, act=nn.GELU))  # 8x25 tokens
        self.pos = nn.Parameter(torch.randn(1, 8 * 25, dims[0]) * 0.02)
        mixers = iter(["local"] * 6 + ["global"] * 6)
        self.stages, self.merges, h = nn.ModuleList(), nn.ModuleList(), 8
        for i, (d, nh, depth) in enumerate(zip(dims, heads, depths)):
            mask = lambda: local_mask(h, 25) if next(mixers) == "local" else None  # noqa: E731
            self.stages.append(nn.Sequential(*[MixingBlock(d, nh, mask()) for _ in range(depth)]))
            if i + 1 < len(dims):
                self.merges.append(Merging(d, dims[i + 1], h, 25))
                h //= 2
        self.h = h
        self.combine = nn.Sequential(nn.AdaptiveAvgPool2d((1, 25)), nn.Conv2d(dims[-1], 192, 1, bias=False),
                                     nn.Hardswish())
        self.fc = nn.Linear(192, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i < len(self.merges):
                x = self.merges[i](x)
        x = x.transpose(1, 2).reshape(x.shape[0], -1, self.h, 25)
        return self.fc(self.combine(x).squeeze(2).transpose(1, 2))  # (1, 25, 37) logits


# ---------------------------------------------------------------- DS-CNN


class DSCNN(nn.Module):
    def __init__(self, classes: int = 12, width: int = 64) -> None:
        super().__init__()
        relu = nn.ReLU
        self.stem = nn.Sequential(nn.Conv2d(1, width, (10, 4), (2, 2), (5, 1), bias=False), nn.BatchNorm2d(width),
                                  relu())
        self.blocks = nn.Sequential(*[nn.Sequential(conv_bn_act(width, width, 3, groups=width, act=relu),
                                                    conv_bn_act(width, width, 1, act=relu)) for _ in range(4)])
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)))


# ---------------------------------------------------------------- YOLOv8n (ultralytics)


def yolov8n() -> nn.Module:
    """ultralytics' DetectionModel from its own yolov8n.yaml, width multiple 0.125."""
    from ultralytics.nn.tasks import DetectionModel, yaml_model_load

    cfg = yaml_model_load("yolov8n.yaml")
    cfg["scales"] = {"n": [0.33, 0.125, 1024]}
    cfg["scale"] = "n"
    return DetectionModel(cfg, ch=3, nc=80, verbose=False)


def yolo_for_export(model: nn.Module) -> nn.Module:
    """What `yolo export format=onnx` does to the model: fuse Conv+BN, Detect in export mode."""
    model = model.fuse(verbose=False).eval()
    head = model.model[-1]
    head.export, head.format = True, "onnx"
    return model


def set_yolo_score_prior(model: nn.Module, x: torch.Tensor, per_image: float = 20.0) -> float:
    """Shift every level's class-logit bias by one constant so that about `per_image` anchors
    per image score over 0.25 in float (a trained detector on a busy scene)."""
    head = model.model[-1]
    with torch.no_grad():
        lo, hi = -30.0, 30.0
        for _ in range(40):  # bisection on the shift
            mid = (lo + hi) / 2
            for seq in head.cv3:
                seq[-1].bias += mid
            scores = yolo_scores(model, x)
            for seq in head.cv3:
                seq[-1].bias -= mid
            count = float((scores.max(1).values > 0.25).sum(1).float().mean())
            lo, hi = (lo, mid) if count > per_image else (mid, hi)
        for seq in head.cv3:
            seq[-1].bias += lo
    return lo


def yolo_scores(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The (N, 80, anchors) sigmoid scores of the model's inference output."""
    model.eval()
    y = model(x)
    y = y[0] if isinstance(y, (tuple, list)) else y
    return y[:, 4:]


# ---------------------------------------------------------------- export


def calibrate_batchnorm(model: nn.Module, data: np.ndarray, batch: int = 16) -> None:
    """Running statistics of every BatchNorm from train-mode passes over `data` (a cumulative
    average), as training would leave them; weights stay random."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for i in range(0, len(data), batch):
            model(torch.from_numpy(data[i:i + batch]))
    model.eval()


def export(model: nn.Module, name: str, sample: np.ndarray, output: str) -> Path:
    path = OUT / f"{name}.onnx"
    torch.onnx.export(model.eval(), (torch.from_numpy(sample[:1]),), str(path), opset_version=OPSET,
                      input_names=["x"], output_names=[output], dynamo=False, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    return path


def macs(model: nn.Module, sample: np.ndarray) -> int:
    """Multiply-accumulates of one inference: Conv, ConvTranspose, Linear and LSTM layers,
    counted by forward hooks (the exported graph's shapes are partly symbolic)."""
    total = 0

    def count(m: nn.Module, inputs: tuple, out) -> None:
        nonlocal total
        if isinstance(m, nn.Conv2d):
            total += out.numel() * m.weight[0].numel()
        elif isinstance(m, nn.ConvTranspose2d):
            total += inputs[0].numel() * m.weight[0].numel()
        elif isinstance(m, nn.Linear):
            total += out.numel() * m.in_features
        elif isinstance(m, nn.LSTM):
            steps, dirs = inputs[0].shape[1], 2 if m.bidirectional else 1
            for layer in range(m.num_layers):
                width = m.input_size if layer == 0 else m.hidden_size * dirs
                total += steps * dirs * 4 * m.hidden_size * (width + m.hidden_size)

    hooks = [m.register_forward_hook(count) for m in model.modules()]
    with torch.no_grad():
        model.eval()(torch.from_numpy(sample[:1]))
    for h in hooks:
        h.remove()
    return total


class Data:
    """Seeded samples as stored: 8-bit images (or float spectrograms) and the model's own
    preprocessing, x = (raw / 255 - mean) / std for images; `calib`, `test` and `bn` (for the
    BatchNorm statistics, never stored) as the model takes them."""

    def __init__(self, raw: np.ndarray, calib: int, test: int, mean=0.0, std=1.0) -> None:
        self.image = raw.ndim == 4 and raw.shape[1] == 3
        self.raw = np.round(raw * 255).astype(np.uint8) if self.image else raw.astype(np.float32)
        self.mean = np.broadcast_to(np.asarray(mean, np.float32), (3, 1, 1)) if self.image else None
        self.std = np.broadcast_to(np.asarray(std, np.float32), (3, 1, 1)) if self.image else None
        self.calib, self.test = calib, test

    def model_input(self, raw: np.ndarray) -> np.ndarray:
        if not self.image:
            return raw
        return ((raw.astype(np.float32) / 255 - self.mean) / self.std).astype(np.float32)

    def split(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = self.model_input(self.raw)
        return x[:self.calib], x[self.calib:self.calib + self.test], x[self.calib + self.test:]

    def save(self, name: str) -> None:
        stored = self.raw[:self.calib + self.test]
        extra = {"mean": self.mean, "std": self.std} if self.image else {}
        np.savez_compressed(OUT / f"{name}.npz", calib=stored[:self.calib], test=stored[self.calib:], **extra)


def fixture(name: str, model: nn.Module, data: Data, output: str = "y") -> None:
    calib, _, bn = data.split()
    calibrate_batchnorm(model, bn)
    path = export(model, name, calib, output)
    data.save(name)
    print(f"{name}: {path.stat().st_size / 1e6:.2f} MB, {macs(model, calib) / 1e6:.1f} M MACs")


def set_db_text_prior(model: TextDetector, x: torch.Tensor, fraction: float = 0.1) -> float:
    """Shift the last ConvTranspose's bias so that `fraction` of the pixels pass DB's 0.3
    threshold in float (text covers a part of a page; random weights give 0.5 everywhere)."""
    last = model.head.body[-2]
    with torch.no_grad():
        lo, hi = -30.0, 30.0
        for _ in range(30):  # bisection on the shift
            mid = (lo + hi) / 2
            last.bias += mid
            share = float((model(x) > 0.3).float().mean())
            last.bias -= mid
            lo, hi = (lo, mid) if share > fraction else (mid, hi)
        last.bias += lo
    return lo


def make_text_detector(data: Data) -> None:
    calib, _, bn = data.split()
    model = TextDetector()
    calibrate_batchnorm(model, bn)
    shift = set_db_text_prior(model, torch.from_numpy(bn))
    print(f"ocr_det_mv3_db: probability-map bias shift {shift:+.2f}")
    path = export(model, "ocr_det_mv3_db", calib, "y")
    data.save("ocr_det_mv3_db")
    print(f"ocr_det_mv3_db: {path.stat().st_size / 1e6:.2f} MB, {macs(model, calib) / 1e6:.1f} M MACs")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(39)
    bn = 64  # samples for the BatchNorm statistics, not stored

    torch.manual_seed(1)
    fixture("pplcnet_x025", PPLCNet(), Data(scenes(rng, CALIB + TEST + bn, 224), CALIB, TEST,
                                            IMAGENET_MEAN, IMAGENET_STD))
    torch.manual_seed(2)
    make_text_detector(Data(scenes(rng, CALIB + 16 + bn, 160), CALIB, 16, IMAGENET_MEAN, IMAGENET_STD))
    torch.manual_seed(3)
    fixture("ocr_rec_crnn", CRNN(), Data(text_strips(rng, CALIB + TEST + bn), CALIB, TEST, 0.5, 0.5))
    torch.manual_seed(4)
    fixture("audio_dscnn", DSCNN(), Data(log_mels(rng, CALIB + TEST + bn), CALIB, TEST))
    torch.manual_seed(5)
    make_yolo(Data(scenes(rng, CALIB + 16 + bn, 160), CALIB, 16))  # YOLO takes RGB in [0, 1]
    torch.manual_seed(6)
    fixture("ocr_rec_svtr", SVTRTiny(), Data(text_strips(rng, CALIB + TEST + bn), CALIB, TEST, 0.5, 0.5))


def make_yolo(data: Data) -> None:
    calib, _, bn = data.split()
    model = yolov8n()
    calibrate_batchnorm(model, bn)
    model = yolo_for_export(model)
    shift = set_yolo_score_prior(model, torch.from_numpy(bn))
    print(f"yolov8n: class-logit bias shift {shift:+.2f}")
    path = export(model, "yolov8n_160", calib, "y")
    data.save("yolov8n_160")
    print(f"yolov8n_160: {path.stat().st_size / 1e6:.2f} MB, {macs(model, calib) / 1e6:.1f} M MACs")


if __name__ == "__main__":
    main()
