"""Time to write a model's sources (C text and the weight blob) and to compile them.

usage: bench_weights.py MODEL [--board host] [--profile standard] [--calib random|FILE]
                        [--weights linked|region|file] [-j N] [--keep DIR]

Runs the compile pipeline of whichever cuvil_sdk this Python imports (so the same script
measures another checkout: run it with that checkout's .venv/bin/python), timing apart:
  front    frontend, passes, quantization (calibration), arena plan and kernel lowering;
  write    rendering the sources and writing them (C text; the weight blob where there is one);
  compile  SCons, the C compiler and linker (-j N);
and prints the bytes of the generated sources, of the weight blob, and of the artifact, the
peak memory of this process and of its biggest child (the compiler). Figures, not assertions.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import cuvil_sdk.compiler as compiler
import cuvil_sdk.codegen.emit as emit
from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.project import assemble_project
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.scons_build import run_scons

MIB = 1 << 20


def timed_generate(times: dict[str, float]):
    """emit.generate with its wall time recorded (render + write of every source)."""
    generate = emit.generate

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return generate(*args, **kwargs)
        finally:
            times["write"] = time.perf_counter() - start
    return wrapper


def request(args: argparse.Namespace) -> compiler.CompileRequest:
    options = {}
    if args.weights and "weights" in compiler.CompileRequest.__dataclass_fields__:
        options["weights"] = args.weights
    return compiler.CompileRequest(model=Path(args.model).resolve(), board=get_board(args.board),
                                   profile=get_profile(args.profile), calib=args.calib, **options)


def measure(args: argparse.Namespace, out: Path) -> dict:
    times: dict[str, float] = {}
    compiler.generate = timed_generate(times)
    req = request(args)
    start = time.perf_counter()
    info = compiler.compile_model(req, out)
    assemble_project(req.board, out, info)
    emit.dump_manifest(info, out)
    times["front"] = time.perf_counter() - start - times["write"]
    start = time.perf_counter()
    run_scons(out, req.board, args.jobs)
    times["compile"] = time.perf_counter() - start
    sources = sum(p.stat().st_size for p in (out / "src").rglob("*") if p.is_file() and p.suffix != ".weights")
    blobs = sum(p.stat().st_size for p in (out / "src").glob("*.weights"))
    artifact = sum(p.stat().st_size for p in (out / "build").iterdir() if p.is_file() and p.suffix in (".so", ".elf"))
    return {**times, "source_bytes": sources, "blob_bytes": blobs, "artifact_bytes": artifact,
            "weight_bytes": info["weight_bytes"], "placement": (info.get("weights") or {}).get("placement", "(C text)"),
            "peak_self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_child_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--board", default="host")
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--calib", default=None, help="random or a file (QDQ models need none)")
    ap.add_argument("--weights", default=None, help="placement (checkouts that have --weights)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="build here instead of a temporary folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-weights-") as tmp:
        out = args.keep or Path(tmp) / "project"
        out.mkdir(parents=True, exist_ok=False)
        r = measure(args, out)
    where = Path(compiler.__file__).parent
    print(f"{Path(args.model).name} on {args.board} ({r['placement']}, cuvil_sdk from {where}):")
    print(f"  front {r['front']:.1f} s; write sources {r['write']:.2f} s ({r['source_bytes'] / MIB:.2f} MiB of "
          f"C/headers, {r['blob_bytes'] / MIB:.2f} MiB of blob); compile {r['compile']:.1f} s; artifact "
          f"{r['artifact_bytes'] / MIB:.2f} MiB (weights {r['weight_bytes'] / MIB:.2f} MiB)")
    print(f"  peak memory: this process {r['peak_self_mib']:.0f} MiB, biggest child {r['peak_child_mib']:.0f} MiB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
