"""The graph-import fixtures (tests/fixtures/import/, scripts/make_fixtures_import.py) as
Cortex-M7 firmware (profile lite, int8) under QEMU: the Silero-style VAD with its sample rate
pinned (LSTM with state inputs and outputs; also as quantize_dynamic wrote it, DynamicQuantizeLSTM
and all), AmplitudeToDB's computed Clip min, the paddle -1
batch net fixed by --input-shape and the quantize_dynamic conv net, each through the real CLI,
bit for bit equal to the host's int8 build of the same profile and to the numpy integer
reference (tests/test_graph_import.py compares the host builds with ONNX Runtime)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.reference import run_quantized_model
from cuvil_sdk.request import new_request

from models import cli, reference_graph

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "import"
pytestmark = pytest.mark.slow


def vad(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"x": (0.5 * rng.standard_normal((n, 1, 256))).astype(np.float32),
            "h": (0.5 * np.tanh(rng.standard_normal((n, 1, 1, 16)))).astype(np.float32),
            "c": (0.5 * rng.standard_normal((n, 1, 1, 16))).astype(np.float32)}


# model -> (options, samples(rng, n))
CASES = {
    "vad_if.onnx": (["--input-value", "sr=16000"], vad),
    "vad_if_dynq.onnx": (["--input-value", "sr=8000"], vad),
    "logmel_db.onnx": ([], lambda rng, n: {"x": (10.0 ** rng.uniform(-6, 2, (n, 1, 1, 40, 32))).astype(np.float32)}),
    "paddle_conv.onnx": (["--input-shape", "x=1x3x16x16"], lambda rng, n: {"x": rng.random((n, 1, 3, 16, 16),
                                                                                           dtype=np.float32)}),
    "dynq_convnet.onnx": ([], lambda rng, n: {"x": rng.random((n, 1, 3, 8, 8), dtype=np.float32)}),
}


def run(work: Path, board: str, model: str, options: list[str], calib: Path, x: Path) -> tuple[dict, dict]:
    out = work / f"{Path(model).stem}-{board}.npz"
    r = cli("run", "--board", board, "--profile", "lite", "--model", FIXTURES / model, "--calib", calib,
            "--input", x, "--output", out, "--json", "-o", work / f"{Path(model).stem}-{board}", *options, cwd=work)
    assert r.returncode == 0, r.stderr
    return dict(np.load(out)), json.loads(r.stdout)


def options_as_keywords(options: list[str]) -> dict:
    return {flag[2:].replace("-", "_"): [value] for flag, value in zip(options[::2], options[1::2])}


@pytest.mark.parametrize("model", list(CASES))
def test_import_fixture_on_cortex_m7_equals_host_int8_and_the_reference(tmp_path, model):
    options, samples = CASES[model]
    rng = np.random.default_rng(39)
    calib, x = tmp_path / "calib.npz", tmp_path / "x.npz"
    np.savez(calib, **samples(rng, 16))
    feeds = samples(rng, 2)
    np.savez(x, **feeds)
    m7, report = run(tmp_path, "cortex-m7", model, options, calib, x)
    host, _ = run(tmp_path, "host", model, options, calib, x)
    g = reference_graph(new_request(FIXTURES / model, board="cortex-m7", profile="lite", calib=str(calib),
                                    **options_as_keywords(options)))
    for name in g.outputs:
        want = np.stack([run_quantized_model(g, {k: v[i] for k, v in feeds.items()})[1][name] for i in range(2)])
        np.testing.assert_array_equal(m7[name], host[name], err_msg=name)
        np.testing.assert_array_equal(m7[name], want.reshape(m7[name].shape), err_msg=name)  # (N, *shape[1:])
    assert report["instructions"] > 0
