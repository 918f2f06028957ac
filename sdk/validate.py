"""`cuvil-sdk validate`: run the built artifact where the board runs, on every sample, and
compare with ONNX Runtime running the original float model (per output: cosine, relative
L2, MAE, RMSE, top-1 agreement, and accuracies against labels), or, for a model with plugin
ops, with the SDK's numpy float reference running the plugins' functions (the report's
`reference` says which); with --per-layer, every layer's dequantized output against ONNX
Runtime's value of the same tensor."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from .request import CompileRequest
from .data import as_samples, check_declared_shapes, input_keys, load_arrays, read_headers, require_file, shape_text
from .errors import ModelError, ToolError, UsageError
from .kernels.requant import dequantize
from .kernels.segments import dequantize_entry
from .task_metrics import TaskMetric, check_metric, field_axis, human_line, task_metric
from .validate_segments import flag_lines, metrics, output_statistics, segment_parts

PER_LAYER_SAMPLES = 16


def onnxruntime_session(model: Path, extra_outputs: list[str] = ()):
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        raise ToolError("validate needs ONNX Runtime as the float reference: pip install onnxruntime") from None
    m = onnx.load(str(model))
    known = {o.name for o in m.graph.output}
    types = tensor_types(m) if extra_outputs else {}
    for name in extra_outputs:
        if name not in known:  # declared with its own type: a bool Equal output is no float
            m.graph.output.append(onnx.helper.make_tensor_value_info(name, types.get(name, onnx.TensorProto.FLOAT), None))
            known.add(name)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), options)


def tensor_types(m) -> dict[str, int]:
    """Each tensor's ONNX element type, as shape inference gives it (inputs, initializers, values)."""
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(m).graph
    except Exception:  # a model ORT runs but the checker's inference refuses: types as declared
        inferred = m.graph
    values = list(inferred.input) + list(inferred.value_info) + list(inferred.output)
    types = {v.name: v.type.tensor_type.elem_type for v in values if v.type.tensor_type.elem_type}
    types.update({t.name: t.data_type for t in inferred.initializer})
    return types


def reference_used(g) -> dict:
    """What the outputs are compared with: ONNX Runtime running the ONNX file, or, for a model
    with plugin ops (defined by their plugin, not by ONNX Runtime), the SDK's numpy float
    reference of the IR, in which each plugin op runs its plugin's numpy function."""
    from .plugins import OPS
    ops = sorted({node.op for node in g.nodes if node.op in OPS})
    return {"kind": "numpy" if ops else "onnxruntime",
            "plugin_ops": [{"op": op, "plugin": OPS[op].plugin} for op in ops]}


def float_reference(req: CompileRequest, g, samples: list[dict], per_layer: bool, reference: dict) -> list[dict]:
    """The reference outputs of every sample, from the reference that `reference_used` chose."""
    if reference["kind"] == "numpy":
        if per_layer:
            raise UsageError("validate --per-layer compares with ONNX Runtime, which cannot run plugin ops")
        from .reference import run_float
        return [run_float(g, feeds) for feeds in samples]
    session = onnxruntime_session(req.model)
    out_names = [o.name for o in session.get_outputs()]
    return [dict(zip(out_names, session.run(None, onnx_feeds(g, feeds)))) for feeds in samples]


