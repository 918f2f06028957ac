"""The build information is typed (sdk/build_info.py): a key no stage declared is refused
before it reaches manifest.json or a report, in an image's models too; what a real compile
writes is declared, and written in the order the stages wrote it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cuvil_sdk
from cuvil_sdk.build_info import KEYS, check_keys, to_json

CLI = Path(sys.executable).with_name("cuvil-sdk")
EXAMPLES = Path(cuvil_sdk.PACKAGE_DIR) / "examples"


def test_a_misspelt_key_is_refused_naming_it():
    with pytest.raises(KeyError, match="'arena_byte' is not declared in sdk/build_info.py"):
        to_json({"name": "net", "arena_byte": 64})
    with pytest.raises(KeyError, match="'harness_sufix'"):
        check_keys({"name": "image", "image": True, "models": [{"name": "a", "harness_sufix": "_a"}]})


def test_a_compiled_manifest_holds_only_declared_keys_in_stage_order(tmp_path):
    subprocess.run([str(CLI), "compile", str(EXAMPLES / "digits_cnn.onnx"), "--board", "cortex-m7", "--profile",
                    "lite", "--calib", str(EXAMPLES / "digits_calib.npy"), "-o", str(tmp_path / "out")],
                   check=True, capture_output=True)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert set(manifest) <= KEYS
    # generation's keys first (the interface compiled into the library), then the compiler's
    keys = list(manifest)
    assert keys[:8] == ["name", "board", "arch", "precision", "arena_bytes", "inputs", "outputs", "weights"]
    assert keys.index("layers") < keys.index("profile") < keys.index("arena")
