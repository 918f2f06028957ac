"""The fast float reference behind calibration: samples stacked on axis 0 give exactly the
ranges, channel means and percentile/mse samples of one sample at a time; graphs whose layers
read across axis 0 fall back to one at a time; convolution by im2col and matmul equals the
direct sum (bit for bit in integers); weights in external data are mapped from their file."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.data import random_samples
from cuvil_sdk.errors import ModelError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.ops.conv import conv_geometry, conv_nchw
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.quant.calibrate import calibrate, calibrate_batched, calibrate_per_sample
from cuvil_sdk.reference.batched import batchable

EXAMPLES = Path(__file__).resolve().parent.parent / "sdk" / "examples"


def graph_of(path: Path):
    req = CompileRequest(model=path, board=get_board("host"), profile=get_profile("standard"))
    return frontend_and_passes(req)


def assert_same_observations(a, b) -> None:
    assert a.low == b.low and a.high == b.high and a.counts == b.counts
    assert a.sums.keys() == b.sums.keys() and a.kept.keys() == b.kept.keys()
    for name in a.sums:
        assert np.array_equal(a.sums[name], b.sums[name]), name
    for name in a.kept:
        assert len(a.kept[name]) == len(b.kept[name])
        assert all(np.array_equal(x, y) for x, y in zip(a.kept[name], b.kept[name])), name
    for name in a.low:
        assert a.range(name) == b.range(name), name


@pytest.mark.parametrize("method", ["minmax", "percentile", "mse"])
def test_batched_calibration_equals_one_sample_at_a_time(method):
    g = graph_of(EXAMPLES / "resnet8_fp32.onnx")
    assert batchable(g)
    samples = random_samples(g, 5)  # more than 4096 values per tensor: percentile/mse draw samples
    batched = calibrate_batched(g, samples, method, False)
    one_by_one = calibrate_per_sample(g, samples, len(samples), method, False)
    assert_same_observations(batched, one_by_one)
    assert any(v.size == 4096 for kept in batched.kept.values() for v in kept) or method == "minmax"


def movement_model(path: Path) -> Path:
    """Conv -> nearest 2x Resize -> Slice -> Flatten -> Gemm: index-table and reshape layers,
    which take one sample's shape from the graph, run on stacked samples too."""
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array([1], np.int64), "start"),
             numpy_helper.from_array(np.array([7], np.int64), "end"),
             numpy_helper.from_array(np.array([2], np.int64), "axis"),
             numpy_helper.from_array(rng.standard_normal((3 * 6 * 8, 5)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="nearest", name="up0"),
             helper.make_node("Slice", ["r", "start", "end", "axis"], ["s"], name="slice0"),
             helper.make_node("Flatten", ["s"], ["f"], name="flat0"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc0")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_movement_layers_run_on_stacked_samples(tmp_path):
    g = graph_of(movement_model(tmp_path / "m.onnx"))
    assert batchable(g)
    samples = random_samples(g, 4)
    assert_same_observations(calibrate_batched(g, samples, "minmax", False),  # raises NotBatchable if one fails
                             calibrate_per_sample(g, samples, len(samples), "minmax", False))


def softmax_over_samples_model(path: Path) -> Path:
    """Conv then Softmax over axis 0: stacking samples there would change each one's result."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 2, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node("Softmax", ["c"], ["y"], axis=0, name="softmax0")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_layer_reading_across_samples_runs_one_at_a_time(tmp_path):
    g = graph_of(softmax_over_samples_model(tmp_path / "m.onnx"))
    assert not batchable(g)
    samples = random_samples(g, 3)
    observer = calibrate(g, samples, len(samples))
    assert_same_observations(observer, calibrate_per_sample(g, samples, len(samples), "minmax", False))
    assert observer.low["y"] == observer.high["y"] == 1.0  # softmax over one sample: every value is 1


def direct_conv(x: np.ndarray, w: np.ndarray, geo: dict, group: int) -> np.ndarray:
    """The convolution as its definition: a sum over taps of shifted, strided input windows."""
    n, c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    (sh, sw), (dh, dw), pads, (oh, ow) = geo["strides"], geo["dilations"], geo["pads"], geo["out"]
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    y = np.zeros((n, oc, oh, ow), dtype=x.dtype)
    for o in range(oc):
        first = (o // (oc // group)) * icg
        for k in range(kh):
            for j in range(kw):
                window = xp[:, first:first + icg, k * dh:k * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y[:, o] += np.tensordot(window, w[o, :, k, j].astype(x.dtype), axes=([1], [0]))
    return y


class _Attrs:
    def __init__(self, **attrs):
        self.attrs = attrs


@pytest.mark.parametrize("c,oc,k,stride,group,dilation", [(6, 9, 3, 1, 3, 1), (8, 16, 3, 2, 8, 1), (8, 8, 3, 1, 8, 2),
                                                          (5, 7, 1, 1, 1, 1), (4, 6, 5, 2, 2, 1)],
                         ids=["grouped", "depthwise-x2", "depthwise-dilated", "pointwise", "5x5-strided"])
def test_im2col_convolution_equals_direct_sum(c, oc, k, stride, group, dilation):
    rng = np.random.default_rng(oc)
    geo = conv_geometry(_Attrs(strides=[stride, stride], dilations=[dilation, dilation], pads=[1, 2, 0, 1]),
                        (9, 11), (k, k))
    w = rng.integers(-127, 128, (oc, c // group, k, k)).astype(np.int64)
    x = rng.integers(-255, 256, (3, c, 9, 11)).astype(np.int64)
    assert np.array_equal(conv_nchw(x, w, geo, group), direct_conv(x, w, geo, group))  # float64 sums, exact
    big = x * 2**40  # sums past 2^53: taken in int64
    assert np.array_equal(conv_nchw(big, w, geo, group), direct_conv(big, w, geo, group))
    xf = rng.standard_normal((2, c, 9, 11)).astype(np.float32)
    got = conv_nchw(xf, w.astype(np.float64), geo, group)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, direct_conv(xf.astype(np.float64), w.astype(np.float64), geo, group), rtol=1e-12,
                               atol=1e-9)


def external_weights_model(folder: Path) -> tuple[Path, np.ndarray]:
    folder.mkdir()
    w = np.random.default_rng(1).standard_normal((16, 8, 3, 3)).astype(np.float32)  # 4.6 KiB: mapped
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv0")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 5, 5])],
                              [numpy_helper.from_array(w, "w")])
    path = folder / "m.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path),
                    save_as_external_data=True, location="m.data", size_threshold=0)
    return path, w


def test_external_weights_are_mapped_from_their_file(tmp_path):
    path, w = external_weights_model(tmp_path / "model")
    g = load_model(path, get_profile("standard"), get_board("host"), {})
    assert np.array_equal(g.const("w"), w)
    assert isinstance(g.const("w").base, np.memmap)  # mapped, not read into the protobuf and copied
    g.const("w")[0, 0, 0, 0] = 5.0  # copy-on-write: the model's file is never written
    assert np.array_equal(np.fromfile(tmp_path / "model" / "m.data", dtype=np.float32).reshape(w.shape), w)


def test_truncated_mapped_weights_are_refused(tmp_path):
    path, _ = external_weights_model(tmp_path / "model")
    data = tmp_path / "model" / "m.data"
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(ModelError, match=r"tensor 'w' external data 'm.data': offset 0 \+ length 4608 reaches past "
                                         r"the end of the file \(1000 bytes\)"):
        load_model(path, get_profile("standard"), get_board("host"), {})
