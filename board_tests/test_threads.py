"""Threads: the generated library is safe to call from several threads at once, and a build
with --threads N (large layers split over N threads per call) gives the same outputs as the
single-threaded build, bit for bit (int8 and fp32: the split is by output rows / output
groups, every output is computed the same way).

  - several Python threads call ONE loaded model (cuvil_sdk.runtime: one arena per call)
    concurrently with different inputs; every output equals the sequential run's;
  - --threads 2 builds, with every conv / depthwise / fc layer split (the size threshold is
    lowered for the test), equal the --threads 1 builds and the reference, on host (avx2)
    and on rpi5 (neon, under qemu-aarch64), and a threaded library is itself safe to call
    from several Python threads;
  - a --threads 2 library closed (its pool's worker joined), loaded again, loaded twice, or
    used in a fork()ed child keeps giving the same outputs (the pool itself:
    test_threads_pool.py);
  - --threads 1 (the default) generates no thread code at all; --threads > 1 is refused for
    the lite profile and for firmware boards, and above MAX_THREADS.
"""
from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import kernel_cases as kc
import simd_cases as sc
from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.kernels import simd_layout
from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.compiler import MAX_THREADS, check_threads
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.errors import UsageError
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model

EXAMPLES = Path(__file__).resolve().parents[1] / "sdk" / "examples"
PROFILE = "standard"
PY_THREADS = 4
CALLS_PER_THREAD = 12
IDS = ["simd_conv_c19_oc40", "simd_conv_oc24_s2", "simd_dw_c40", "simd_gemm_k301_n70", "simd_gemm_rows4"]


def build(folder: Path, board: str, model: Path, calib: Path | None, precision: str, threads: int,
          name: str) -> dict:
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile(PROFILE), precision=precision,
                         calib=str(calib) if calib else None, name=name, threads=threads)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simd_layout, "THREAD_MIN_MACS", 0)  # split every layer the kernels can split
        return do_build(req, folder, 2)


@pytest.fixture(scope="module")
def net(tmp_path_factory) -> kc.Net:
    return kc.save_net(sc.make_net("t_net", IDS), tmp_path_factory.mktemp("threads_net"))


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    folder = tmp_path_factory.mktemp("threads_digits")
    return {t: build(folder / f"t{t}", "host", EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy", "int8",
                     t, "digits") for t in (1, 2)}


