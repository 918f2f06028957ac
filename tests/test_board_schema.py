"""Board files against their schema (sdk/board_schema.py): every shipped file passes, a
misspelt key or a value of the wrong type is refused (exit 2) naming the file and the key,
and every key the schema declares is read by the SDK (no dead keys).

The CLI has no option that names a board file of one's own: boards are the files under the
package's targets/ folder. So the CLI case runs `cuvil-sdk boards` in a subprocess whose
targets folder is a copy holding the bad file (boards.TARGETS_DIR pointed at it)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cuvil_sdk import boards
from cuvil_sdk.board_schema import SCHEMA
from cuvil_sdk.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
BOARD_FILES = sorted((ROOT / "targets").glob("*/board*.toml"))
M7 = ROOT / "targets" / "cortex_m7" / "board.toml"


def copy_with(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the cortex-m7 board file with one line changed, in a targets-like folder."""
    text = M7.read_text()
    assert old in text
    path = tmp_path / "targets" / "cortex_m7" / "board.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("path", BOARD_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_board_file_passes(path: Path) -> None:
    board = boards.load_board_file(path)
    assert board.name and board.kind in ("firmware", "shared_library")


def test_misspelt_key_refused_by_the_cli(tmp_path: Path) -> None:
    bad = copy_with(tmp_path, "flash_bytes = 2097152", "flash_bytse = 2097152")
    code = ("import sys; from pathlib import Path; from cuvil_sdk import boards, cli; "
            f"boards.TARGETS_DIR = Path({str(bad.parents[1])!r}); sys.exit(cli.main(['boards']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.strip() == (f"cuvil-sdk: error: board file {bad}: unknown key 'memory.flash_bytse'; "
                                f"did you mean 'memory.flash_bytes'?")


def test_misspelt_table_refused(tmp_path: Path) -> None:
    bad = copy_with(tmp_path, "[toolchain]", "[toolchian]")
    with pytest.raises(UsageError, match=r"unknown key 'toolchian'; did you mean 'toolchain'\?"):
        boards.load_board_file(bad)


def test_misspelt_key_of_a_region_refused(tmp_path: Path) -> None:
    bad = copy_with(tmp_path, 'access = "rw"', 'acess = "rw"')
    with pytest.raises(UsageError, match=r"unknown key 'memory.regions.acess'; did you mean 'memory.regions.access'"):
        boards.load_board_file(bad)


@pytest.mark.parametrize("old, new, message", [
    ("stack_bytes = 16384", 'stack_bytes = "16 KiB"', "key 'memory.stack_bytes' must be an integer, not str"),
    ("profile_layers = true", "profile_layers = 1", "key 'firmware.profile_layers' must be true or false, not int"),
    ('libs = ["m"]', 'libs = "m"', "key 'toolchain.libs' must be a list of strings, not str"),
    ('kind = "firmware"', 'kind = "elf"', "key 'kind' is 'elf'; it takes 'firmware', 'shared_library'"),
    ('name = "cortex-m7"', "", "key 'name' is missing"),
])
def test_wrong_value_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    bad = copy_with(tmp_path, old, new)
    with pytest.raises(UsageError, match=re.escape(f"board file {bad}: {message}")) as err:
        boards.load_board_file(bad)
    assert err.value.exit_code == 2


def read_by_sdk() -> str:
    """The text of everything that reads board files: the SDK's Python and the SConscripts."""
    files = [p for p in (ROOT / "sdk").rglob("*.py") if p.name != "board_schema.py"]
    files += [*(ROOT / "targets").glob("*/SConscript"), ROOT / "sdk" / "SConstruct"]
    return "\n".join(p.read_text() for p in files)


def test_every_schema_key_is_read() -> None:
    """A key no code reads is dead (or only for people: documents=True)."""
    text = read_by_sdk()
    dead = [e.key for e in SCHEMA if not e.documents
            and not re.search(rf"""["'.]{re.escape(e.key.split('.')[-1].removeprefix('[]'))}["'\]).]""", text)]
    assert dead == []
