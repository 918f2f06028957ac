"""The four MLPerf Tiny models on cortex-m55 (Helium) under qemu-system-arm -M mps3-an547: ResNet-8 and
the autoencoder (sdk/examples), DS-CNN and MobileNetV1-0.25 trained (benchmarks/models). Each builds
with empty fallbacks (every convolution, fully connected, pooling, Add, softmax and transpose on a
Helium kernel), fits the board's budget, and gives int8 outputs identical to the host's (the portable
C build, native). Guest instructions per multiply-add are benchmarks (benchmarks/bench_cortex_m.py),
not asserted here."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.kernels.contract import declarations
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest
from models import EXAMPLES
from tools import missing_tools

pytestmark = pytest.mark.slow
MODELS = Path(__file__).resolve().parents[1] / "benchmarks" / "models"
CASES = {"resnet8": (EXAMPLES / "resnet8_fp32.onnx", (3, 32, 32)), "ad": (EXAMPLES / "ad_fp32.onnx", (640,)),
         "ds_cnn": (MODELS / "ds_cnn_kws_trained.onnx", (1, 49, 10)),
         "mobilenet_v1_025": (MODELS / "mobilenet_v1_025_vww_trained.onnx", (3, 96, 96))}
HELIUM = set(declarations("helium"))
TOOLS = ["arm-none-eabi-gcc", "qemu-system-arm", "scons", "gcc"]


def build(model: Path, board: str, calib: Path, out: Path) -> dict:
    req = CompileRequest(model=model, board=get_board(board), profile=get_profile("lite"), precision="int8",
                         calib=str(calib), name=model.stem)
    return do_build(req, out, 2)


@pytest.mark.parametrize("name", list(CASES))
def test_mlperf_tiny_model_on_helium_equals_host(name, tmp_path):
    assert not missing_tools(TOOLS), f"missing tools: {missing_tools(TOOLS)} (these tests never skip)"
    model, shape = CASES[name]
    rng = np.random.default_rng(7)
    np.save(tmp_path / "calib.npy", rng.random((8, *shape), dtype=np.float32))
    m55 = build(model, "cortex-m55", tmp_path / "calib.npy", tmp_path / "m55")
    assert m55["fallbacks"] == [] and m55["fits"]
    ran = {layer["kernel"] for layer in m55["layers"] if layer["kernel"] not in ("(alias)", "(input copy)")}
    assert ran <= HELIUM, sorted(ran - HELIUM)
    host = build(model, "host-portable", tmp_path / "calib.npy", tmp_path / "host")
    x = rng.random((2, *shape), dtype=np.float32)
    samples = [{m55["inputs"][0]["name"]: x[i:i + 1].reshape(m55["inputs"][0]["shape"])} for i in range(len(x))]
    got = run_samples(get_board("cortex-m55"), m55, samples, False)
    want = run_samples(get_board("host-portable"), host, samples, False)
    assert all(n > 0 for n in got["instructions"])
    for mine, theirs in zip(got["outputs"], want["outputs"]):  # dequantized from the int8 codes: equal iff they are
        assert mine.keys() == theirs.keys()
        for key in mine:
            assert np.array_equal(mine[key], theirs[key]), (name, key)
