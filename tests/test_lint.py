"""The code meets its lint rules: `ruff check` (pyproject.toml's [tool.ruff]) on every Python
folder, with the ruff installed beside this Python (the `test` extra). A missing ruff fails
the test, with how to install it; it never skips."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("sdk", "tests", "board_tests", "benchmarks", "scripts")


def test_ruff_check_passes():
    ruff = Path(sys.executable).parent / ("ruff.exe" if sys.platform == "win32" else "ruff")
    assert ruff.exists(), (f"{ruff} not found: install the test extra (pip install -e '.[test]', "
                           "scripts/setup.sh does) so the lint rules can be checked")
    r = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", *FOLDERS],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff check (exit {r.returncode}):\n{r.stdout}{r.stderr}"
