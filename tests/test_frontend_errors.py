"""Hostile and wrong input to `cuvil-sdk compile`: one clear error line, the right exit
code, never a traceback, and nothing written anywhere (no output folder, no `.partial`).

Every case builds its model with onnx.helper in tmp_path and runs the CLI in a separate
process (forked from a warm server, see FORK_SERVER; a few cases through a fresh
`python -m cuvil_sdk.cli` and the installed script) with cwd=tmp_path and TMPDIR and
HOME inside tmp_path, then compares the whole tree before and after.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ERROR_PREFIX = "cuvil-sdk: error: "

USAGE, REJECTED = 2, 3


# --- model builders -------------------------------------------------------------------

def conv_relu_model(in_shape=(1, 1, 8, 8), out_channels=4, kernel=3, pads=1, weight=None,
                    opset=13) -> onnx.ModelProto:
    """x -> Conv (conv0, weight 'w', bias 'b') -> c -> Relu (relu0) -> y."""
    rng = np.random.default_rng(0)
    cin = in_shape[1] if isinstance(in_shape[1], int) else 1
    if weight is None:
        weight = rng.standard_normal((out_channels, cin, kernel, kernel)).astype(np.float32)
    bias = rng.standard_normal(weight.shape[0]).astype(np.float32)
    k = weight.shape[2]
    spatial = [d + 2 * pads - k + 1 if isinstance(d, int) else f"{d}_out" for d in in_shape[2:]]
    out_shape = [in_shape[0], weight.shape[0], *spatial]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0", pads=[pads] * 4),
             helper.make_node("Relu", ["c"], ["y"], name="relu0")]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def relu_chain_model(nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    """A graph of the given nodes on input x (1x4) and output y; no checker run."""
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


# --- running the CLI and checking that nothing was written -----------------------------

def tree(root: Path) -> dict[str, tuple]:
    """Every path under root (not following symlinks), with its kind, size and mtime."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            snap[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return snap


