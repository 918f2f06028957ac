"""The one way model strings reach C: identifiers and string literals made safe here."""
from __future__ import annotations

import hashlib
import json
import re

C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
}
MAX_LEN = 40


def c_identifier(text: str) -> str:
    """A valid, lower-case C identifier derived from any string (never empty, no keyword)."""
    ident = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower()
    ident = re.sub(r"_+", "_", ident)
    if len(ident) > MAX_LEN:
        ident = ident[:MAX_LEN - 9] + "_" + hashlib.sha1(text.encode()).hexdigest()[:8]
    if not ident or ident[0].isdigit() or ident in C_KEYWORDS:
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


def c_string_literal(value: object) -> list[str]:
    """A JSON document as C string-literal pieces: ASCII only, quotes, backslashes and
    question marks (trigraphs) escaped."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?")
    pieces = [text[i:i + 100] for i in range(0, len(text), 100)] or [""]
    # never split an escape sequence across pieces
    for i in range(len(pieces) - 1):
        while pieces[i].endswith("\\") and (len(pieces[i]) - len(pieces[i].rstrip("\\"))) % 2 == 1:
            pieces[i + 1] = pieces[i][-1] + pieces[i + 1]
            pieces[i] = pieces[i][:-1]
    return [f'"{p}"' for p in pieces]
