"""The fixtures of board_tests/fixtures/shipped/ (scripts/make_fixtures_shipped.py) as the tests
and benchmarks/bench_real_models.py use them: their samples as the models take them, and each
model's task metric of one set of outputs against another (numpy only)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

SHIPPED = Path(__file__).resolve().parent / "fixtures" / "shipped"
MODELS = ("pplcnet_x025", "audio_dscnn", "ocr_rec_crnn", "ocr_rec_svtr", "ocr_det_mv3_db", "yolov8n_160")
TASKS = {"pplcnet_x025": "argmax agreement", "audio_dscnn": "argmax agreement", "ocr_rec_crnn": "CTC text equal",
         "ocr_rec_svtr": "CTC text equal",
         "ocr_det_mv3_db": "DB boxes F1 at IoU 0.5", "yolov8n_160": "detections F1 at IoU 0.5"}


def model_path(name: str) -> Path:
    return SHIPPED / f"{name}.onnx"


@cache
def data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Calibration and test samples as the model takes them (images are stored as uint8 with
    the model's mean and std: x = (u8 / 255 - mean) / std)."""
    d = np.load(SHIPPED / f"{name}.npz")
    if d["calib"].dtype != np.uint8:
        return d["calib"], d["test"]
    pre = lambda u8: ((u8.astype(np.float32) / 255 - d["mean"]) / d["std"]).astype(np.float32)  # noqa: E731
    return pre(d["calib"]), pre(d["test"])


def argmax_agreement(ref: np.ndarray, got: np.ndarray) -> float:
    return float((ref.reshape(len(ref), -1).argmax(1) == got.reshape(len(got), -1).argmax(1)).mean())


def ctc_greedy(logits: np.ndarray) -> tuple[int, ...]:
    """Best path: argmax per step, repeats collapsed, blanks (class 0) dropped."""
    best = logits.argmax(-1)
    keep = np.r_[True, best[1:] != best[:-1]] & (best != 0)
    return tuple(best[keep].tolist())


def text_agreement(ref: np.ndarray, got: np.ndarray) -> float:
    return float(np.mean([ctc_greedy(r.reshape(-1, r.shape[-1])) == ctc_greedy(g.reshape(-1, g.shape[-1]))
                          for r, g in zip(ref, got)]))


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes a (N, 4) against b (M, 4), corners x1 y1 x2 y2."""
    lt, rb = np.maximum(a[:, None, :2], b[None, :, :2]), np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), -1)
    area = lambda z: np.prod(z[:, 2:] - z[:, :2], -1)  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None, :] - inter + 1e-9)


def nms(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, threshold: float) -> np.ndarray:
    """Class-aware greedy NMS; indices kept, best first."""
    order, keep = np.argsort(-scores, kind="stable"), []
    while len(order):
        i, order = order[0], order[1:]
        keep.append(i)
        same = classes[order] == classes[i]
        order = order[~(same & (iou(boxes[i:i + 1], boxes[order])[0] > threshold))]
    return np.array(keep, int)


def yolo_detections(y: np.ndarray, conf: float = 0.25, iou_nms: float = 0.45, max_det: int = 100):
    """ultralytics' export output (84, anchors): cx cy w h in pixels, then 80 class scores."""
    boxes_xywh, scores = y[:4].T, y[4:].T
    cls, best = scores.argmax(1), scores.max(1)
    sel = best > conf
    xywh, cls, best = boxes_xywh[sel], cls[sel], best[sel]
    boxes = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)
    keep = nms(boxes, best, cls, iou_nms)[:max_det]
    return boxes[keep], cls[keep]


def components(mask: np.ndarray) -> np.ndarray:
    """4-connected labels of a 2-D mask (0 = background) by min-label propagation."""
    h, w = mask.shape
    big = h * w + 1
    labels = np.where(mask, np.arange(1, h * w + 1).reshape(h, w), big)
    while True:
        p = np.pad(labels, 1, constant_values=big)
        new = np.minimum.reduce([labels, p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]])
        new = np.where(mask, new, big)
        if np.array_equal(new, labels):
            return np.where(mask, labels, 0)
        labels = new


def db_detections(prob: np.ndarray, thresh: float = 0.3, box_thresh: float = 0.6, min_area: int = 9):
    """PaddleOCR's DB post-processing, boxes axis-aligned: components of prob > 0.3 whose mean
    probability reaches 0.6; every box has class 0."""
    p = prob.reshape(prob.shape[-2:])
    labels = components(p > thresh)
    boxes = []
    for lab in np.unique(labels[labels > 0]):
        ys, xs = np.nonzero(labels == lab)
        if len(ys) >= min_area and p[ys, xs].mean() >= box_thresh:
            boxes.append([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
    boxes = np.array(boxes, np.float64).reshape(-1, 4)
    return boxes, np.zeros(len(boxes), int)


def match_f1(ref: list, got: list, threshold: float = 0.5) -> float:
    """F1 of `got` detections against `ref` ones over all images: one-to-one greedy matching,
    same class and IoU >= 0.5. 1.0 when neither has any detection."""
    matched = n_ref = n_got = 0
    for (rb, rc), (gb, gc) in zip(ref, got):
        n_ref, n_got = n_ref + len(rb), n_got + len(gb)
        if not len(rb) or not len(gb):
            continue
        m = iou(rb, gb) * (rc[:, None] == gc[None, :])
        for i in range(len(rb)):
            j = int(m[i].argmax())
            if m[i, j] >= threshold:
                matched += 1
                m[:, j] = 0
    return 1.0 if n_ref + n_got == 0 else 2 * matched / (n_ref + n_got)


def task_metric(name: str, ref: np.ndarray, got: np.ndarray) -> float:
    if name in ("pplcnet_x025", "audio_dscnn"):
        return argmax_agreement(ref, got)
    if name.startswith("ocr_rec_"):
        return text_agreement(ref, got)
    decode = yolo_detections if name == "yolov8n_160" else db_detections
    return match_f1([decode(r) for r in ref], [decode(g) for g in got])


