"""The import rules of sdk/ (docs/internals.md, "Package layout"), read from the source with `ast`:

- nothing below code generation imports it (ops, quant, ir, frontend, reference, passes,
  planner, kernels);
- the kernel contract (sdk/kernels) stands on the ground floor: it imports no stage above it;
- no import circle among the modules of sdk/;
- the Python API (sdk/api.py) imports no CLI: neither argparse nor cli/project_file.

Every import counts, the lazy ones inside functions included: a circle or a wrong-way import
that runs only on first use is still one. No toolchain is needed.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SDK = Path(__file__).resolve().parent.parent / "sdk"
PACKAGE = "cuvil_sdk"

BELOW_CODEGEN = ("ops", "quant", "ir", "frontend", "reference", "passes", "planner", "kernels")
KERNELS_MAY_IMPORT = ("kernels", "ir", "errors")  # the ground floor: the IR and the error types only
CLI_MODULES = ("cli", "project_file")


def module_name(path: Path) -> str:
    """`cuvil_sdk.ops.conv` for sdk/ops/conv.py, `cuvil_sdk.ops` for sdk/ops/__init__.py."""
    parts = list(path.relative_to(SDK).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def sdk_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SDK.rglob("*.py"))
            if "examples" not in p.relative_to(SDK).parts and "targets" not in p.relative_to(SDK).parts}


def resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute name a (possibly relative) `from ... import` refers to."""
    if level == 0:
        return module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file that names a module: `from . import x`
    resolves to the submodule x where there is one, else to the package."""
    found: list[tuple[str, int]] = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in modules else target, node.lineno))
    return list(dict.fromkeys(found))  # `from x import a, b`: x once


def sdk_import_graph() -> dict[str, list[tuple[str, int]]]:
    """Module -> the sdk modules it imports (with the line), every other import left out."""
    modules = sdk_modules()
    return {name: [(m, line) for m, line in imports_of(name, path, modules) if m in modules and m != name]
            for name, path in modules.items()}


def stage(module: str) -> str:
    """The top-level part of sdk/ a module belongs to: `ops` for cuvil_sdk.ops.conv."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def offences(importers: tuple[str, ...], refused) -> list[str]:
    """Imports by a module of the `importers` stages of a module whose stage `refused(stage)`
    is true, as `importer (line n) imports module`."""
    return [f"{importer} (line {line}) imports {module}"
            for importer, imported in sdk_import_graph().items() if stage(importer) in importers
            for module, line in imported if refused(stage(module))]


def test_nothing_below_codegen_imports_it():
    found = offences(BELOW_CODEGEN, lambda s: s == "codegen")
    assert not found, "below code generation, an import of it:\n" + "\n".join(found)


def test_kernels_import_no_stage_above():
    found = offences(("kernels",), lambda s: s not in KERNELS_MAY_IMPORT)
    assert not found, "sdk/kernels imports a stage above it:\n" + "\n".join(found)


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None (depth-first search, iterative)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_no_import_circle():
    graph = {m: sorted({i for i, _ in imported}) for m, imported in sdk_import_graph().items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_api_imports_no_cli():
    modules = sdk_modules()
    api = f"{PACKAGE}.api"
    offences = [f"{api} (line {line}) imports {m}" for m, line in imports_of(api, modules[api], modules)
                if m == "argparse" or m.startswith("argparse.") or stage(m) in CLI_MODULES]
    assert not offences, "the API imports the CLI:\n" + "\n".join(offences)


@pytest.mark.parametrize("source, expected", [
    ("from ..codegen import emit\n", "cuvil_sdk.codegen.emit"),
    ("from ..codegen.lowering import c_float\n", "cuvil_sdk.codegen.lowering"),
    ("def f():\n    import cuvil_sdk.codegen.emit\n", "cuvil_sdk.codegen.emit"),
])
def test_imports_are_read_in_every_form(tmp_path, source, expected):
    """The reader sees relative, absolute and lazy imports, and `from . import x` as the submodule."""
    fake = tmp_path / "conv.py"
    fake.write_text(source)
    modules = sdk_modules()
    assert expected in [m for m, _ in imports_of("cuvil_sdk.ops.conv", fake, modules)]
