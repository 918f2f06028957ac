"""Finding the tools board tests need, the way the SDK finds them: executables on PATH,
and SCons as a module of this Python (the SDK runs `python -m SCons`, never `scons`)."""
from __future__ import annotations

import importlib.util
import shutil


def missing_tools(names: list[str]) -> list[str]:
    """The names in `names` that cannot be found here ("scons" means the SCons module)."""
    def found(name: str) -> bool:
        if name == "scons":
            return importlib.util.find_spec("SCons") is not None
        return shutil.which(name) is not None
    return [n for n in names if not found(n)]
