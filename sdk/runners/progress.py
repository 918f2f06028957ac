"""A one-line progress counter on stderr, shown only when asked (a terminal)."""
from __future__ import annotations

import sys


class Progress:
    def __init__(self, label: str, total: int, enabled: bool) -> None:
        self.label, self.total, self.enabled, self.done = label, total, enabled, 0

    def __enter__(self) -> "Progress":
        return self

    def step(self) -> None:
        self.done += 1
        if self.enabled:
            print(f"\r{self.label} {self.done}/{self.total}", end="", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.enabled and self.done:
            print(file=sys.stderr)
