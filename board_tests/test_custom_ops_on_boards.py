"""The example plugin (examples/custom_ops/squared_relu.py: com.example::SquaredRelu) built
and run through the real CLI on host (int8 and fp32) and on cortex-m7 under QEMU (int8),
compared with the numpy references: int8 bit for bit, fp32 within 1e-5."""
import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.plugins import plugins_loaded
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float, run_quantized_model

from models import cli, reference_graph

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_ops" / "squared_relu.py"
RNG = np.random.default_rng(21)


def conv_model(path: Path) -> Path:
    """Conv 3x3 -> SquaredRelu(alpha=0.5) -> Flatten -> Gemm: the custom op between built-ins."""
    w = numpy_helper.from_array((RNG.standard_normal((4, 1, 3, 3)) * 0.4).astype(np.float32), "w")
    b = numpy_helper.from_array((RNG.standard_normal(4) * 0.1).astype(np.float32), "b")
    fc = numpy_helper.from_array((RNG.standard_normal((5, 4 * 6 * 6)) * 0.1).astype(np.float32), "fc")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("SquaredRelu", ["c"], ["s"], domain="com.example", name="sq", alpha=0.5),
             helper.make_node("Flatten", ["s"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], [w, b, fc])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
              path)
    return path


def run(tmp: Path, board: str, profile: str, model: Path, x: np.ndarray, *extra: str) -> tuple[np.ndarray, dict]:
    np.save(tmp / "x.npy", x)
    out = tmp / f"y-{board}-{'-'.join(extra)}.npz"
    r = cli("run", "--plugin", EXAMPLE, "--board", board, "--profile", profile, "--model", model,
            "--input", tmp / "x.npy", "--output", out, "--json", *extra, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return np.load(out)["y"], json.loads(r.stdout)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("custom-ops")
    conv_model(tmp / "conv_sq.onnx")
    np.save(tmp / "calib.npy", RNG.standard_normal((16, 1, 8, 8)).astype(np.float32))
    return tmp


def int8_reference(tmp: Path, board: str, profile: str, x: np.ndarray) -> np.ndarray:
    req = CompileRequest(model=tmp / "conv_sq.onnx", board=get_board(board), profile=get_profile(profile),
                         calib=str(tmp / "calib.npy"), plugins=[str(EXAMPLE)])
    with plugins_loaded([str(EXAMPLE)]):
        g = reference_graph(req)
        return np.stack([run_quantized_model(g, {"x": x[i:i + 1]})[1]["y"] for i in range(len(x))])


def test_example_plugin_int8_on_host_and_cortex_m7_bit_exact_with_the_integer_reference(work):
    x = RNG.standard_normal((6, 1, 8, 8)).astype(np.float32)
    host, report = run(work, "host", "standard", work / "conv_sq.onnx", x, "--calib", str(work / "calib.npy"))
    assert [k["layer"] for k in report["plugin_kernels"]] == []  # int8: the built-in lookup-table kernel
    assert np.array_equal(host, int8_reference(work, "host", "standard", x))
    m7, report = run(work, "cortex-m7", "lite", work / "conv_sq.onnx", x, "--calib", str(work / "calib.npy"))
    assert report["instructions"] > 0
    assert np.array_equal(m7, int8_reference(work, "cortex-m7", "lite", x))
    assert np.array_equal(m7, host)


def test_example_plugin_fp32_on_host_within_1e_5_of_its_reference(work):
    node = helper.make_node("SquaredRelu", ["x"], ["y"], domain="com.example", name="sq", alpha=0.75)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 7])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
              work / "sq.onnx")
    x = (RNG.standard_normal((5, 3, 7)) * 3).astype(np.float32)
    y, report = run(work, "host", "standard", work / "sq.onnx", x, "--precision", "fp32")
    assert report["plugin_kernels"][0]["kernel"] == "squared_relu_f32"
    with plugins_loaded([str(EXAMPLE)]):
        from cuvil_sdk.plugins import OPS
        expected = OPS["com.example::SquaredRelu"].reference(x, alpha=0.75)
    # five (3, 7) samples of a (1, 3, 7) input: outputs (N, *output shape), stacked
    np.testing.assert_allclose(y, expected[:, None], rtol=1e-5, atol=1e-5)
    x = RNG.standard_normal((3, 1, 8, 8)).astype(np.float32)
    conv_y, _ = run(work, "host", "standard", work / "conv_sq.onnx", x, "--precision", "fp32")
    req = CompileRequest(model=work / "conv_sq.onnx", board=get_board("host"), profile=get_profile("standard"),
                         precision="fp32", plugins=[str(EXAMPLE)])
    with plugins_loaded([str(EXAMPLE)]):
        g = reference_graph(req)
        expected = np.stack([run_float(g, {"x": x[i:i + 1]})["y"] for i in range(len(x))])
    np.testing.assert_allclose(conv_y, expected, rtol=1e-5, atol=1e-5)


