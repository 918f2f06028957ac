"""The SIMD kernel sets on the layer kinds and shapes of MobileNetV2-1.0 and ResNet-50 at
224x224 as PyTorch exports them, without torch: board_tests/fixtures/simd_wide/mini_mbv2_r50.onnx
(scripts/make_fixtures_simd_wide.py; rows 224 and 112 wide, depthwise 112x112x96 stride 2,
inverted residuals, a bottleneck, max pooling, 1280 channels, ReduceMean as the global pool).
Built for host (avx2) and rpi5 (neon): no layer on a portable kernel (an empty `fallbacks`
list and every weighted layer on its set's kernel), and the int8 outputs of both builds equal
the numpy reference on the same inputs, bit for bit (rpi5 under qemu-aarch64). The full
models' figures come from benchmarks/export_torch_models.py and bench_torch_models.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model
import kernel_cases as kc

MODEL = Path(__file__).resolve().parent / "fixtures" / "simd_wide" / "mini_mbv2_r50.onnx"
SETS = {"host": "avx2", "rpi5": "neon"}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    folder = tmp_path_factory.mktemp("simd_wide")
    calib = folder / "calib.npy"
    rng = np.random.default_rng(3)
    np.save(calib, rng.standard_normal((2, 3, 224, 224)).astype(np.float32))
    samples = [{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}]
    out = {}
    for board in SETS:
        req = CompileRequest(model=MODEL, board=get_board(board), profile=get_profile("standard"), precision="int8",
                             calib=str(calib), name="mini")
        info = do_build(req, folder / board, 2)
        out[board] = (info, outputs_of(board, info, samples))
    g = kc.reference_graph(kc.Net("mini", None, {}, {}, MODEL, calib), "host", "standard", "int8")
    return out, [run_quantized_model(g, s) for s in samples]


def outputs_of(board: str, info: dict, samples: list) -> list[tuple[np.ndarray | None, np.ndarray]]:
    """Per sample: (the raw int8 logits where the runner gives them, the dequantized logits)."""
    if board == "host":
        with runtime.load(info["artifacts"]["so"]) as model:
            return [(None, model.run(s)["logits"]) for s in samples]
    result = run_samples(get_board(board), info, samples, False)
    return [(result["raw"][0][i], result["outputs"][i]["logits"]) for i in range(len(samples))]


@pytest.mark.slow
@pytest.mark.parametrize("board", list(SETS))
def test_no_layer_falls_back(builds, board):
    info = builds[0][board][0]
    assert info["fallbacks"] == []
    ops = ("Conv", "Gemm", "MatMul", "MaxPool", "Add", "GlobalAveragePool")
    weighted = [l for l in info["layers"] if l["op"] in ops]
    assert len(weighted) >= 20
    for layer in weighted:
        assert layer["kernel"].endswith("_" + SETS[board]), layer


@pytest.mark.slow
@pytest.mark.parametrize("board", list(SETS))
def test_int8_outputs_equal_the_reference(builds, board):
    info, got = builds[0][board]
    for (raw, dequantized), (want_q, want_f) in zip(got, builds[1]):
        assert len(np.unique(want_q["logits"])) > 1
        if raw is not None:
            raw = raw.reshape(want_q["logits"].shape)
            assert np.array_equal(raw, want_q["logits"]), kc.mismatch(raw, want_q["logits"])
        assert np.array_equal(dequantized.reshape(want_f["logits"].shape), want_f["logits"])
