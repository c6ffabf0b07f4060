"""The package's shape, as issue 20 set it: a short top level, small modules, no import cycle.

Imports are read from the source (every ``import``, also those inside functions, which run
as surely as the others; not those under ``if TYPE_CHECKING:``, which never run). A name
imported from a package that re-exports it lazily counts as an import of the submodule that
defines it, since that is what runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import localhand

PACKAGE = Path(localhand.__file__).parent
MAX_TOP_LEVEL_MODULES = 12
MAX_MODULE_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def lazy_map(tree: ast.Module) -> dict[str, str]:
    """Each name of a package's ``_LAZY = {"submodule": "Name Other"}`` and its submodule, if
    the package has one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return {name: module for module, names in value.items() for name in names.split()}
    return {}


TREES = {name: ast.parse(path.read_text()) for name, path in MODULES.items()}
LAZY = {name: lazy_map(tree) for name, tree in TREES.items()}


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                pending.extend(child.orelse)
                continue
            pending.append(child)
    return found


def target(package: str, name: str) -> str:
    """The module that ``from package import name`` runs."""
    if f"{package}.{name}" in MODULES:
        return f"{package}.{name}"
    where = LAZY.get(package, {}).get(name)
    return f"{package}.{where}" if where else package


def imports_of(module: str) -> set[str]:
    edges: set[str] = set()
    for node in runtime_nodes(TREES[module]):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
            edges.update(target(node.module, a.name) for a in node.names)
    edges.discard(module)
    return edges


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others() -> None:
    graph = {name: imports_of(name) for name in MODULES}
    assert cycles(graph) == []


def test_the_top_level_is_short() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_is_long() -> None:
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    long = {name: n for name, n in lines.items() if n > MAX_MODULE_LINES}
    assert long == {}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def uncommented_function_imports(tree: ast.Module, lines: list[str]) -> list[int]:
    """The lines of imports inside functions that do not say why they are there (a comment on
    the import's first or last line, or on the line above it)."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                said = (lines[node.lineno - 1], lines[node.end_lineno - 1])  # type: ignore[index]
                above = lines[node.lineno - 2].strip()
                if not any("#" in line for line in said) and not above.startswith("#"):
                    found.append(node.lineno)
    return sorted(set(found))


def test_an_import_inside_a_function_says_why() -> None:
    """Imports run down the floors at the top of a module; one inside a function defers an
    optional dependency or a part kept off the path to a run's first request, and says so."""
    silent = {
        f"{name}:{line}"
        for name, path in MODULES.items()
        if "evals.suite" not in name
        for line in uncommented_function_imports(TREES[name], path.read_text().splitlines())
    }
    assert silent == set()


def test_a_silent_import_in_a_function_is_found() -> None:
    source = "def f():\n    import json\n\n\ndef g():\n    import csv  # only for g\n"
    assert uncommented_function_imports(ast.parse(source), source.splitlines()) == [2]