def onnx_feeds(g, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A sample as the ONNX model takes it: inputs that the build takes channels-last
    (--input-layout nhwc: the tensor's origin holds the permutation) transposed back."""
    out = {}
    for name, value in feeds.items():
        origin = g.tensors[name].origin
        out[name] = value.transpose(np.argsort(origin[1])) if origin and origin[0] == name else value
    return out


def reference_label(reference: dict) -> str:
    """The reference as the first line of the table names it."""
    if reference["kind"] == "onnxruntime":
        return "ONNX Runtime (float model)"
    ops = "; ".join(f"{o['op']} runs the numpy function of plugin '{o['plugin']}'" for o in reference["plugin_ops"])
    return f"the SDK's numpy float reference, where {ops}"


def integer_metrics(ours: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """An integer or bool output (class indices, masks): the share of values equal to the
    reference's, and of samples whose every value is."""
    a, b = ours.reshape(len(ours), -1), ref.reshape(len(ref), -1)
    return {"agreement": float((a == b).mean()), "samples_exact": float((a == b).all(1).mean())}


def looks_random(x: np.ndarray) -> bool:
    """Real inputs (images, spectrograms, signals) have neighbours that correlate; i.i.d.
    noise does not."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    if flat.shape[1] < 4:
        return False
    a, b = flat[:, :-1].ravel(), flat[:, 1:].ravel()
    if a.std() == 0 or b.std() == 0:
        return False
    return abs(float(np.corrcoef(a, b)[0, 1])) < 0.1


def load_validation_data(path: Path, g) -> tuple[list[dict], np.ndarray | None, np.ndarray]:
    """The samples, the labels as class indices (or None), and the first input's array; every
    header checked against the model before any data is read, the labels before any work."""
    what = "validation data"
    headers = read_headers(path, what)
    keys = input_keys(path, [k for k in headers if k != "y"], list(g.inputs))
    check_declared_shapes(path, g, {name: headers[key] for name, key in keys.items()}, what)
    arrays = load_arrays(path, what, list(keys.values()) + (["y"] if "y" in headers else []), headers)
    samples = as_samples(g, {name: arrays[key] for name, key in keys.items()}, what)
    labels = arrays.get("y")
    if labels is not None:
        labels = class_indices(path, labels, len(samples), g.outputs[0], classes_of(g))
    return samples, labels, arrays[next(iter(keys.values()))]


def classes_of(g) -> int:
    """The classes accuracy is taken over: the values of one sample of the first output (its
    argmax is the predicted class)."""
    return int(np.prod(g.tensors[g.outputs[0]].shape))


def class_indices(path: Path, y: np.ndarray, samples: int, output: str, classes: int) -> np.ndarray:
    """Labels 'y' as one integer class index per sample, in [0, classes): integer indices, (N, 1)
    included, or one-hot rows (N, classes) of zeros and a single one, converted with a note.
    Anything else is refused in one line, before the build: float indices, negative or too large
    ones, a count that is not the samples'."""
    where = f"'{path.name}': labels 'y'"
    if y.ndim == 2 and y.shape[1] == classes and classes > 1 and y.dtype.kind in "biuf":
        if not (np.isin(y, (0, 1)).all() and (y.sum(axis=1) == 1).all()):
            raise ModelError(f"{where} of shape {shape_text(y.shape)} are not one-hot rows (zeros and a single 1); "
                             f"give class indices of shape ({y.shape[0]},)")
        print(f"cuvil-sdk: note: {where} are one-hot; taking each row's 1 as its class index", file=sys.stderr)
        y = y.argmax(axis=1)
    elif y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ModelError(f"{where} have shape {shape_text(y.shape)}: expected class indices ({samples},) or "
                         f"one-hot rows ({samples}, {classes})")
    if y.dtype.kind not in "biu":
        raise ModelError(f"{where} are {y.dtype.name}: class indices are integers (y.astype(np.int64) if they "
                         f"are whole numbers)")
    if len(y) != samples:
        raise ModelError(f"'{path.name}': {len(y)} labels for {samples} samples")
    bad = np.flatnonzero((y < 0) | (y >= classes))
    if len(bad):
        raise ModelError(f"{where}: label {int(y[bad[0]])} of sample {int(bad[0])} is not a class of the model's "
                         f"output '{output}' (its {classes} values per sample give classes 0..{classes - 1})")
    return y.astype(np.int64)


def validate(req: CompileRequest, data: Path, per_layer: bool, jobs: int, build=None, target=None,
             out_dir: Path | None = None, metric: TaskMetric | None = None) -> dict:
    """`build`: a function (folder -> the model's build info) that builds the artifact the model
    runs in (a multi-model firmware image: commands.image_builder); default: the model alone.
    `target`: a board over a serial port or in a labgrid farm (commands.remote_target()).
    `out_dir` (-o): keep the build there, and with per_layer the debug build and its per-layer
    dumps in DIR/per-layer; default: a temporary folder, removed. `metric` (--metric): a task metric
    of one output (task_metrics.py)."""
    from .commands import QEMU_ICOUNT_NOTE, do_build, remote_summary, run_samples
    from .compiler import input_graph
    require_file(data, "--data")
    if data.suffix != ".npz":
        raise ModelError(f"validation data '{data.name}' must be a .npz with 'x' (or input names) and optional 'y'")
    g = input_graph(req)
    metric_output = check_metric(metric, g) if metric is not None else None
    samples, labels, x = load_validation_data(data, g)
    warnings = []
    if looks_random(x):
        warnings.append("the inputs look like random noise, not representative data: metrics may mislead")
        print(f"cuvil-sdk: warning: {warnings[-1]}", file=sys.stderr)
    used = reference_used(g)
    reference = float_reference(req, g, samples, per_layer, used)
    with tempfile.TemporaryDirectory(prefix="cuvil-validate-") as tmp:
        folder = out_dir or Path(tmp) / "project"
        info = build(folder) if build else do_build(req, folder, jobs)
        result = run_samples(req.board, info, samples, sys.stderr.isatty(), target=target)
        layers = per_layer_table(req, samples, jobs, folder / "per-layer" if out_dir else Path(tmp) / "debug",
                                 keep_dumps=out_dir is not None) if per_layer else None
    report = {"board": req.board.name, "profile": req.profile.name, "precision": info["precision"],
              "samples": len(samples), "reference": used, "outputs": {}, "warnings": warnings,
              "float_layers": info.get("float_layers", []), "int16_layers": info.get("int16_layers", [])}
    int8 = info["precision"] == "int8"
    flags = []
    for t in info["outputs"]:
        ours = np.stack([r[t["name"]] for r in result["outputs"]])
        ref = np.stack([r[t["name"]] for r in reference]).reshape(ours.shape)
        # exact values for integer and bool outputs; a float one (kept in float in an int8 build:
        # no scale either) is measured like the others
        if t["scale"] is None and np.dtype(t["dtype"]).kind != "f":
            report["outputs"][t["name"]] = integer_metrics(ours, ref)
        else:
            parts = segment_parts(g, t, int8)
            stats = report["outputs"][t["name"]] = output_statistics(ours, ref, t, parts, int8)
            flags += flag_lines(t["name"], stats)
            if metric is not None and metric_output == t["name"]:
                report["task_metric"] = {"output": t["name"], **task_metric(metric, ours, ref, field_axis(g, t["name"]))}
        if labels is not None and t is info["outputs"][0]:
            report["accuracy"] = float((ours.reshape(len(ours), -1).argmax(1) == labels).mean())
            report["float_accuracy"] = float((ref.reshape(len(ref), -1).argmax(1) == labels).mean())
    report["flags"] = flags
    for line in flags:
        print(f"cuvil-sdk: warning: {line}", file=sys.stderr)
    if layers is not None:
        report["layers"] = layers
    if result.get("instructions") is not None:  # QEMU boards: guest instructions per inference
        report["instructions_per_sample"] = [int(c) for c in result["instructions"]]
        report["instructions_note"] = result.get("instructions_note") or QEMU_ICOUNT_NOTE
    report.update(remote_summary(result))
    warnings.extend(result.get("warnings", []))  # said on stderr as they arose
    return report


def per_layer_table(req: CompileRequest, samples: list[dict], jobs: int, folder: Path,
                    keep_dumps: bool = False) -> list[dict]:
    """A debug build (into `folder`) dumps every layer's output on the target; each is dequantized,
    put back in the ONNX layout and compared with ONNX Runtime's value of the same tensor. With
    keep_dumps, folder/layers.npz keeps our values (keyed by ONNX tensor) and ONNX Runtime's
    (keyed `onnxruntime/<tensor>`), (samples, *shape) each."""
    from dataclasses import replace
    from .commands import do_build, run_samples
    from .compiler import input_graph
    subset = samples[:PER_LAYER_SAMPLES]
    info = do_build(replace(req, debug_dump=True), folder, jobs)
    result = run_samples(req.board, info, subset, False, layers=True)
    rows = [l for l in info["layers"] if l["kernel"] != "(alias)"]
    session = onnxruntime_session(req.model, [l["onnx_tensor"] for l in rows])
    names = [o.name for o in session.get_outputs()]
    g = input_graph(req)
    ort_values = [dict(zip(names, session.run(None, onnx_feeds(g, feeds)))) for feeds in subset]
    table, kept = [], {}
    for layer in rows:
        dumps = [r.get(layer["index"]) for r in result["layers"]]
        entry = {k: layer[k] for k in ("index", "name", "op", "kernel", "output")}
        if any(d is None for d in dumps) or layer["onnx_tensor"] not in names:
            table.append({**entry, "cosine": None, "rel_l2": None, "note": "no ONNX Runtime tensor"})
            continue
        ours = np.stack([to_onnx_layout(d, layer) for d in dumps])
        ref = np.stack([v[layer["onnx_tensor"]] for v in ort_values]).astype(np.float32)
        if ours.shape != ref.shape:
            table.append({**entry, "cosine": None, "rel_l2": None, "note": f"shape {ours.shape} vs {ref.shape}"})
            continue
        m = metrics(ours, ref)
        table.append({**entry, "cosine": m["cosine"], "rel_l2": m["rel_l2"]})
        kept[layer["onnx_tensor"]], kept[f"onnxruntime/{layer['onnx_tensor']}"] = ours, ref
    if keep_dumps:
        from .data import write_arrays
        write_arrays(folder / "layers.npz", kept)  # each array already (N, *layer shape)
    return table


def to_onnx_layout(raw: bytes, layer: dict) -> np.ndarray:
    """A layer's dumped output in the ONNX layout: int8 codes dequantized (integer and bool
    tensors have no scale: their values are compared as they are)."""
    value = np.frombuffer(raw, dtype=np.dtype(layer["output_dtype"])).reshape(layer["output_shape"])
    if layer.get("segments"):  # a range split's Concat and the moves after it: per-segment scales
        value = dequantize_entry(value, {**layer, "shape": layer["output_shape"]})
    elif layer["scale"] is not None:
        value = dequantize(value, layer["scale"], layer["zero_point"])
    return value.transpose(np.argsort(layer["onnx_perm"]))


def step_text(step: float | None) -> str:
    return "" if step is None else f"step {step:.4g}"


def human_table(report: dict) -> str:
    lines = [f"validated {report['samples']} samples on {report['board']} ({report['precision']}) "
             f"against {reference_label(report['reference'])}"]
    lines.append(f"  {'output':24} {'cosine':>8} {'rel L2':>8} {'MAE':>10} {'RMSE':>10} {'top-1':>7}")
    for name, m in report["outputs"].items():
        if "agreement" in m:  # an integer output: exact values
            lines.append(f"  {name[:24]:24} equal values {m['agreement']:.2%}, samples exact {m['samples_exact']:.2%}")
            continue
        lines.append(f"  {name[:24]:24} {m['cosine']:8.5f} {m['rel_l2']:8.5f} {m['mae']:10.5g} {m['rmse']:10.5g} "
                     f"{m['top1_agreement']:7.2%}")
        for seg in m.get("segments", []):  # a Concat output's segments, each on its own
            label = f"  [{seg['start']}:{seg['stop']}] {seg['name']}"
            flagged = f"  {', '.join(seg['flags']).upper()}" if seg["flags"] else ""
            lines.append(f"    {label[:22]:22} {seg['cosine']:8.5f} {seg['rel_l2']:8.5f} {seg['mae']:10.5g} "
                         f"{seg['rmse']:10.5g} {'':7} {step_text(seg['step'])}{flagged}")
    if report.get("task_metric"):
        lines.append(f"  {report['task_metric']['output']}: {human_line(report['task_metric'])}")
    for line in report.get("flags", []):
        lines.append(f"  FLAG: {line}")
    if report.get("float_layers"):
        lines.append(f"  layers kept in float: {', '.join(report['float_layers'])}")
    if report.get("int16_layers"):
        lines.append(f"  layers with int16 activations (16x8): {', '.join(report['int16_layers'])}")
    if "accuracy" in report:
        lines.append(f"  accuracy: ours {report['accuracy']:.2%}, float model {report['float_accuracy']:.2%}")
    for unit in ("instructions", "cycles", "unverified_counts"):  # each with its unit and source
        counts = report.get(f"{unit}_per_sample")
        if counts:
            lines.append(f"  {unit.replace('_', ' ')} per inference: median {int(np.median(counts))} (min "
                         f"{min(counts)}, max {max(counts)}) over {len(counts)} samples")
            if report.get(f"{unit}_note"):
                lines.append(f"    {report[f'{unit}_note']}")
    for place in report.get("places", []):
        lines.append(f"  place {place['place']}: samples {place['first_sample']}-"
                     f"{place['first_sample'] + place['samples'] - 1}")
    if "layers" in report:
        lines.append(f"  {'#':>3} {'op':18} {'kernel':18} {'cosine':>8} {'rel L2':>8}  tensor")
        for l in report["layers"]:
            cos = f"{l['cosine']:8.5f}" if l["cosine"] is not None else f"{'-':>8}"
            rel = f"{l['rel_l2']:8.5f}" if l["rel_l2"] is not None else f"{'-':>8}"
            lines.append(f"  {l['index']:3} {l['op'][:18]:18} {l['kernel'][:18]:18} {cos} {rel}  {l['output'][:40]}")
    return "\n".join(lines)