NEG_PLUGIN = '''
import numpy as np
from cuvil_sdk.plugins import I, In, Int8, Kernel, Out, register_op

def constants(ctx):
    return {"zx": ctx.input_qparams[0][1], "zy": ctx.output_qparams[0][1]}

def integer_reference(ctx, q, x):
    return np.clip(q["zy"] - (x.astype(np.int32) - q["zx"]), -128, 127).astype(np.int8)

@register_op("com.test", "Neg", inputs=["float32"], outputs=["float32"], int8=Int8(constants, integer_reference),
             kernels=[Kernel("portable", "fp32", "neg_f32", "neg_f32.h", In("in", "float"), Out("out", "float"),
                             *I("count")),
                      Kernel("portable", "int8", "neg_s8", "neg_s8.h", In("in", "int8_t"), Out("out", "int8_t"),
                             *I("count"), *I("zx zy", "int32_t"))])
def neg(x):
    return -x
'''
NEG_F32 = "static void neg_f32(const float *in, float *out, int count)\n{ for (int i = 0; i < count; i++) out[i] = -in[i]; }\n"
NEG_S8 = """static void neg_s8(const int8_t *in, int8_t *out, int count, int32_t zx, int32_t zy)
{
    for (int i = 0; i < count; i++) {
        const int32_t v = zy - ((int32_t)in[i] - zx);
        out[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
    }
}
"""


def test_plugin_with_its_own_int8_rule_is_bit_exact_on_host(tmp_path):
    (tmp_path / "neg.py").write_text(NEG_PLUGIN)
    (tmp_path / "neg_f32.h").write_text(NEG_F32)
    (tmp_path / "neg_s8.h").write_text(NEG_S8)
    node = helper.make_node("Neg", ["x"], ["y"], domain="com.test", name="n0")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)]),
              tmp_path / "neg.onnx")
    x = (RNG.standard_normal((6, 32)) * 2).astype(np.float32)
    np.save(tmp_path / "calib.npy", x)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", "--plugin", "neg.py", "--board", "host", "--profile", "standard", "--model", "neg.onnx",
            "--calib", "calib.npy", "--input", "x.npy", "--output", "y.npz", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [k["kernel"] for k in json.loads(r.stdout)["plugin_kernels"]] == ["neg_s8"]
    req = CompileRequest(model=tmp_path / "neg.onnx", board=get_board("host"), profile=get_profile("standard"),
                         calib=str(tmp_path / "calib.npy"), plugins=[str(tmp_path / "neg.py")])
    with plugins_loaded([str(tmp_path / "neg.py")]):
        ref_g = reference_graph(req)
        expected = np.stack([run_quantized_model(ref_g, {"x": x[i:i + 1]})[1]["y"] for i in range(len(x))])
    assert np.array_equal(np.load(tmp_path / "y.npz")["y"], expected)


