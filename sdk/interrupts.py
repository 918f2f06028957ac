"""Interrupts as users expect of a command: Ctrl-C or SIGTERM ends it with one line and exit
130 (interrupt) or 143 (terminate), no traceback, and the output folder's `.partial` staging copy
removed by the stage that made it (compiler.StagedOutput), as on any other error. Used by the
console script (sdk/entry.py) and the CLI (sdk/cli.py); imports nothing of the SDK."""
from __future__ import annotations

import signal
import sys
import threading


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every `with` and `finally` cleans up as for
    Ctrl-C (a BaseException: `except Exception` handlers do not swallow it)."""


def on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def install_handlers() -> None:
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        signal.signal(signal.SIGTERM, on_sigterm)


def interrupted_exit(exc: BaseException, as_json: bool) -> int:
    """The line and exit code of an interrupt (the shell's 128 + signal number)."""
    word, code = ("terminated", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
    print(f"cuvil-sdk: {word}", file=sys.stderr)
    if as_json:
        print(f'{{"error": "{word}", "exit_code": {code}}}')
    return code

