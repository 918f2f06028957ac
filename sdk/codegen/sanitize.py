"""The one way model strings reach C: identifiers made safe here, text as character codes."""
from __future__ import annotations

import hashlib
import json
import re

C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
}
# Header names a generated <name>.h would shadow: the project's src/ comes first on the include
# path (-Isrc), so a model named "string" would replace <string.h> for every file of the build.
HEADER_NAMES = {
    "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale", "math",
    "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbool", "stddef", "stdint", "stdio", "stdlib",
    "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar", "wctype", "cpuid", "dlfcn", "fcntl",
    "pthread", "sched", "unistd", "immintrin", "arm_neon", "arm_acle", "arm_mve", "arm_fp16", "cuda_fp16",
    "cuvil_common", "harness",
}
MAX_LEN = 40


def c_identifier(text: str) -> str:
    """A valid, lower-case C identifier derived from any string (never empty, no keyword, no
    name of a header it would shadow as a file name)."""
    ident = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower()
    ident = re.sub(r"_+", "_", ident)
    if len(ident) > MAX_LEN:
        ident = ident[:MAX_LEN - 9] + "_" + hashlib.sha1(text.encode()).hexdigest()[:8]
    if not ident or ident[0].isdigit() or ident in C_KEYWORDS or ident in HEADER_NAMES:
        ident = "m_" + ident
    return ident


class Namer:
    """Unique identifiers within one generated model."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, text: str) -> str:
        base = c_identifier(text)
        name, i = base, 1
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def c_char_codes(value: object, per_line: int = 24) -> list[str]:
    """A JSON document (ASCII only) as the lines of a C char array's initialiser: its character
    codes, then the terminating 0. Not a string literal: ISO C99 compilers need take literals of
    only 4095 characters (-Wpedantic: -Woverlength-strings), and a model's manifest is longer."""
    codes = [str(b) for b in json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")] + ["0"]
    return [", ".join(codes[i:i + per_line]) + ("," if i + per_line < len(codes) else "")
            for i in range(0, len(codes), per_line)]
