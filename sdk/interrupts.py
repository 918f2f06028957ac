"""Interrupts as users expect of a command: Ctrl-C or SIGTERM ends it with one line and exit
130 (interrupt) or 143 (terminate), no traceback, and the output folder's `.partial` staging copy
removed by the stage that made it (staging.StagedOutput), as on any other error. Used by the
console script (sdk/entry.py) and the CLI (sdk/cli.py); imports nothing of the SDK."""
from __future__ import annotations

import signal
import sys
import threading


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every `with` and `finally` cleans up as for
    Ctrl-C (a BaseException: `except Exception` handlers do not swallow it)."""


PENDING: list[BaseException] = []  # interrupts received, in order (see deferred_interrupts)


def on_sigterm(signum: int, frame: object) -> None:
    PENDING.append(Terminated())
    raise PENDING[-1]


def install_handlers() -> None:
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        signal.signal(signal.SIGTERM, on_sigterm)
        signal.signal(signal.SIGINT, on_sigint)


def on_sigint(signum: int, frame: object) -> None:
    PENDING.append(KeyboardInterrupt())
    raise PENDING[-1]


def record_only(signum: int, frame: object) -> None:
    PENDING.append(Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())


def defer_interrupts() -> None:
    """While Python imports the SDK (numpy, onnx: C extensions initialising), an exception raised
    from a signal handler can leave a half-initialised module behind (seen: a crash at exit).
    So interrupts there are only recorded; the caller ends cleanly once the imports are done."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, record_only)
        signal.signal(signal.SIGINT, record_only)


def swallowed() -> BaseException | None:
    """An interrupt raised where Python ignores exceptions (a __del__, a weakref callback) does
    not stop the command: the first one received, so the caller still reports it."""
    return PENDING[0] if PENDING else None


def interrupted_exit(exc: BaseException, as_json: bool) -> int:
    """The line and exit code of an interrupt (the shell's 128 + signal number)."""
    word, code = ("terminated", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
    print(f"cuvil-sdk: {word}", file=sys.stderr)
    if as_json:
        print(f'{{"error": "{word}", "exit_code": {code}}}')
    return code