# Starting Python and importing numpy/onnx costs most of a second; dozens of cases would
# spend the whole test budget on it. So one server process imports the CLI once and forks
# a child per case: the child chdirs, takes the case's environment and fresh stdout/stderr
# files, and runs `cuvil_sdk.cli.main(argv)` exactly as the `cuvil-sdk` script does. A
# few cases also run through `python -m cuvil_sdk.cli` and the installed script.
FORK_SERVER = r"""
import json, os, sys, tempfile, traceback
import cuvil_sdk.cli, cuvil_sdk.commands
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            tempfile.tempdir = None
            for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
                f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(f, fd)
                os.close(f)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            sys.argv = ["cuvil-sdk"] + req["argv"]
            rc = cuvil_sdk.cli.main(req["argv"])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(rc)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class CliServer:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
        out, err = self.scratch / "stdout.txt", self.scratch / "stderr.txt"
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, "the CLI fork server died"
        return subprocess.CompletedProcess(argv, json.loads(reply)["rc"], out.read_text(), err.read_text())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory):
    server = CliServer(tmp_path_factory.mktemp("cli-server"))
    yield server
    server.close()


# How to start the CLI: "fork" (the server above), "module" (python -m cuvil_sdk.cli) or
# "script" (the installed cuvil-sdk entry point). Tests set it through the `runner` fixture.
RUNNER = {"how": "fork", "server": None}


@pytest.fixture(autouse=True)
def runner(cli_server):
    RUNNER.update(how="fork", server=cli_server)
    yield RUNNER
    RUNNER.update(how="fork")


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CUVIL_DEBUG"}
    env["TMPDIR"] = str(tmp_path / "tmpdir")
    env["HOME"] = str(tmp_path / "home")
    how = RUNNER["how"]
    if how == "fork":
        return RUNNER["server"].run(list(args), tmp_path, env)
    if how == "module":
        cmd = [sys.executable, "-m", "cuvil_sdk.cli"]
    else:
        script = shutil.which("cuvil-sdk") or str(Path(sys.executable).parent / "cuvil-sdk")
        cmd = [script]
    return subprocess.run(cmd + list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def scratch_dirs(tmp_path: Path) -> None:
    (tmp_path / "tmpdir").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)


def compile_fails(tmp_path: Path, model: Path | str, *options: str, code: int = REJECTED,
                  board: str = "host", profile: str = "standard", precision: str | None = "fp32") -> str:
    """Run `compile`, expect failure with `code`; return the error message (after the prefix)."""
    out = tmp_path / "out"
    args = ["compile", str(model), "--board", board, "--profile", profile, "-o", str(out)]
    if precision:
        args += ["--precision", precision]
    scratch_dirs(tmp_path)
    before = tree(tmp_path)
    result = run_cli(tmp_path, *args, *options)
    after = tree(tmp_path)
    both = result.stdout + result.stderr
    assert "Traceback" not in both, both
    assert "internal error" not in both, both
    assert result.returncode == code, f"exit {result.returncode}, expected {code}: {both}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got: {lines}"
    assert lines[0].startswith(ERROR_PREFIX), lines[0]
    message = lines[0][len(ERROR_PREFIX):].strip()
    assert message
    assert result.stdout == ""
    assert not out.exists(), "a failed compile left its output folder"
    assert not (tmp_path / "out.partial").exists(), "a failed compile left a .partial folder"
    assert before == after, f"files changed: {sorted(set(before) ^ set(after))} " \
                            f"{sorted(k for k in before if k in after and before[k] != after[k])}"
    return message


def compile_ok(tmp_path: Path, model: Path, *options: str, board="host", profile="standard") -> Path:
    out = tmp_path / "out"
    scratch_dirs(tmp_path)
    result = run_cli(tmp_path, "compile", str(model), "--board", board, "--profile", profile,
                     "-o", str(out), *options)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "manifest.json").is_file()
    assert not (tmp_path / "out.partial").exists()
    return out


# --- the control case: the helper model compiles ------------------------------------------

def test_valid_model_compiles(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    compile_ok(tmp_path, model, "--precision", "fp32")


# --- files that are not ONNX -------------------------------------------------------------

def _truncated(p: Path) -> None:
    data = conv_relu_model().SerializeToString()
    p.write_bytes(data[: len(data) // 2])


def _text(p: Path) -> None:
    p.write_text("this is not an ONNX model\n" * 10)


def _binary(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 8)


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _zip(p: Path) -> None:
    np.savez(p.with_suffix(".npz"), a=np.zeros(3))
    p.with_suffix(".npz").rename(p)


def _no_nodes(p: Path) -> None:
    graph = helper.make_graph([], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])])
    p.write_bytes(helper.make_model(graph).SerializeToString())


@pytest.mark.parametrize("make", [_truncated, _text, _binary, _empty, _zip, _no_nodes],
                         ids=["truncated", "text", "binary", "empty", "zip", "no-nodes"])
def test_not_an_onnx_file(tmp_path, make):
    path = tmp_path / "bad.onnx"
    make(path)
    message = compile_fails(tmp_path, path)
    assert "bad.onnx" in message


def test_missing_model_file(tmp_path):
    message = compile_fails(tmp_path, tmp_path / "nowhere.onnx")
    assert "nowhere.onnx" in message


def test_model_path_is_a_folder(tmp_path):
    (tmp_path / "dir.onnx").mkdir()
    message = compile_fails(tmp_path, tmp_path / "dir.onnx")
    assert "dir.onnx" in message


# --- graphs that are not DAGs ----------------------------------------------------------------

def test_cycle(tmp_path):
    # x -> add0(x, d) -> e -> relu1 -> d (feeds add0 again) ; y = relu2(e)
    model = relu_chain_model([helper.make_node("Add", ["x", "d"], ["e"], name="add0"),
                              helper.make_node("Relu", ["e"], ["d"], name="relu1"),
                              helper.make_node("Relu", ["e"], ["y"], name="relu2")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "cycle" in message and "add0" in message and "relu1" in message, message
    assert "'d'" in message and "'e'" in message, message


def test_self_loop(tmp_path):
    model = relu_chain_model([helper.make_node("Add", ["x", "e"], ["e"], name="add0"),
                              helper.make_node("Relu", ["e"], ["y"], name="relu0")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "cycle" in message and "add0" in message and "'e'" in message, message


def test_nodes_out_of_order(tmp_path):
    # acyclic but not sorted: ONNX requires sorted nodes; the checker's refusal must name the node
    model = relu_chain_model([helper.make_node("Relu", ["e"], ["y"], name="relu1"),
                              helper.make_node("Relu", ["x"], ["e"], name="relu0")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "relu1" in message and "'e'" in message, message


def test_input_no_node_produces(tmp_path):
    model = relu_chain_model([helper.make_node("Add", ["x", "ghost"], ["e"], name="add0"),
                              helper.make_node("Relu", ["e"], ["y"], name="relu0")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "ghost" in message and "add0" in message, message


def test_output_no_node_produces(tmp_path):
    model = relu_chain_model([helper.make_node("Relu", ["x"], ["z"], name="relu0")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "'y'" in message, message


# --- ops we do not support --------------------------------------------------------------------

@pytest.mark.parametrize("op,domain", [("Cos", ""), ("LSTM_like", "com.example")])
def test_unsupported_op(tmp_path, op, domain):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu0"),
             helper.make_node(op, ["a"], ["y"], name="weird0", domain=domain)]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert f"{op} (domain {domain or 'ai.onnx'}, first node 'weird0')" in message, message
    # any op the SDK lacks comes through a plugin: say how to give one, and where the list of the
    # supported ops is
    assert "--plugin FILE.py adds an op (see docs/custom_ops.md)" in message, message
    assert "`cuvil-sdk ops` lists the supported ops" in message, message


def _if_model() -> onnx.ModelProto:
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["f"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum0", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt0"),
             helper.make_node("If", ["cond"], ["y"], name="branch0", then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _loop_model() -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_id"),
         helper.make_node("Relu", ["v_in"], ["v_out"], name="body_relu")], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, 4])])
    # the trip count an input: a constant one would be unrolled (tests/test_graph_import.py)
    nodes = [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop0", body=body)]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
                                             helper.make_tensor_value_info("trip", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("make,node", [(_if_model, "branch0"), (_loop_model, "loop0")], ids=["If", "Loop"])
@pytest.mark.parametrize("profile,precision", [("lite", None), ("standard", "fp32")])
def test_control_flow_refused(tmp_path, make, node, profile, precision):
    model = make()
    onnx.checker.check_model(model, full_check=True)  # a valid model: only our rule refuses it
    extra = ["--calib", "random"] if precision is None else []
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"), *extra, profile=profile,
                            precision=precision)
    assert node in message and "control flow" in message, message
    if profile == "lite":
        assert "lite" in message, message


# --- weights that are not finite ------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_weights(tmp_path, bad):
    w = np.ones((4, 1, 3, 3), np.float32)
    w[2, 0, 1, 1] = bad
    model = save(conv_relu_model(weight=w), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model)
    assert "'w'" in message and ("NaN" in message or "Inf" in message), message


def test_non_finite_constant_node(tmp_path):
    value = np.array([[1.0, np.nan, 0.0, 2.0]], np.float32)
    model = relu_chain_model([helper.make_node("Constant", [], ["k"], name="const0",
                                               value=numpy_helper.from_array(value, "kv")),
                              helper.make_node("Add", ["x", "k"], ["y"], name="add0")])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "'k'" in message or "const0" in message, message
    assert "NaN" in message, message


def masked_softmax_model() -> onnx.ModelProto:
    """Softmax(Where(mask, x, -inf)): an attention mask, the legitimate use of an infinite constant."""
    mask = numpy_helper.from_array(np.array([[True, False, True, False]]), "mask_value")
    ninf = numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf_value")
    return relu_chain_model([helper.make_node("Constant", [], ["mask"], name="mask0", value=mask),
                             helper.make_node("Constant", [], ["ninf"], name="ninf0", value=ninf),
                             helper.make_node("Where", ["mask", "x", "ninf"], ["s"], name="where0"),
                             helper.make_node("Softmax", ["s"], ["y"], name="softmax0", axis=-1)])


def test_infinite_mask_constant_compiles(tmp_path):
    from cuvil_sdk.boards import get_board
    from cuvil_sdk.frontend import load_model
    from cuvil_sdk.profiles import get_profile
    from cuvil_sdk.reference import run_float
    import onnxruntime as ort
    model = save(masked_softmax_model(), tmp_path / "m.onnx")
    x = np.array([[0.5, 2.0, -1.0, 3.0]], np.float32)
    g = load_model(model, get_profile("standard"), get_board("host"), {})
    (expected,) = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(run_float(g, {"x": x})["y"], expected, rtol=1e-6)
    result = run_cli(tmp_path, "compile", str(model), "--board", "host", "--profile", "standard",
                     "--precision", "fp32", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    blob = next((tmp_path / "out").rglob("*.weights"))  # the constants as binary data, -inf kept
    assert np.isneginf(np.frombuffer(blob.read_bytes(), dtype="<f4")).any()
    weights = next((tmp_path / "out").rglob("*_weights.c"))  # links the blob in (.incbin from src/)
    cc = subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", f"-Wa,-I{weights.parent}", "-c", str(weights),
                         "-o", str(tmp_path / "w.o")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr


# --- too large for the board --------------------------------------------------------------------

def test_weight_larger_than_flash(tmp_path):
    # cortex-m7-small has 64 KiB of flash; this weight is 70400 bytes even in int8.
    w = np.random.default_rng(1).standard_normal((1100, 1, 8, 8)).astype(np.float32)
    model = save(conv_relu_model(weight=w, pads=0), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--calib", "random", board="cortex-m7-small", profile="lite",
                            precision=None)
    assert "'w'" in message and "flash" in message and "cortex-m7-small" in message, message


def test_activation_larger_than_ram(tmp_path):
    # cortex-m7-small has 16 KiB of RAM; conv0's output 1x300x8x8 is 19200 bytes even in int8.
    model = save(conv_relu_model(out_channels=300), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--calib", "random", board="cortex-m7-small", profile="lite",
                            precision=None)
    assert "'c'" in message and "RAM" in message and "cortex-m7-small" in message, message


def test_input_larger_than_ram(tmp_path):
    # the input alone, 1x1x160x160 (25600 bytes even in int8), cannot fit 16 KiB of RAM;
    # every other tensor is tiny
    graph = helper.make_graph([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap0")], "net",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 160, 160])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 1])])
    model = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--calib", "random", board="cortex-m7-small", profile="lite",
                            precision=None)
    assert "'x'" in message and "RAM" in message, message


def test_small_model_fits_the_small_board(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    compile_ok(tmp_path, model, "--calib", "random", board="cortex-m7-small", profile="lite")


# --- external data that leaves the model's folder -----------------------------------------------

def external_model(folder: Path) -> Path:
    """m.onnx in folder with its weight 'w' in w.bin next to it; returns the model path."""
    folder.mkdir(parents=True, exist_ok=True)
    model = conv_relu_model(out_channels=8)
    path = folder / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=64)
    return path


def constant_external_model(folder: Path) -> Path:
    """m.onnx whose Constant node 'const0' keeps its value (tensor 'kv') in w.bin."""
    folder.mkdir(parents=True, exist_ok=True)
    value = np.arange(64, dtype=np.float32).reshape(1, 64)
    model = relu_chain_model([helper.make_node("Constant", [], ["k"], name="const0",
                                               value=numpy_helper.from_array(value, "kv")),
                              helper.make_node("Relu", ["x"], ["r"], name="relu0"),
                              helper.make_node("Add", ["r", "k"], ["y"], name="add0")])
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 64
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 64
    path = folder / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=64, convert_attribute=True)
    return path


def set_location(path: Path, location: str) -> None:
    model = onnx.load(str(path), load_external_data=False)
    tensors = list(model.graph.initializer) + [a.t for n in model.graph.node for a in n.attribute if a.HasField("t")]
    touched = 0
    for init in tensors:
        for entry in init.external_data:
            if entry.key == "location":
                entry.value = location
                touched += 1
    assert touched, "the helper model has no external data"
    path.write_bytes(model.SerializeToString())


def test_external_data_inside_folder_compiles(tmp_path):
    path = external_model(tmp_path / "model")
    assert (tmp_path / "model" / "w.bin").is_file()
    compile_ok(tmp_path, path, "--precision", "fp32")


def test_external_data_of_constant_inside_folder_compiles(tmp_path):
    path = constant_external_model(tmp_path / "model")
    assert (tmp_path / "model" / "w.bin").is_file()
    compile_ok(tmp_path, path, "--precision", "fp32")


def test_external_data_dotdot(tmp_path):
    path = external_model(tmp_path / "model")
    (tmp_path / "model" / "w.bin").rename(tmp_path / "x.bin")  # the data really is there
    set_location(path, "../x.bin")
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and "../x.bin" in message and "refused" in message, message


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
def test_external_data_of_constant_node(tmp_path, where):
    # a Constant node's value can live in external data too; the same rules apply
    path = constant_external_model(tmp_path / "model")
    (tmp_path / "outside").mkdir()
    (tmp_path / "model" / "w.bin").rename(tmp_path / "outside" / "x.bin")
    location = {"dotdot": "../outside/x.bin", "absolute": str(tmp_path / "outside" / "x.bin"),
                "symlink": "w.bin"}[where]
    if where == "symlink":
        (tmp_path / "model" / "w.bin").symlink_to(tmp_path / "outside" / "x.bin")
    set_location(path, location)
    message = compile_fails(tmp_path, path)
    assert "'kv'" in message and location in message and "refused" in message, message


def test_external_data_dotdot_inside(tmp_path):
    # sub/../../x.bin leaves the folder even though it starts inside it
    path = external_model(tmp_path / "model")
    (tmp_path / "model" / "sub").mkdir()
    (tmp_path / "model" / "w.bin").rename(tmp_path / "x.bin")
    set_location(path, "sub/../../x.bin")
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and "sub/../../x.bin" in message and "refused" in message, message


@pytest.mark.parametrize("location", ["/etc/passwd", "ABSOLUTE"])
def test_external_data_absolute(tmp_path, location):
    path = external_model(tmp_path / "model")
    if location == "ABSOLUTE":  # an absolute path that points to the real data, inside the folder
        location = str((tmp_path / "model" / "w.bin").resolve())
    set_location(path, location)
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and location in message and "refused" in message, message


def test_external_data_symlink_file(tmp_path):
    path = external_model(tmp_path / "model")
    (tmp_path / "outside").mkdir()
    (tmp_path / "model" / "w.bin").rename(tmp_path / "outside" / "x.bin")
    (tmp_path / "model" / "w.bin").symlink_to(tmp_path / "outside" / "x.bin")
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and "w.bin" in message and "refused" in message, message


def test_external_data_symlink_folder(tmp_path):
    path = external_model(tmp_path / "model")
    (tmp_path / "outside").mkdir()
    (tmp_path / "model" / "w.bin").rename(tmp_path / "outside" / "w.bin")
    (tmp_path / "model" / "data").symlink_to(tmp_path / "outside", target_is_directory=True)
    set_location(path, "data/w.bin")
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and "data/w.bin" in message and "refused" in message, message


def test_external_data_missing(tmp_path):
    path = external_model(tmp_path / "model")
    (tmp_path / "model" / "w.bin").unlink()
    message = compile_fails(tmp_path, path)
    assert "'w'" in message and "w.bin" in message, message


def test_external_data_too_short(tmp_path):
    path = external_model(tmp_path / "model")
    data = (tmp_path / "model" / "w.bin").read_bytes()
    (tmp_path / "model" / "w.bin").write_bytes(data[: len(data) // 2])
    message = compile_fails(tmp_path, path)
    assert "w" in message, message


# --- dynamic shapes -----------------------------------------------------------------------------

def test_dynamic_dimension_needs_input_shape(tmp_path):
    model = save(conv_relu_model(in_shape=("N", 1, 8, 8)), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model)
    assert "'x'" in message and "--input-shape" in message and "'N'" in message, message


def test_dynamic_dimension_fixed_by_input_shape(tmp_path):
    model = save(conv_relu_model(in_shape=("N", 1, "H", "W")), tmp_path / "m.onnx")
    out = compile_ok(tmp_path, model, "--precision", "fp32", "--input-shape", "x=1x1x8x8")
    assert '"x"' in (out / "manifest.json").read_text()


@pytest.mark.parametrize("spec,needle", [("x=1x1x8", "x"),            # wrong rank
                                         ("x=1x1x9x7", "x"),          # contradicts the fixed width 8
                                         ("ghost=1x1x8x8", "ghost"),  # no such input
                                         ("x=1x1x0x8", "x=1x1x0x8"),  # zero
                                         ("x:1x1x8x8", "x:1x1x8x8")])  # bad syntax
def test_bad_input_shape_option(tmp_path, spec, needle):
    model = save(conv_relu_model(in_shape=("N", 1, "H", 8)), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--input-shape", spec, code=USAGE)
    assert "--input-shape" in message and needle in message, message


# --- options ------------------------------------------------------------------------------------

@pytest.mark.parametrize("options,needle", [
    (["--bogus"], "--bogus"),
    (["--precision", "fp64"], "fp64"),
    (["--calib-method", "magic"], "magic"),
], ids=["unknown-option", "bad-precision", "bad-calib-method"])
def test_wrong_option(tmp_path, options, needle):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, *options, code=USAGE)
    assert needle in message, message


def test_unknown_board(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, board="no-such-board", code=USAGE)
    assert "no-such-board" in message and "host" in message, message


def test_unknown_profile(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, profile="turbo", code=USAGE)
    assert "turbo" in message, message


def test_missing_calib_for_int8(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, code=USAGE, precision="int8")
    assert "--calib" in message, message


def test_calib_file_missing(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--calib", "nope.npy", code=REJECTED, precision="int8")
    assert message == "--calib file 'nope.npy' does not exist", message  # exit 3 as for every missing input file


def test_fp32_refused_by_lite(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, code=USAGE, profile="lite", precision="fp32")
    assert "fp32" in message and "lite" in message, message


def test_board_without_the_profile(tmp_path):
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    message = compile_fails(tmp_path, model, "--calib", "random", code=USAGE, board="cortex-m7",
                            profile="standard", precision=None)
    assert "cortex-m7" in message and "standard" in message, message


# --- the same checks through a freshly started interpreter -------------------------------------

@pytest.mark.parametrize("how", ["module", "script"])
def test_fresh_process(tmp_path, runner, how):
    runner["how"] = how
    model = save(conv_relu_model(), tmp_path / "m.onnx")
    (tmp_path / "bad.onnx").write_bytes(model.read_bytes()[:100])
    assert "bad.onnx" in compile_fails(tmp_path, tmp_path / "bad.onnx")
    assert "--bogus" in compile_fails(tmp_path, model, "--bogus", code=USAGE)
    compile_ok(tmp_path, model, "--precision", "fp32")


def test_reduce_mean_alternating_too_often_is_refused_naming_the_axes(tmp_path):
    """Any axes reduce (over H, W: PyTorch's global average pooling), as long as kept and
    reduced axes alternate at most 4 times (the reduce kernels see at most 4 groups)."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="mean_c", axes=[1, 3, 5], keepdims=1)
    graph = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 4, 1, 6, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    message = compile_fails(tmp_path, save(model, tmp_path / "m.onnx"))
    assert "mean_c" in message and "reducing axes [1, 3, 5] of shape [2, 3, 4, 5, 6, 7]" in message, message
    assert "more than 4 times" in message, message
