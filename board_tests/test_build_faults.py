"""Faults around a build's output folder (issue 38, defects 1 and 5): two builds into one -o, a
build killed while it holds the folder, a toolchain that calls a link a success without making
the library, and a file system that refuses writes. Each build is a real `cuvil-sdk build` of the
host board in a subprocess; the folder must always hold exactly one whole build, the one whose
command exited 0 last, and a build never reports success without its artifacts."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.paths import PACKAGE_DIR

pytestmark = pytest.mark.slow

EXAMPLES = PACKAGE_DIR / "examples"
CLI = str(Path(sys.executable).with_name("cuvil-sdk"))
MODELS = {"digits_cnn": (EXAMPLES / "digits_cnn.onnx", EXAMPLES / "digits_calib.npy"),
          "ad_fp32": (EXAMPLES / "ad_fp32.onnx", None)}


@pytest.fixture(scope="module")
def calib(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("calib")
    np.save(folder / "ad.npy", np.random.default_rng(0).random((8, 640), dtype=np.float32))
    return {"digits_cnn": MODELS["digits_cnn"][1], "ad_fp32": folder / "ad.npy"}


def build_command(stem: str, out: Path, calib: dict[str, Path]) -> list[str]:
    return [CLI, "build", "--board", "host", "--profile", "standard", "--model", str(MODELS[stem][0]),
            "--calib", str(calib[stem]), "-o", str(out), "--json"]


def build(stem: str, out: Path, calib: dict[str, Path], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(build_command(stem, out, calib), capture_output=True, text=True, timeout=300, **kwargs)


def holds_one_build_of(out: Path, stem: str) -> bool:
    """The folder is one whole build of `stem`: its library, its manifest, only its sources."""
    manifest = json.loads((out / "manifest.json").read_text())
    sources = {p.name for p in (out / "src").glob("*.c")}
    others = [s for s in MODELS if s != stem and any(n.startswith(s) for n in sources)]
    return (manifest["name"] == stem and [p.name for p in (out / "build").glob("*.so")] == [f"lib{stem}.so"]
            and not others)


def no_leftovers(out: Path) -> bool:
    return not any(out.with_name(out.name + suffix).exists() for suffix in (".partial", ".lock", ".previous"))


def test_a_second_build_into_a_busy_folder_is_refused_at_once(tmp_path, calib):
    out = tmp_path / "out"
    first = subprocess.Popen(build_command("digits_cnn", out, calib), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 60
    while not out.with_name("out.partial").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first.poll() is None, "the first build ended before the second could start"
    started = time.monotonic()
    second = build("ad_fp32", out, calib)
    refused_in = time.monotonic() - started
    first_out, first_err = first.communicate(timeout=300)
    assert second.returncode == 8, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {first.pid}" in lines[0] and "another cuvil-sdk" in lines[0], lines
    assert json.loads(second.stdout)["exit_code"] == 8
    assert refused_in < 20  # at once: it did no work (the first build takes longer than its start-up)
    assert first.returncode == 0, first_err
    assert holds_one_build_of(out, "digits_cnn") and no_leftovers(out)
    assert json.loads(first_out)["artifacts"]["so"] == str(out / "build" / "libdigits_cnn.so")


@pytest.mark.parametrize("gap", [0.0, 0.5, 1.5])
def test_two_builds_started_together_leave_the_last_successful_one(tmp_path, calib, gap):
    """The issue's rounds: two models into one -o, the second started `gap` s after the first.
    Whatever the interleaving, every build that exits 0 is whole and the folder holds the one
    that exited 0 last."""
    out = tmp_path / "out"
    procs = []
    for stem in ("digits_cnn", "ad_fp32"):
        procs.append((stem, subprocess.Popen(build_command(stem, out, calib), stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)))
        time.sleep(gap)
    finished = []
    while procs:  # note each one's end as it happens
        for item in list(procs):
            if item[1].poll() is not None:
                finished.append((item[0], item[1].returncode, item[1].communicate()))
                procs.remove(item)
        time.sleep(0.01)
    winners = [stem for stem, code, _ in finished if code == 0]
    assert winners, finished
    assert all(code in (0, 8) for _, code, _ in finished), finished
    assert holds_one_build_of(out, winners[-1]) and no_leftovers(out)


def test_a_killed_builds_lock_is_taken_over(tmp_path, calib):
    out = tmp_path / "out"
    assert build("ad_fp32", out, calib).returncode == 0
    victim = subprocess.Popen(build_command("digits_cnn", out, calib), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (out.with_name("out.partial") / "src").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)
    assert out.with_name("out.lock").exists()  # a kill leaves the file, not the lock
    assert holds_one_build_of(out, "ad_fp32")  # the previous build, untouched
    again = build("digits_cnn", out, calib)
    assert again.returncode == 0, again.stderr
    assert holds_one_build_of(out, "digits_cnn") and no_leftovers(out)


def fake_gcc(folder: Path) -> Path:
    """A gcc that compiles as gcc does but, asked to link a shared library, says success and makes
    nothing: a broken or interrupted toolchain."""
    folder.mkdir()
    real = subprocess.run(["which", "gcc"], capture_output=True, text=True).stdout.strip()
    script = folder / "gcc"
    script.write_text(f"#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -shared ] && exit 0; done\nexec {real} \"$@\"\n")
    script.chmod(0o755)
    return folder


def test_a_build_without_its_library_fails_naming_it(tmp_path, calib):
    out = tmp_path / "out"
    assert build("ad_fp32", out, calib).returncode == 0
    env = dict(os.environ, PATH=f"{fake_gcc(tmp_path / 'bin')}:{os.environ['PATH']}")
    broken = build("digits_cnn", out, calib, env=env)
    assert broken.returncode == 5, broken.stderr
    assert "libdigits_cnn.so" in broken.stderr.strip().splitlines()[-1]
    assert "artifacts" not in json.loads(broken.stdout)
    assert holds_one_build_of(out, "ad_fp32") and no_leftovers(out)  # the previous good build is kept


def test_a_full_file_system_is_a_system_failure_naming_the_folder(tmp_path, calib):
    """RLIMIT_FSIZE makes every write past 32 KiB fail with EFBIG, as a full disk fails it with
    ENOSPC: the SDK's own sources of the model are larger than that."""
    out = tmp_path / "out"
    assert build("ad_fp32", out, calib).returncode == 0
    before = (out / "manifest.json").read_bytes()

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))
    full = build("digits_cnn", out, calib, preexec_fn=small_files)
    assert full.returncode == 5, full.stderr
    line = full.stderr.strip().splitlines()[-1]
    assert str(out) in line and "internal error" not in line and "Traceback" not in full.stderr
    assert (out / "manifest.json").read_bytes() == before and no_leftovers(out)
