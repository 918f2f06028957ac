"""The `cuvil-sdk` console script: Ctrl-C or SIGTERM at any moment, even while Python is still
importing the SDK (a second or so on a slow machine), ends cleanly (sdk/interrupts.py)."""
from __future__ import annotations

import sys

from .interrupts import Terminated, install_handlers, interrupted_exit


def main() -> int:
    install_handlers()
    try:
        from .cli import main as cli_main
    except (KeyboardInterrupt, Terminated) as exc:
        return interrupted_exit(exc, "--json" in sys.argv[1:])
    return cli_main()
