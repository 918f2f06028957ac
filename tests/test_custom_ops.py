"""Custom ops from plugins, on the host without a toolchain: registration errors (one line
naming the plugin and the op), `cuvil-sdk ops`, the refusal of a model whose custom op
has no plugin, signature checks against the model's node, attribute-specialised kernels
and replaced built-in kernels in the generated project. Builds and runs on the boards are
in board_tests/test_custom_ops.py."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "custom_ops" / "squared_relu.py"

KERNEL = """static void {name}(const float *in, float *out, int count, float alpha)
{{
    for (int i = 0; i < count; i++) out[i] = alpha * in[i];
}}
"""


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def last_line(r: subprocess.CompletedProcess) -> str:
    return (r.stderr.strip().splitlines() or [""])[-1]


def model(path: Path, op: str = "Scale", domain: str = "com.test", inputs=("x",), shape=(1, 16), **attrs) -> Path:
    node = helper.make_node(op, list(inputs), ["y"], domain=domain, name="n0", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(i, TensorProto.FLOAT, list(shape))
                                        for i in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    onnx.save(m, path)
    return path


def plugin(folder: Path, name: str = "scale.py", body: str | None = None, kernel: str | None = None,
           kernel_file: str = "scale_f32.h") -> Path:
    """A plugin file for op com.test::Scale (y = alpha * x) and its kernel, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / kernel_file).write_text(kernel if kernel is not None else KERNEL.format(name="scale_f32"))
    body = body if body is not None else """
        @register_op("com.test", "Scale", inputs=["float32"], outputs=["float32"],
                     attrs={"alpha": Attr("float", default=1.0)}, elementwise=True,
                     kernels=[Kernel("portable", "fp32", "scale_f32", "scale_f32.h",
                                     In("in", "float"), Out("out", "float"), *I("count"), *F("alpha"))])
        def scale(x, alpha):
            return np.float32(alpha) * x
    """
    path = folder / name
    path.write_text("import numpy as np\nfrom cuvil_sdk.plugins import Attr, F, I, In, Int8, Kernel, Out, W, "
                    "register_op, replace_kernel\n" + textwrap.dedent(body))
    return path


def compile_args(m: Path, out: Path, *plugins: Path, precision: str = "fp32") -> list:
    args = ["compile", m, "--board", "host", "--profile", "standard", "--precision", precision, "-o", out]
    if precision == "int8":
        args += ["--calib", "random"]
    for p in plugins:
        args += ["--plugin", p]
    return args


