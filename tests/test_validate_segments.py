"""`validate` that one big output cannot fool (issue 39): per-output and per-segment statistics of a
Concat output, the coarse/collapsed flags, task metrics (--metric), and --accuracy-target judging
the same statistics with a line per step and a time bound. The fixture: tests/fixtures/yolo_head
(boxes in 0..320 and sigmoid scores in one output)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.errors import UsageError
from cuvil_sdk.task_metrics import TaskMetric, parse_slice, task_metric
from cuvil_sdk.validate_segments import values_flags

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "yolo_head"
MODEL, CALIB, DATA = FIXTURE / "yolo_head.onnx", FIXTURE / "calib.npy", FIXTURE / "test.npz"
HOST = ["--board", "host", "--profile", "standard"]


def cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def validate(tmp: Path, *extra) -> tuple[dict, str]:
    r = cli(tmp, "validate", *HOST, "--model", MODEL, "--calib", CALIB, "--data", DATA, "--json", *extra)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout), r.stderr


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> tuple[dict, str]:
    return validate(tmp_path_factory.mktemp("split"), "--metric", "detections", "--score-slice", "4:")


@pytest.fixture(scope="module")
def old_way(tmp_path_factory) -> tuple[dict, str]:
    return validate(tmp_path_factory.mktemp("old"), "--no-range-split", "--metric", "detections",
                    "--score-slice", "4:")


def test_statistics_per_output_and_per_segment(split):
    report, _ = split
    out = report["outputs"]["output0"]
    boxes, scores = out["segments"]
    assert (boxes["name"], boxes["start"], boxes["stop"], boxes["axis"]) == ("boxes", 0, 4, 2)
    assert (scores["name"], scores["start"], scores["stop"]) == ("scores", 4, 7)
    assert scores["step"] < 0.005 and boxes["step"] > 1.0  # each segment's own scale
    assert scores["cosine"] > 0.999 and not scores["flags"] and not out["flags"]
    assert report["flags"] == []
    assert out["range_split"] is True


def test_detections_metric_equals_the_float_models(split):
    m = split[0]["task_metric"]
    assert m["metric"] == "detections" and m["output"] == "output0" and m["score_slice"] == [4, 7]
    assert m["field_axis"] == 2 and m["reference_detections"] > 0
    assert m["precision"] == m["recall"] == 1.0 and m["matched"] == m["reference_detections"] == m["detections"]


def test_old_way_is_flagged_though_the_whole_cosine_looks_perfect(old_way):
    report, stderr = old_way
    out = report["outputs"]["output0"]
    scores = out["segments"][1]
    assert out["cosine"] > 0.9999  # what fooled the old validate
    assert scores["step"] > 1.0 and set(scores["flags"]) == {"coarse", "collapsed"}
    assert scores["values"] < 4 <= 16 <= scores["reference_values"]
    assert len(report["flags"]) == 1 and "segment 'scores'" in report["flags"][0]
    assert "warning: output 'output0' segment 'scores'" in stderr and "coarse" in stderr
    assert report["task_metric"]["recall"] < 1.0  # detections lost


def test_human_table_shows_segments_and_flags(tmp_path):
    r = cli(tmp_path, "validate", *HOST, "--model", MODEL, "--calib", CALIB, "--data", DATA, "--no-range-split",
            "--metric", "topk", "--score-slice", "4:", "--top-k", "2")
    assert r.returncode == 0, r.stderr
    assert "[4:7] scores" in r.stdout and "COARSE, COLLAPSED" in r.stdout and "FLAG: output 'output0'" in r.stdout
    assert "top-2 agreement" in r.stdout


@pytest.mark.parametrize("extra, says", [
    (["--metric", "detections", "--score-slice", "x"], "--score-slice 'x': expected START:STOP"),
    (["--metric", "detections", "--score-slice", "2:"], "need the 4 box fields"),
    (["--score-slice", "4:"], "--score-slice and --metric-output go with --metric"),
    (["--metric", "argmax", "--metric-output", "nope"], "--metric-output 'nope' is not an output"),
])
def test_metric_option_faults_are_one_line(tmp_path, extra, says):
    r = cli(tmp_path, "validate", *HOST, "--model", MODEL, "--calib", CALIB, "--data", DATA, *extra)
    assert r.returncode != 0 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_argmax_and_topk_over_a_score_slice():
    rng = np.random.default_rng(0)
    ref = rng.uniform(0, 1, (3, 10, 7)).astype(np.float32)
    ours = ref.copy()
    ours[0, 0, 4:] = ours[0, 0, 4:][::-1]  # one row's scores reordered
    am = task_metric(TaskMetric("argmax", score_slice="4:"), ours, ref, 1)
    assert am["score_slice"] == [4, 7] and am["argmax_agreement"] in (29 / 30, 1.0)
    top = task_metric(TaskMetric("topk", score_slice="4:", top_k=3), ours, ref, 1)
    assert top["topk_agreement"] == 1.0 and top["k"] == 3
    whole = task_metric(TaskMetric("argmax"), ref, ref, 1)
    assert whole["argmax_agreement"] == 1.0 and whole["score_slice"] == [0, 7]


def test_detections_on_the_field_axis_of_a_yolov8_export():
    """YOLOv8's raw export is (4 + classes, anchors): the field axis is 0 of a sample."""
    rows = np.zeros((1, 3, 6), dtype=np.float32)  # anchors 3, fields 6: cx, cy, w, h, 2 classes
    rows[0, 0] = [10, 10, 4, 4, 0.9, 0.1]
    rows[0, 1] = [11, 10, 4, 4, 0.8, 0.1]  # overlaps the first: suppressed
    rows[0, 2] = [50, 50, 4, 4, 0.1, 0.7]
    ref = np.moveaxis(rows, 2, 1)  # (1, 6, 3)
    got = task_metric(TaskMetric("detections", score_slice="4:"), ref, ref, 0)
    assert got["reference_detections"] == got["detections"] == got["matched"] == 2 and got["f1"] == 1.0
    missing = ref.copy()
    missing[0, 5, 2] = 0.1  # our class-1 detection fell under the threshold
    got = task_metric(TaskMetric("detections", score_slice="4:"), missing, ref, 0)
    assert got["detections"] == 1 and got["recall"] == 0.5 and got["precision"] == 1.0


