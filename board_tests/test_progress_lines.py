"""A build says what it is doing on a terminal (issue 39: an int8 build of a 0.5-3 GMAC model was
silent for up to 163 s): each step on stderr when stderr is a terminal (a pty here), none when it
is not (a pipe: scripts and --json readers get no chatter)."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from cuvil_sdk.paths import PACKAGE_DIR

pytestmark = pytest.mark.slow
EXAMPLES = PACKAGE_DIR / "examples"
CLI = str(Path(sys.executable).with_name("cuvil-sdk"))


def build_args(out: Path) -> list[str]:
    return [CLI, "build", "--board", "host", "--profile", "standard", "--model", str(EXAMPLES / "digits_cnn.onnx"),
            "--calib", str(EXAMPLES / "digits_calib.npy"), "-o", str(out)]


def stderr_on_a_terminal(args: list[str]) -> str:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stderr=follower, stdout=subprocess.DEVNULL)
    os.close(follower)
    said = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the follower closed: the process ended
            break
        if not chunk:
            break
        said += chunk
    assert proc.wait(timeout=300) == 0, said.decode()
    os.close(leader)
    return said.decode()


def test_each_step_of_a_build_is_said_on_a_terminal(tmp_path):
    said = stderr_on_a_terminal(build_args(tmp_path / "a"))
    steps = ["reading digits_cnn.onnx", "10 layers; quantizing", "calibrating 200/200",
             "planning memory, choosing kernels and writing C for 10 layers", "compiling 2 C files for host"]
    at = [said.find(step) for step in steps]
    assert all(i >= 0 for i in at) and at == sorted(at), said


def test_no_steps_on_a_pipe(tmp_path):
    r = subprocess.run(build_args(tmp_path / "b"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "quantizing" not in r.stderr and "compiling" not in r.stderr, r.stderr
