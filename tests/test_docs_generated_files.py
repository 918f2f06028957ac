"""docs/internals.md lists the files `compile` writes: the list and the tool agree, both ways."""
from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "sdk" / "examples"


def documented_patterns() -> list[str]:
    """OUT/... paths of the code block after "`cuvil-sdk compile MODEL -o OUT` writes", as globs."""
    text = (ROOT / "docs" / "internals.md").read_text()
    section = text[text.index("`cuvil-sdk compile MODEL -o OUT` writes"):]
    block = section[section.index("```") + 3:]
    block = block[:block.index("```")]
    paths = [line.split()[0] for line in block.splitlines() if line.startswith("OUT/")]
    return [re.sub(r"<[^>]+>", "*", p.removeprefix("OUT/")) for p in paths]


@pytest.mark.parametrize("board, profile, not_for_board", [
    ("host", "standard", ["src/harness.c", "src/linker.ld"]),  # a library loaded by ctypes: no harness
    ("rpi5", "standard", ["src/linker.ld"]),
    ("cortex-m7", "lite", []),
])
def test_internals_lists_exactly_what_compile_writes(tmp_path, board, profile, not_for_board):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "compile", str(EXAMPLES / "digits_cnn.onnx"),
                        "--board", board, "--profile", profile, "--calib", str(EXAMPLES / "digits_calib.npy"),
                        "-o", str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    patterns = documented_patterns()
    assert "src/*_kernels.h" not in patterns  # never written
    undocumented = [f for f in written if not any(fnmatch.fnmatchcase(f, p) for p in patterns)]
    assert undocumented == []
    unwritten = [p for p in patterns if not any(fnmatch.fnmatchcase(f, p) for f in written)]
    assert unwritten == not_for_board
