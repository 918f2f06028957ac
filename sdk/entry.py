"""The `cuvil-sdk` console script: Ctrl-C or SIGTERM at any moment, even while Python is still
importing the SDK (a second or so on a slow machine), ends cleanly (sdk/interrupts.py)."""
from __future__ import annotations

import sys

from .interrupts import defer_interrupts, interrupted_exit, swallowed


def main() -> int:
    as_json = "--json" in sys.argv[1:]
    defer_interrupts()
    from .cli import main as cli_main
    if swallowed() is not None:  # received during the imports: nothing was done yet
        return interrupted_exit(swallowed(), as_json)
    code = cli_main()  # installs the handlers that raise, so the work's `with` blocks clean up
    if code == 0 and swallowed() is not None:  # raised where Python ignored it: still say so
        return interrupted_exit(swallowed(), as_json)
    return code
