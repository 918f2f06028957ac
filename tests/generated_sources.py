"""The generated sources of every example model for every board, as digests: what
tests/test_generated_sources.py compares against tests/fixtures/generated_sources.json, the
digests recorded before the library-core restructuring (commit 5e1166a) by
`python tests/generated_sources.py --write`. A deliberate change to the generated C records
them anew (and says why in its commit).

Every file under the output folder counts: src/ (C sources, kernels, weight blobs), build.json,
manifest.json and cuda.json. Absolute paths (the package's own folder, the output folder)
become placeholders, so the digests hold in any checkout.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "sdk" / "examples"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "generated_sources.json"
MODELS = ("digits_cnn", "ad_fp32", "resnet8_fp32", "resnet8_qdq")
BOARDS = ("cortex-m7", "cortex-m7-app", "cortex-m7-portable", "cortex-m7-small", "nucleo-f767zi",
          "host", "host-portable", "host-cuda", "rpi5", "jetson", "jetson-xavier")
FIRMWARE = {"cortex-m7", "cortex-m7-app", "cortex-m7-portable", "cortex-m7-small", "nucleo-f767zi"}


def calib_of(model: str) -> list[str]:
    """Real samples for digits; seeded random calibration for the float models; none for QDQ."""
    if model == "digits_cnn":
        return ["--calib", str(EXAMPLES / "digits_calib.npy")]
    return [] if model.endswith("_qdq") else ["--calib", "random"]


def cases() -> dict[str, list[str]]:
    """case id -> `cuvil-sdk compile` arguments after the model (the output folder is added)."""
    out: dict[str, list[str]] = {}
    for model in MODELS:
        for board in BOARDS:
            profile = "lite" if board in FIRMWARE else "standard"
            out[f"{model}/{board}"] = [str(EXAMPLES / f"{model}.onnx"), "--board", board, "--profile", profile,
                                       *calib_of(model)]
    digits = [str(EXAMPLES / "digits_cnn.onnx")]
    calib = calib_of("digits_cnn")
    for board in ("host", "rpi5", "jetson"):
        out[f"digits_cnn/{board}/fp32"] = [*digits, "--board", board, "--profile", "standard", "--precision", "fp32"]
    for board in ("rpi5", "jetson"):
        out[f"digits_cnn/{board}/fp16"] = [*digits, "--board", board, "--profile", "standard", "--precision", "fp16"]
    variants = {"threads2": ["--board", "host", "--profile", "standard", "--threads", "2"],
                "weights-file": ["--board", "host", "--profile", "standard", "--weights", "file"],
                "nhwc": ["--board", "host", "--profile", "standard", "--input-layout", "nhwc", "--calib", "random"],
                "weight-layout-int16": ["--board", "cortex-m7", "--profile", "lite", "--weight-layout", "int16"],
                "weights-region": ["--board", "cortex-m7", "--profile", "lite", "--weights", "region"],
                "debug-name": ["--board", "rpi5", "--profile", "standard", "--name", "my-net"]}
    for variant, args in variants.items():
        out[f"digits_cnn/{variant}"] = [*digits, *args, *([] if "--calib" in args else calib)]
    return out


def digest_tree(out_dir: Path) -> dict[str, str]:
    """{path relative to out_dir: sha256 of its bytes, absolute paths made placeholders}."""
    from cuvil_sdk import PACKAGE_DIR
    marks = ((str(out_dir.resolve()).encode(), b"<out>"), (str(PACKAGE_DIR).encode(), b"<pkg>"))
    digests = {}
    for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for real, mark in marks:
            data = data.replace(real, mark)
        digests[path.relative_to(out_dir).as_posix()] = hashlib.sha256(data).hexdigest()
    return digests


def compile_case(args: list[str], out_dir: Path) -> dict[str, str]:
    """The digests of `cuvil-sdk compile ARGS -o out_dir`, run in this process; a refusal
    (a model too big for a small board) is recorded as its exit code and message."""
    from cuvil_sdk.cli import main
    with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
        code = main(["compile", *args, "-o", str(out_dir)])
    if code != 0:
        return {"refused": f"exit {code}: {err.getvalue().strip().splitlines()[-1]}"}
    return digest_tree(out_dir)


def record(tmp: Path) -> dict[str, dict[str, str]]:
    recorded = {}
    for case, args in cases().items():
        print(f"{case} ...", file=sys.stderr)
        recorded[case] = compile_case(args, tmp / case.replace("/", "_"))
    return recorded


def main() -> int:
    import tempfile
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write {FIXTURE.relative_to(ROOT)}")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        recorded = record(Path(tmp))
    text = json.dumps(recorded, indent=1, sort_keys=True) + "\n"
    if args.write:
        FIXTURE.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
