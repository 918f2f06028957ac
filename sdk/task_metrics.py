"""Task metrics of `validate --metric`: what the user's task reads from an output, ours against
the float reference's, where a cosine over the whole tensor says too little.

The output's values are taken as rows of fields: the field axis is the axis along which the
output's Concat joins its inputs (validate_segments), else the last axis; every other axis of a
sample indexes rows (a classifier: one row; a detector: one row per anchor). `--score-slice
START:STOP` picks the score fields of a row (default: all).

- argmax: the share of rows whose best score field is the reference's.
- topk: the share of rows whose reference best field is among our K best (--top-k, default 5).
- detections: rows are candidate boxes, YOLOv8 style: the 4 fields before the scores are cx, cy,
  w, h; a row is kept when its best score exceeds --conf (0.25), then per-class non-maximum
  suppression at IoU --iou (0.5); our detections are matched one to one with the reference's by
  class and IoU >= --iou: precision, recall and F1 (the reference's detections are the truth).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import UsageError

METRICS = ("argmax", "topk", "detections")
BOX_FIELDS = 4


@dataclass
class TaskMetric:
    name: str
    output: str | None = None  # None: the first output
    score_slice: str | None = None  # "START:STOP", either side optional
    top_k: int = 5
    conf: float = 0.25
    iou: float = 0.5

    def check(self) -> None:
        if self.name not in METRICS:
            raise UsageError(f"--metric {self.name}: expected one of {', '.join(METRICS)}")
        if self.top_k < 1:
            raise UsageError(f"--top-k {self.top_k}: expected 1 or more")
        if not 0.0 <= self.iou <= 1.0:
            raise UsageError(f"--iou {self.iou}: expected a value from 0 to 1")


def field_axis(g, output: str) -> int:
    """The axis of one sample of `output` that holds a row's fields: its Concat's axis (found
    through Reshape/Transpose), else the last."""
    from .quant.range_split import concat_layout
    layout = concat_layout(g, output)
    return layout.axis if layout is not None else len(g.tensors[output].shape) - 1


def check_metric(metric: TaskMetric, g) -> str:
    """Every option of the metric against the float model, before any build: returns the output
    it reads."""
    metric.check()
    output = metric.output or g.outputs[0]
    if output not in g.outputs:
        raise UsageError(f"--metric-output {output!r} is not an output of the model (outputs: {', '.join(g.outputs)})")
    if g.tensors[output].is_integer:
        raise UsageError(f"--metric {metric.name}: output '{output}' holds integers, not scores")
    scores = parse_slice(metric.score_slice, g.tensors[output].shape[field_axis(g, output)])
    if metric.name == "detections" and scores.start < BOX_FIELDS:
        raise UsageError(f"--metric detections: the scores ({scores.start}:{scores.stop}) need the {BOX_FIELDS} box "
                         f"fields (cx, cy, w, h) before them: give --score-slice {BOX_FIELDS}: or later")
    return output


def parse_slice(text: str | None, fields: int) -> slice:
    """"START:STOP" (either side optional, negative counts from the end) over `fields` fields."""
    if text is None:
        return slice(0, fields)
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, stop = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise UsageError(f"--score-slice {text!r}: expected START:STOP, e.g. 4: or 4:84") from None
    picked = range(fields)[slice(start, stop)]
    if len(picked) == 0 or picked.step != 1:
        raise UsageError(f"--score-slice {text!r} picks no field of the {fields} along the field axis")
    return slice(picked.start, picked.stop)


def rows(values: np.ndarray, axis: int) -> np.ndarray:
    """(samples, *shape) -> (samples, rows, fields) with the field axis (of one sample) last."""
    moved = np.moveaxis(values, axis + 1, -1)
    return moved.reshape(len(values), -1, moved.shape[-1])


def task_metric(metric: TaskMetric, ours: np.ndarray, ref: np.ndarray, field_axis: int) -> dict:
    """The metric over the samples (leading axis) of one output, ours against the reference's."""
    a, b = rows(ours.astype(np.float64), field_axis), rows(ref.astype(np.float64), field_axis)
    scores = parse_slice(metric.score_slice, a.shape[-1])
    result = {"metric": metric.name, "field_axis": field_axis, "score_slice": [scores.start, scores.stop]}
    if metric.name == "argmax":
        agree = a[..., scores].argmax(-1) == b[..., scores].argmax(-1)
        return {**result, "argmax_agreement": float(agree.mean()), "samples_all_agree": float(agree.all(1).mean())}
    if metric.name == "topk":
        k = min(metric.top_k, scores.stop - scores.start)
        best = b[..., scores].argmax(-1)[..., None]
        ours_top = np.argsort(-a[..., scores], axis=-1, kind="stable")[..., :k]
        return {**result, "k": k, "topk_agreement": float((ours_top == best).any(-1).mean())}
    if scores.start < BOX_FIELDS:
        raise UsageError(f"--metric detections: the scores ({scores.start}:{scores.stop}) need the {BOX_FIELDS} box "
                         f"fields (cx, cy, w, h) before them: give --score-slice {BOX_FIELDS}: or later")
    return {**result, **detection_metrics(a, b, scores, metric.conf, metric.iou)}