def concurrent_outputs(library: str, inputs: list[np.ndarray]) -> list[list[dict]]:
    """Each of PY_THREADS threads calls the one loaded model CALLS_PER_THREAD times on its
    own input (released together by a barrier); returns every thread's outputs."""
    results: list[list[dict]] = [[] for _ in range(PY_THREADS)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(PY_THREADS)
    with runtime.load(library) as model:
        def work(t: int) -> None:
            try:
                barrier.wait()
                for _ in range(CALLS_PER_THREAD):
                    results[t].append(model.run(inputs[t]))
            except BaseException as exc:  # reported below
                errors.append(exc)
        threads = [threading.Thread(target=work, args=(t,)) for t in range(PY_THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors, errors
    return results


@pytest.mark.parametrize("threads", [1, 2])
def test_one_model_called_from_several_threads(digits, threads):
    library = digits[threads]["artifacts"]["so"]
    inputs = [x[None] for x in np.load(EXAMPLES / "digits_data.npz")["x"][:PY_THREADS]]
    with runtime.load(library) as model:
        sequential = [model.run(x) for x in inputs]
    assert len({next(iter(out.values())).tobytes() for out in sequential}) == PY_THREADS  # distinct outputs
    for t, outs in enumerate(concurrent_outputs(library, inputs)):
        assert len(outs) == CALLS_PER_THREAD
        for out in outs:
            for name, want in sequential[t].items():
                assert np.array_equal(out[name], want), f"thread {t}, output {name}"


def test_digits_threads2_equals_threads1(digits):
    src1 = (Path(digits[1]["out_dir"]) / "src" / "digits.c").read_text()
    src2 = (Path(digits[2]["out_dir"]) / "src" / "digits.c").read_text()
    assert "CUVIL_THREADS" not in src1 and "#define CUVIL_THREADS 2" in src2
    assert src2.count(", 2); /* layer") == 5  # the four convolutions and the fc are split
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:50]
    with runtime.load(digits[1]["artifacts"]["so"]) as one, runtime.load(digits[2]["artifacts"]["so"]) as two:
        for xi in x:
            a, b = one.run(xi[None]), two.run(xi[None])
            assert all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_host_threads2_equals_threads1_and_reference(tmp_path_factory, net, precision):
    folder = tmp_path_factory.mktemp(f"threads_host_{precision}")
    calib = net.calib if precision == "int8" else None
    infos = {t: build(folder / f"t{t}", "host", net.path, calib, precision, t, net.name) for t in (1, 2)}
    calls = [l for l in (Path(infos[2]["out_dir"]) / "src" / f"{net.name}.c").read_text().splitlines()
             if re.search(r"(conv2d|fc)_(s8|s8amx|f32)_avx2\(", l)]
    assert len(calls) == len(IDS) and all(re.search(r", 2\); /\* layer \d+ \*/$", l) for l in calls), calls
    samples = kc.float_samples(net, 3, seed=41)
    g = kc.reference_graph(net, "host", PROFILE, precision)
    with runtime.load(infos[1]["artifacts"]["so"]) as one, runtime.load(infos[2]["artifacts"]["so"]) as two:
        for s in samples:
            a, b = one.run(s), two.run(s)
            for y in g.outputs:
                assert np.array_equal(a[y], b[y]), y
            if precision == "int8":
                want = run_quantized_model(g, s)[1]
                assert all(np.array_equal(b[y], want[y]) for y in g.outputs)
    inputs = [kc.float_samples(net, 1, seed=50 + t)[0] for t in range(PY_THREADS)]
    with runtime.load(infos[2]["artifacts"]["so"]) as model:
        sequential = [model.run(x) for x in inputs]
    for t, outs in enumerate(concurrent_outputs(infos[2]["artifacts"]["so"], inputs)):
        for out in outs:
            assert all(np.array_equal(out[y], sequential[t][y]) for y in g.outputs), t


def test_threads2_library_closed_reloaded_and_forked(digits, tmp_path):
    """fixtures/threads_pool/reload_fork.py in a process of its own: close joins the pool's
    worker (the thread count drops back), a reloaded or second handle works, a forked child
    runs on a new worker; every output equals the --threads 1 build's."""
    xs = np.load(EXAMPLES / "digits_data.npz")["x"][:3]
    with runtime.load(digits[1]["artifacts"]["so"]) as one:
        want = np.stack([next(iter(one.run(x[None]).values())) for x in xs])
    np.save(tmp_path / "x.npy", xs)
    np.save(tmp_path / "want.npy", want)
    r = subprocess.run([sys.executable, str(Path(__file__).parent / "fixtures" / "threads_pool" / "reload_fork.py"),
                        digits[2]["artifacts"]["so"], tmp_path / "x.npy", tmp_path / "want.npy"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert "reload, two handles, fork: ok" in r.stdout


def test_rpi5_threads2_bit_exact_under_qemu(tmp_path_factory, net):
    folder = tmp_path_factory.mktemp("threads_rpi5")
    info = build(folder / "t2", "rpi5", net.path, net.calib, "int8", 2, net.name)
    source = (Path(info["out_dir"]) / "src" / f"{net.name}.c").read_text()
    assert "#define CUVIL_THREADS 2" in source
    assert len(re.findall(r"(conv2d|fc)_s8_neon\(.*, 2\); /\* layer", source)) == len(IDS)
    g = kc.reference_graph(net, "rpi5", PROFILE, "int8")
    samples = kc.float_samples(net, 2, seed=42) + kc.dequantized(g, kc.int8_samples(g, 1, seed=43))
    result = run_samples(get_board("rpi5"), info, samples, False)
    for i, s in enumerate(samples):
        want = run_quantized_model(g, s)[0]
        for j, y in enumerate(g.outputs):
            got = result["raw"][j][i].reshape(want[y].shape)
            assert np.array_equal(got, want[y]), f"{y}, sample {i}: {kc.mismatch(got, want[y])}"


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("board, profile, threads", [("cortex-m7", "lite", 2), ("host", "lite", 2),
                                                      ("host", "standard", 0)])
def test_threads_option_refused(tmp_path, board, profile, threads):
    r = cli("compile", EXAMPLES / "digits_cnn.onnx", "--board", board, "--profile", profile, "--calib",
            EXAMPLES / "digits_calib.npy", "--threads", threads, "-o", tmp_path / "out")
    assert r.returncode == 2, r.stderr
    assert "--threads" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_threads_above_the_limit_refused():
    req = CompileRequest(model=EXAMPLES / "digits_cnn.onnx", board=get_board("host"), profile=get_profile(PROFILE),
                         threads=MAX_THREADS + 1)
    with pytest.raises(UsageError, match=rf"^--threads must be from 1 to {MAX_THREADS} \(got {MAX_THREADS + 1}\)$"):
        check_threads(req)


def test_threads_option_reaches_the_generated_code(tmp_path):
    r = cli("compile", EXAMPLES / "digits_cnn.onnx", "--board", "host", "--profile", "standard", "--calib",
            EXAMPLES / "digits_calib.npy", "--threads", "3", "-o", tmp_path / "out", "--json")
    assert r.returncode == 0, r.stderr
    assert "#define CUVIL_THREADS 3" in (tmp_path / "out" / "src" / "digits_cnn.c").read_text()
    r = cli("compile", EXAMPLES / "digits_cnn.onnx", "--board", "host", "--profile", "standard", "--calib",
            EXAMPLES / "digits_calib.npy", "-o", tmp_path / "one")
    assert r.returncode == 0, r.stderr
    for f in (tmp_path / "one" / "src").rglob("*.c"):
        text = f.read_text()
        assert "CUVIL_THREADS" not in text and "pthread" not in text
