#!/usr/bin/env python3
"""The whole drop-in flag matrix, by hand (CI runs a covering subset of it in
board_tests/test_dropin_c.py, to stay within its time): every example model's generated
sources for cortex-m7, host and rpi5 (and their portable variants), each precision, compiled
with -Wall -Wextra -Werror at -O0, -Og, -Os, -O2 and -O3, with and without
-fno-omit-frame-pointer, as C99, C11, C++11, C++14 and C++17, with only the board's machine
flags. The weights file (constant data only) is compiled once per standard.

    .venv/bin/python scripts/full_flag_matrix.py        # prints failures and a count; exit 1 on any
"""
from __future__ import annotations

import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "board_tests"))

import test_dropin_c as t  # noqa: E402  (the test's own generation and compiler invocation)
from cuvil_sdk.boards import get_board  # noqa: E402

OPT_LEVELS = ("-O0", "-Og", "-Os", "-O2", "-O3")
FRAME_POINTER = ((), ("-fno-omit-frame-pointer",))


def full_variants() -> list:
    out = []
    for std in t.STDS:
        for opt in OPT_LEVELS:
            for fp in FRAME_POINTER:
                out.append(t.Variant(std, (opt, *fp), weights=(opt == "-O0" and not fp)))
    return out


def main() -> int:
    configs = t.CONFIGS
    variants = full_variants()
    failures, runs = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, config in enumerate(configs):
            folder = Path(tmp) / f"c{i}"
            folder.mkdir()
            src = t.generate(config, folder)
            board = get_board(config.board)
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                results = list(pool.map(lambda iv: t.compile_sources(src, board, iv[1], folder / f"o{iv[0]}"),
                                        enumerate(variants)))
            for variant, r in zip(variants, results):
                runs += 1
                if r.returncode != 0 or r.stderr.strip():
                    failures.append(f"{config.key} {variant.label}: {t.first_lines(r.stderr, 3)}")
            print(f"{config.key}: {len(variants)} invocations, {sum(r.returncode != 0 for r in results)} failed",
                  flush=True)
    for f in failures:
        print("FAILED", f)
    print(f"{runs - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