def detection_metrics(a: np.ndarray, b: np.ndarray, scores: slice, conf: float, iou_bound: float) -> dict:
    found = matched = wanted = 0
    for ours, ref in zip(a, b):
        mine, theirs = detect(ours, scores, conf, iou_bound), detect(ref, scores, conf, iou_bound)
        found, wanted = found + len(mine), wanted + len(theirs)
        matched += match(mine, theirs, iou_bound)
    precision = matched / found if found else float(wanted == 0)
    recall = matched / wanted if wanted else float(found == 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"conf": conf, "iou": iou_bound, "detections": found, "reference_detections": wanted,
            "matched": matched, "precision": precision, "recall": recall, "f1": f1}


def corners(boxes: np.ndarray) -> np.ndarray:
    """cx, cy, w, h -> x0, y0, x1, y1."""
    half = boxes[:, 2:4] / 2
    return np.concatenate([boxes[:, :2] - half, boxes[:, :2] + half], axis=1)


def iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU of one box (x0, y0, x1, y1) with each of `others`."""
    w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = w * h
    area = (box[2] - box[0]) * (box[3] - box[1]) + (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter / np.maximum(area - inter, 1e-12)


def detect(rows_: np.ndarray, scores: slice, conf: float, iou_bound: float) -> list[tuple[np.ndarray, int]]:
    """One sample's rows -> [(box corners, class)] after the threshold and per-class NMS."""
    boxes = corners(rows_[:, scores.start - BOX_FIELDS:scores.start])
    cls, best = rows_[:, scores].argmax(1), rows_[:, scores].max(1)
    kept = []
    for c in np.unique(cls[best > conf]):
        idx = np.flatnonzero((cls == c) & (best > conf))
        idx = idx[np.argsort(-best[idx], kind="stable")]
        while len(idx):
            kept.append((boxes[idx[0]], int(c)))
            idx = idx[1:][iou(boxes[idx[0]], boxes[idx[1:]]) < iou_bound]
    return kept


def match(mine: list, theirs: list, iou_bound: float) -> int:
    """Pairs of one of ours and one of the reference's detections, same class, IoU >= the bound
    (greedy, each used once)."""
    used = [False] * len(mine)
    count = 0
    for box, c in theirs:
        for i, (other, c2) in enumerate(mine):
            if not used[i] and c2 == c and iou(box, other[None])[0] >= iou_bound:
                used[i] = True
                count += 1
                break
    return count


def human_line(result: dict) -> str:
    name = result["metric"]
    where = f"score fields {result['score_slice'][0]}:{result['score_slice'][1]} along axis {result['field_axis']}"
    if name == "argmax":
        return f"argmax agreement {result['argmax_agreement']:.2%} ({where})"
    if name == "topk":
        return f"top-{result['k']} agreement {result['topk_agreement']:.2%} ({where})"
    return (f"detections (conf > {result['conf']}, NMS IoU {result['iou']}): ours {result['detections']}, float "
            f"model {result['reference_detections']}, matched {result['matched']}: precision {result['precision']:.2%}"
            f", recall {result['recall']:.2%}, F1 {result['f1']:.3f} ({where})")
