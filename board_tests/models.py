"""Helpers shared by the whole-model board tests: build through the real pipeline and
the real CLI, and get the numpy reference graph of exactly the same compilation."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from cuvil_sdk.boards import get_board
from cuvil_sdk.compiler import frontend_and_passes, quantize
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.profiles import get_profile

EXAMPLES = Path(__file__).resolve().parents[1] / "sdk" / "examples"


def request(model: str, board: str, profile: str, calib: Path | None, precision: str | None = None) -> CompileRequest:
    return CompileRequest(model=EXAMPLES / model, board=get_board(board), profile=get_profile(profile),
                          precision=precision, calib=str(calib) if calib else None)


def reference_graph(req: CompileRequest):
    """The quantized IR the compiler generates C from (same passes, same calibration)."""
    g = frontend_and_passes(req)
    if (req.precision or req.profile.default_precision) == "int8":
        quantize(g, req)
    return g


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=900)


def cli_run(tmp: Path, board: str, profile: str, model: str, x: np.ndarray, calib: Path | None,
            *extra: str) -> tuple[dict, dict]:
    np.save(tmp / f"in-{board}.npy", x)
    out = tmp / f"out-{board}-{profile}.npz"
    args = ["run", "--board", board, "--profile", profile, "--model", EXAMPLES / model, "--input",
            tmp / f"in-{board}.npy", "--output", out, "--json", *extra]
    if calib:
        args += ["--calib", calib]
    r = cli(*args, cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return dict(np.load(out)), json.loads(r.stdout)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return float(((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)).mean())


def ort_outputs(model: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(str(EXAMPLES / model), so)
    name = s.get_inputs()[0].name
    return np.stack([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])