def test_model_with_unknown_custom_op_is_refused_with_exit_3_pointing_to_plugins(tmp_path):
    m = model(tmp_path / "m.onnx", "SquarePlus", "com.acme", alpha=0.5)
    r = cli(*compile_args(m, tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 3
    assert last_line(r) == ("cuvil-sdk: error: unsupported op (1): SquarePlus (domain com.acme, first node 'n0'); "
                            "`cuvil-sdk ops` lists the supported ops; --plugin FILE.py adds an op (see "
                            "docs/custom_ops.md)")


def test_ops_lists_builtins_and_plugin_ops_with_int8_rule_and_kernel_sets(tmp_path):
    r = cli("ops", "--json", "--plugin", EXAMPLE, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = {(o["domain"], o["op"]): o for o in json.loads(r.stdout)["ops"]}
    assert rows["ai.onnx", "Conv"]["source"] == "built-in" and "cortex_m_dsp" in rows["ai.onnx", "Conv"]["kernel_sets"]
    sq = rows["com.example", "SquaredRelu"]
    assert sq["int8"].startswith("lookup table") and sq["kernel_sets"] == ["portable"]
    assert sq["attributes"] == {"alpha": "float"} and sq["source"].endswith("squared_relu.py")
    plain = cli("ops", cwd=tmp_path)
    assert plain.returncode == 0 and "Conv" in plain.stdout and "SquaredRelu" not in plain.stdout


def test_plugin_kernel_is_generated_with_the_node_attribute_as_its_argument(tmp_path):
    m = model(tmp_path / "m.onnx", alpha=0.25)
    r = cli(*compile_args(m, tmp_path / "out", plugin(tmp_path / "p")), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    src = tmp_path / "out" / "src"
    assert (src / "kernels" / "scale_f32.h").read_text() == KERNEL.format(name="scale_f32")
    assert "0.25f" in (src / "m.c").read_text()  # alpha = 0.25, an exact C literal
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["plugin_kernels"][0]["kernel"] == "scale_f32"
    assert manifest["layers"][0]["op"] == "com.test::Scale" and manifest["layers"][0]["kernel_plugin"]


def test_unary_elementwise_op_gets_a_lookup_table_in_int8(tmp_path):
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.compiler import frontend_and_passes, quantize
    from cuvil_sdk.request import CompileRequest
    from cuvil_sdk.plugins import plugins_loaded
    from cuvil_sdk.profiles import get_profile
    from cuvil_sdk.kernels.requant import dequantize, quantize_float
    m = model(tmp_path / "m.onnx", alpha=-0.5)
    with plugins_loaded([str(plugin(tmp_path / "p"))]):
        req = CompileRequest(model=m, board=get_board("host"), profile=get_profile("standard"), calib="random")
        g = frontend_and_passes(req)
        quantize(g, req)
        node = g.nodes[0]
        (sx, zx), (sy, zy) = g.tensors[node.inputs[0]].q.scalar(), g.tensors[node.outputs[0]].q.scalar()
        codes = np.arange(-128, 128).astype(np.int8)
        expected = quantize_float((np.float32(-0.5) * dequantize(codes, sx, zx)).astype(np.float32), sy, zy)
        assert np.array_equal(node.q["table"], expected)
        r = cli(*compile_args(m, tmp_path / "out", tmp_path / "p" / "scale.py", precision="int8"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "src" / "kernels" / "lut_s8.h").exists()


def test_attributes_rendered_into_a_template_make_one_kernel_per_value(tmp_path):
    body = """
        @register_op("com.test", "Scale", inputs=["float32"], outputs=["float32"],
                     attrs={"alpha": Attr("float", default=1.0)},
                     kernels=[Kernel("portable", "fp32", "scale_t", "scale.h.j2",
                                     In("in", "float"), Out("out", "float"), *I("count"))])
        def scale(x, alpha):
            return np.float32(alpha) * x
    """
    template = ("static void {{ kernel }}(const float *in, float *out, int count)\n"
                "{ for (int i = 0; i < count; i++) out[i] = {{ attrs.alpha }} * in[i]; }\n")
    p = plugin(tmp_path / "p", body=body, kernel=template, kernel_file="scale.h.j2")
    nodes = [helper.make_node("Scale", ["x"], ["h"], domain="com.test", name="a", alpha=2.0),
             helper.make_node("Scale", ["h"], ["y"], domain="com.test", name="b", alpha=3.0)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)]),
              tmp_path / "m.onnx")
    r = cli(*compile_args(tmp_path / "m.onnx", tmp_path / "out", p), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    kernels = sorted((tmp_path / "out" / "src" / "kernels").glob("scale_t_*.h"))
    assert len(kernels) == 2
    texts = " ".join(k.read_text() for k in kernels)
    assert "2.0f * in[i]" in texts
    assert "3.0f * in[i]" in texts


def test_replaced_builtin_kernel_is_used_and_reported(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "my_lut.h").write_text("/* hand-tuned */\nstatic void lut_s8(const int8_t *in, int8_t *out, int count, "
                                     "const int8_t *table)\n{ for (int i = 0; i < count; i++) "
                                     "out[i] = table[(int32_t)in[i] + 128]; }\n")
    (folder / "lut.py").write_text("from cuvil_sdk.plugins import replace_kernel\n"
                                   "replace_kernel('portable', 'lut_s8', 'my_lut.h')\n")
    node = helper.make_node("Sigmoid", ["x"], ["y"], name="s")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    r = cli(*compile_args(tmp_path / "m.onnx", tmp_path / "out", folder / "lut.py", precision="int8"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "src" / "kernels" / "lut_s8.h").read_text().startswith("/* hand-tuned */")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["plugin_kernels"] == [{"layer": "s", "op": "Sigmoid", "kernel_set": "portable", "kernel": "lut_s8",
                                           "plugin": str(folder / "lut.py")}]
    ops = cli("ops", "--plugin", folder / "lut.py", cwd=tmp_path)
    assert f"kernel portable/lut_s8 replaced by plugin '{folder / 'lut.py'}'" in ops.stdout


def test_kernel_of_another_set_is_its_rule_from_load_and_the_board_runs_it(tmp_path):
    """A plugin's kernel for a set other than portable is a rule of that set once the plugin
    loads (no lowering needed); a board that lists the set (host: avx2) runs it."""
    from cuvil_sdk.kernels.kernel_sets import PLUGIN_RULES
    from cuvil_sdk.plugins import plugins_loaded
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "scale_avx2.h").write_text(KERNEL.format(name="scale_f32_avx2"))
    path = plugin(folder, body="""
        @register_op("com.test", "Scale", inputs=["float32"], outputs=["float32"],
                     attrs={"alpha": Attr("float", default=1.0)}, elementwise=True,
                     kernels=[Kernel("portable", "fp32", "scale_f32", "scale_f32.h",
                                     In("in", "float"), Out("out", "float"), *I("count"), *F("alpha")),
                              Kernel("avx2", "fp32", "scale_f32_avx2", "scale_avx2.h",
                                     In("in", "float"), Out("out", "float"), *I("count"), *F("alpha"))])
        def scale(x, alpha):
            return np.float32(alpha) * x
    """)
    with plugins_loaded([str(path)]):
        assert ("avx2", "scale_f32") in PLUGIN_RULES
    assert ("avx2", "scale_f32") not in PLUGIN_RULES  # unloading forgets it
    m = model(tmp_path / "m.onnx", alpha=2.0)
    r = cli(*compile_args(m, tmp_path / "out", path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [(k["kernel_set"], k["kernel"]) for k in manifest["plugin_kernels"]] == [("avx2", "scale_f32_avx2")]
    assert (tmp_path / "out" / "src" / "kernels" / "scale_f32_avx2.h").is_file()


def scale_op(domain: str = "com.test", op: str = "Scale", kernel_set: str = "portable", name: str = "scale_f32",
             alpha_param: str = "F", decorate: bool = True) -> str:
    """A plugin body registering a variant of com.test::Scale (for the broken cases)."""
    register = (f'register_op("{domain}", "{op}", inputs=["float32"], outputs=["float32"], attrs={{"alpha": "float"}}, '
                f'kernels=[Kernel("{kernel_set}", "fp32", "{name}", "scale_f32.h", In("in", "float"), '
                f'Out("out", "float"), *I("count"), *{alpha_param}("alpha"))])')
    return f"@{register}\ndef scale(x, alpha):\n    return alpha * x\n" if decorate else register + "\n"


BROKEN = {
    "import": ("import no_such_module_here\n", "fails to import (line 3): ModuleNotFoundError: No module named"),
    "reference": (scale_op(decorate=False), "op com.test::Scale: no float reference"),
    "portable": (scale_op(kernel_set="avx2"), "op com.test::Scale: no portable fp32 kernel"),
    "prototype": (scale_op(alpha_param="I"), "op com.test::Scale: kernel scale_f32: the prototype in 'scale_f32.h' "
                  "does not match its declaration: parameter 4 (alpha): C type float, declared int"),
    "name": (scale_op(name="scale_x"), "op com.test::Scale: kernel scale_x: 'scale_f32.h' defines no "
             "`static void scale_x(...)`"),
    "builtin": (scale_op(domain="", op="Relu"), "op Relu: is a built-in op"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_plugin_is_one_line_naming_plugin_and_op_exit_2(tmp_path, case):
    body, expected = BROKEN[case]
    p = plugin(tmp_path / "p", body=body)
    r = cli(*compile_args(model(tmp_path / "m.onnx"), tmp_path / "out", p), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert last_line(r).startswith(f"cuvil-sdk: error: plugin '{p}'")
    assert expected in last_line(r)


def test_duplicate_registration_names_both_plugins(tmp_path):
    a, b = plugin(tmp_path / "a"), plugin(tmp_path / "b")
    r = cli(*compile_args(model(tmp_path / "m.onnx"), tmp_path / "out", a, b), cwd=tmp_path)
    assert r.returncode == 2
    assert last_line(r) == (f"cuvil-sdk: error: plugin '{b}', op com.test::Scale: registered twice "
                            f"(first by plugin '{a}')")


def test_missing_plugin_file_and_module_path(tmp_path):
    r = cli(*compile_args(model(tmp_path / "m.onnx"), tmp_path / "out", tmp_path / "nope.py"), cwd=tmp_path)
    assert r.returncode == 2 and last_line(r) == f"cuvil-sdk: error: plugin '{tmp_path / 'nope.py'}': no such file"
    p = plugin(tmp_path / "pkg", name="scale_mod.py")
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, compile_args(
        model(tmp_path / "m.onnx"), tmp_path / "out"))] + ["--plugin", "scale_mod"], capture_output=True, text=True,
        cwd=tmp_path, timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(p.parent)})
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("attrs,inputs,expected", [
    ({"alpha": 2}, ("x",), "attribute 'alpha' is int 2; the plugin declares float"),
    ({"beta": 1.0}, ("x",), "attribute 'beta' is not in the plugin's signature (alpha)"),
    ({}, ("x", "z"), "2 inputs and 1 outputs; the plugin declares 1 and 1"),
])
def test_node_that_does_not_match_the_signature_is_refused_exit_3(tmp_path, attrs, inputs, expected):
    p = plugin(tmp_path / "p")
    r = cli(*compile_args(model(tmp_path / "m.onnx", inputs=inputs, **attrs), tmp_path / "out", p), cwd=tmp_path)
    assert r.returncode == 3
    assert last_line(r) == f"cuvil-sdk: error: node 'n0' (com.test::Scale, plugin '{p}'): {expected}"


def test_node_type_that_does_not_match_the_signature_is_refused(tmp_path):
    p = plugin(tmp_path / "p")
    node = helper.make_node("Scale", ["x"], ["y"], domain="com.test", name="n0")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)]),
              tmp_path / "m.onnx")
    r = cli(*compile_args(tmp_path / "m.onnx", tmp_path / "out", p), cwd=tmp_path)
    assert r.returncode == 3
    assert last_line(r).endswith(f"(com.test::Scale, plugin '{p}'): output 0 'y' is INT32 in the model; "
                                 f"the plugin declares float32")


