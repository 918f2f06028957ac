"""A compiler diagnostic in the copy of a plugin's kernel (src/kernels/<kernel>.h in the
generated project) pointed back at the user's own file and line.

The copy is the user's file verbatim (the same lines), or, for a `.h.j2` source, its
rendering for one node, whose lines are mapped back to the template's by aligning the two
texts (lines the template has verbatim map exactly; a line with a substituted value maps to
the template line it was rendered from). Nothing of this reaches the generated C: the
project keeps no path of the user's machine, and the rewriting happens only in the error
message.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from .kernel_files import PLUGIN_SOURCES, PluginSource, extension

# `src/kernels/<file>:<line>[:<column>]` as gcc and clang print it (relative to the project
# folder, which SCons runs in, or with the project's absolute path in front)
LOCATION = re.compile(r"(?P<folder>(?:[^\s:'\"`]*/)?src/kernels/)(?P<file>[A-Za-z_]\w*(?:\.\w+)+):(?P<line>\d+)"
                      r"(?::(?P<column>\d+))?")


def user_locations(text: str, project: Path) -> str:
    """`text` (compiler output) with every location in a plugin kernel's copy replaced by the
    location in the plugin's file; other locations are left as they are."""
    def replace(m: re.Match) -> str:
        copy = project / m["folder"] / m["file"]
        if copy.resolve().parent != (project / "src" / "kernels").resolve() or not copy.is_file():
            return m[0]
        source = plugin_source_of(copy)
        if source is None:
            return m[0]
        line, exact = source_line(source, copy.read_text(), int(m["line"]))
        # a column is only the user's where the line is the user's verbatim
        column = f":{m['column']}" if m["column"] and exact else ""
        return f"{shown(source.path)}:{line}{column}"
    return LOCATION.sub(replace, text)


def plugin_source_of(copy: Path) -> PluginSource | None:
    """The plugin source that `copy` was written from: same file name, same text."""
    text = copy.read_text()
    for (kernel_set, name), source in PLUGIN_SOURCES.items():
        if f"{name}{extension(kernel_set)}" == copy.name and source.text() == text:
            return source
    return None


def source_line(source: PluginSource, copied: str, line: int) -> tuple[int, bool]:
    """Line `line` (1-based) of the copy as a line of the user's file, and whether that line
    is the user's verbatim."""
    if not source.template:
        return line, True
    return template_line(source.path.read_text().splitlines(), copied.splitlines(), line)


def template_line(template: list[str], rendered: list[str], line: int) -> tuple[int, bool]:
    """The template line that rendered line `line` (1-based) comes from. Rendering drops the
    lines of block tags and comments, substitutes values in others and repeats loop bodies:
    aligned as sequences of lines, an unchanged line is matched exactly; a changed one is
    taken as the most similar template line of the changed stretch, in order."""
    index = line - 1
    matcher = difflib.SequenceMatcher(None, template, rendered, autojunk=False)
    for tag, t1, t2, r1, r2 in matcher.get_opcodes():
        if not r1 <= index < r2:
            continue
        if tag == "equal":
            return t1 + (index - r1) + 1, True
        if t1 == t2:  # rendered lines the template has nowhere (a loop's repetition): the line above
            return max(t1, 1), False
        return most_similar(template, rendered, t1, t2, r1, index) + 1, False
    return max(len(template), 1), False  # past the end (a diagnostic at the end of the file)


def most_similar(template: list[str], rendered: list[str], t1: int, t2: int, r1: int, index: int) -> int:
    """In a changed stretch (template lines t1..t2-1, rendered lines from r1), the template
    line for rendered line `index`: each rendered line takes the most similar template line
    from the one the line before it took (the same one again in a loop), so the stretch maps
    in order."""
    start = t1
    for r in range(r1, index + 1):
        start = max(range(start, t2), key=lambda t: difflib.SequenceMatcher(None, template[t], rendered[r]).ratio())
    return start


def shown(path: Path) -> str:
    """The user's file as they would type it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
