#!/usr/bin/env bash
# Quick start, command 2: set up, then run the whole test suite (unit tests in tests/,
# board tests that build and run under QEMU in board_tests/). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests reach tools as the product does: the SDK's own environment first, then the system's.
export PATH="$PWD/.venv/bin:$PATH"
# Most tests drive one single-threaded tool at a time (gcc, QEMU), so pytest-xdist runs them on
# one worker per core (CUVIL_TEST_WORKERS overrides: a number, or 0 for one process). A test
# file stays on one worker (--dist loadfile): its module fixtures build once.
workers="${CUVIL_TEST_WORKERS:-auto}"
# pytest exits 5 when it collects nothing: that is a failure here, and so is any other non-zero.
# Test files or folders given as arguments are run alone; without any, pyproject's testpaths
# (tests and board_tests) are.
exec .venv/bin/python -m pytest -q -ra -n "$workers" --dist loadfile "$@"