def test_validate_names_the_reference_it_compared_with_plugin_numpy_or_onnxruntime(work):
    """A plugin op's model is compared with the SDK's numpy reference running the plugin's
    function (ONNX Runtime has no such op): the label and the JSON say so; a model of
    built-in ops is compared with ONNX Runtime, and says that."""
    x = RNG.standard_normal((4, 1, 8, 8)).astype(np.float32)
    np.savez(work / "val.npz", x=x)
    r = cli("validate", "--plugin", EXAMPLE, "--board", "host", "--profile", "standard", "--precision", "fp32",
            "--model", work / "conv_sq.onnx", "--data", work / "val.npz", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["reference"] == {"kind": "numpy", "plugin_ops": [
        {"op": "com.example::SquaredRelu", "plugin": str(EXAMPLE)}]}
    assert report["outputs"]["y"]["cosine"] > 0.9999
    assert (f"validated 4 samples on host (fp32) against the SDK's numpy float reference, where "
            f"com.example::SquaredRelu runs the numpy function of plugin '{EXAMPLE}'") in r.stderr
    assert "ONNX Runtime" not in r.stderr
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 8, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), work / "relu.onnx")
    r = cli("validate", "--board", "host", "--profile", "standard", "--precision", "fp32",
            "--model", work / "relu.onnx", "--data", work / "val.npz", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reference"] == {"kind": "onnxruntime", "plugin_ops": []}
    assert "validated 4 samples on host (fp32) against ONNX Runtime (float model)" in r.stderr


SQUARE_PLUS = '''
import numpy as np
from cuvil_sdk.plugins import Attr, I, In, Kernel, Out, register_op

@register_op("com.acme", "SquarePlus", inputs=["float32"], outputs=["float32"], elementwise=True,
             attrs={"beta": Attr("float", default=1.0)},
             kernels=[Kernel("portable", "fp32", "square_plus_f32", "kernels/SOURCE", In("in", "float"),
                             Out("out", "float"), *I("count"))])
def square_plus(x, beta):
    return x * x + np.float32(beta)
'''
# line 4 lacks its ';' (gcc: "expected ';' before '}' token", at line 4)
BROKEN_KERNEL = """static void square_plus_f32(const float *in, float *out, int count)
{
    for (int i = 0; i < count; i++)
        out[i] = in[i] * in[i] + 1.0f
}
"""
# the same kernel as a template: its line 8 is line 4 of the rendered copy
BROKEN_TEMPLATE = """{# SquarePlus specialised on beta #}
{% if attrs.beta == "0.0f" %}
#define SQUARE_PLUS_NO_BETA 1
{% endif %}
static void {{ kernel }}(const float *in, float *out, int count)
{
    for (int i = 0; i < count; i++)
        out[i] = in[i] * in[i] + {{ attrs.beta }}
}
"""


@pytest.mark.parametrize("source,text,line", [("square_plus_f32.h", BROKEN_KERNEL, 4),
                                              ("square_plus_f32.h.j2", BROKEN_TEMPLATE, 8)])
def test_c_error_in_a_plugin_kernel_is_reported_at_the_plugin_file_and_line(tmp_path, source, text, line):
    (tmp_path / "ops" / "kernels").mkdir(parents=True)
    (tmp_path / "ops" / "sp.py").write_text(SQUARE_PLUS.replace("SOURCE", source))
    (tmp_path / "ops" / "kernels" / source).write_text(text)
    node = helper.make_node("SquarePlus", ["x"], ["y"], domain="com.acme", name="sp", beta=0.5)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)]),
              tmp_path / "sp.onnx")
    r = cli("build", "--plugin", "ops/sp.py", "--board", "host", "--profile", "standard", "--precision", "fp32",
            "--model", "sp.onnx", "-o", "out", cwd=tmp_path)
    assert r.returncode == 5, r.stderr
    errors = [l for l in r.stderr.splitlines() if "error" in l]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    assert re.fullmatch(rf"cuvil-sdk: error: the host build failed: ops/kernels/{re.escape(source)}:{line}:(\d+:)? "
                        r"error: expected ';' before '}' token", errors[0]), errors[0]
    assert "src/kernels" not in r.stderr