def test_plugin_on_every_model_command_and_the_example_prototype_matches(tmp_path):
    for command in ("compile", "build", "run", "validate"):
        assert "--plugin" in cli(command, "--help", cwd=tmp_path).stdout
    from cuvil_sdk.codegen.prototypes import mismatches, parse_prototype
    from cuvil_sdk.plugins import OPS, plugins_loaded
    with plugins_loaded([str(EXAMPLE)]):
        k = OPS["com.example::SquaredRelu"].kernel("portable", "fp32")
        assert mismatches(k.decl(), parse_prototype(k.path.read_text(), k.name)) == []
    assert "com.example::SquaredRelu" not in OPS


def onnx_domain_model(path: Path, op: str = "Hardmax") -> Path:
    """A one-node model of an op of ONNX's own domain (opset 17)."""
    node = helper.make_node(op, ["x"], ["y"], name="hm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_op_the_sdk_lacks_points_to_plugins_and_the_ops_list_exit_3(tmp_path):
    m = onnx_domain_model(tmp_path / "hm.onnx")
    r = cli("build", "--model", m, "--board", "host", "--profile", "standard", "--precision", "fp32",
            "-o", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().splitlines() == [
        "cuvil-sdk: error: unsupported op (1): Hardmax (domain ai.onnx, first node 'hm'); `cuvil-sdk ops` lists the "
        "supported ops; --plugin FILE.py adds an op (see docs/custom_ops.md)"]
    assert not (tmp_path / "out").exists()


def test_onnx_op_the_sdk_lacks_compiles_with_a_plugin_as_the_message_says(tmp_path):
    body = """
        @register_op("", "Hardmax", inputs=["float32"], outputs=["float32"], attrs={"axis": Attr("int", default=-1)},
                     kernels=[Kernel("portable", "fp32", "hardmax_f32", "hardmax_f32.h",
                                     In("in", "float"), Out("out", "float"), *I("count"))])
        def hardmax(x, axis):
            return (x == x.max(axis=axis, keepdims=True)).astype(np.float32)
    """
    kernel = ("static void hardmax_f32(const float *in, float *out, int count)\n{\n    int best = 0;\n"
              "    for (int i = 0; i < count; i++) { out[i] = 0.0f; if (in[i] > in[best]) best = i; }\n"
              "    out[best] = 1.0f;\n}\n")
    p = plugin(tmp_path / "p", name="hardmax.py", body=body, kernel=kernel, kernel_file="hardmax_f32.h")
    r = cli(*compile_args(onnx_domain_model(tmp_path / "hm.onnx"), tmp_path / "out", p), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "src" / "kernels" / "hardmax_f32.h").read_text() == kernel


def test_lines_of_a_rendered_template_map_back_to_the_template_lines():
    """A compiler error in a rendered `.h.j2` copy is reported at the template's line: block
    lines dropped, values substituted and loop bodies repeated."""
    import jinja2
    from cuvil_sdk.codegen.plugin_lines import template_line
    template = ("{# scale, unrolled #}\n"                                       # 1
                "static void {{ kernel }}(const float *in, float *out)\n"       # 2
                "{\n"                                                           # 3
                "{% for i in range(3) %}\n"                                     # 4
                "    out[{{ i }}] = {{ alpha }} * in[{{ i }}];\n"              # 5
                "{% endfor %}\n"                                                # 6
                "    out[3] = in[3]\n"                                          # 7
                "}\n")                                                          # 8
    rendered = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(template).render(
        kernel="scale_1a2b", alpha="0.5f")
    assert rendered.splitlines()[5] == "    out[3] = in[3]"
    lines = template.splitlines()
    assert [template_line(lines, rendered.splitlines(), n) for n in range(1, 8)] == [
        (2, False), (3, True), (5, False), (5, False), (5, False), (7, True), (8, True)]