def test_score_slice_parsing():
    assert parse_slice("4:", 84) == slice(4, 84) and parse_slice(":-80", 84) == slice(0, 4)
    assert parse_slice(None, 7) == slice(0, 7)
    for bad in ("4", "a:b", "9:", "3:2"):
        with pytest.raises(UsageError, match="--score-slice"):
            parse_slice(bad, 7)


def test_flags_need_many_reference_values_to_call_a_collapse():
    ref = np.linspace(0, 1, 100)
    assert values_flags(np.round(ref), ref, 1.0)["flags"] == ["coarse", "collapsed"]
    assert values_flags(ref, ref, 1 / 255)["flags"] == []
    assert values_flags(np.zeros(3), np.array([0.0, 1.0, 0.0]), None)["flags"] == []


def test_accuracy_target_judges_segments_shows_steps_and_stops_at_its_bound(tmp_path):
    common = ["build", *HOST, "--model", MODEL, "--calib", CALIB, "--no-range-split", "--accuracy-target", "0.9999"]
    r = cli(tmp_path, *common, "-o", tmp_path / "a")
    assert r.returncode == 0, r.stderr
    steps = [line for line in r.stderr.splitlines() if ": step " in line]
    assert steps[0].startswith("cuvil-sdk: accuracy target 0.9999: step 1/") and len(steps) > 3
    summary = next(line for line in r.stderr.splitlines() if "int8 reaches" in line)
    assert float(summary.split("int8 reaches ")[1].split(";")[0]) < 0.99  # the scores' segment, not 0.9999
    bounded = cli(tmp_path, *common, "--accuracy-time", "0.000001", "-o", tmp_path / "b")
    assert bounded.returncode == 0, bounded.stderr
    assert "stopped at its time bound" in bounded.stderr
    assert len([line for line in bounded.stderr.splitlines() if ": step " in line]) <= 2
    bad = cli(tmp_path, *common, "--accuracy-time", "-1", "-o", tmp_path / "c")
    assert bad.returncode != 0 and "--accuracy-time -1.0: expected a positive number of seconds" in bad.stderr


def test_per_layer_reads_the_split_concat_by_its_segments(tmp_path):
    report, _ = validate(tmp_path, "--per-layer")
    rows = {row["name"]: row for row in report["layers"]}
    assert rows["head_concat"]["cosine"] > 0.9999 and rows["head_transpose"]["cosine"] > 0.9999
