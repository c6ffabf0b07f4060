"""The floors of the house (docs/architecture.md, "The house, floor by floor"): every import
runs down, never up or sideways to another part on the same floor.

Every import counts: at the top of a module, inside a function (it runs as surely, only
later) and under ``if TYPE_CHECKING:`` (it does not run, but a type that needs a higher floor
is a sign the value lives on the wrong one). A part is a top-level module, a package, or one
of ``safety/``'s rooms, each of which guards one thing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import localhand

PACKAGE = Path(localhand.__file__).parent

FLOORS: list[tuple[str, ...]] = [
    # the ground: values every layer uses
    ("_version", "_lazy", "nesting", "types", "errors", "paths", "plugins", "testing"),
    ("events", "cancel"),
    # what a reply means, what a model family needs, and what a command is
    ("parsing", "profiles", "safety", "safety.secrets", "safety.risk"),
    ("safety.approval",),
    ("safety.box", "safety.trust"),
    ("safety.undo",),
    ("models", "tools"),
    ("prompt", "evidence"),
    ("run",),
    ("hooks", "mcp", "skills"),
    ("config",),
    ("telemetry", "store"),
    ("plan",),
    ("taskfile",),
    ("session",),
    # the doors
    ("replay", "batch", "dashboard", "mcp_server", "acp"),
    ("evals",),
    ("cli",),
    ("__init__", "__main__"),
]
FLOOR = {part: level for level, parts in enumerate(FLOORS) for part in parts}


def part_of(module: str) -> str:
    """``localhand.safety.box.sandbox`` → ``safety.box``; ``localhand.run.agent`` → ``run``."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    if parts[0] == "safety" and len(parts) > 1:
        return f"safety.{parts[1]}"
    return parts[0]


def module_of(path: Path, package: Path = PACKAGE) -> str:
    parts = ("localhand", *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 2 else parts)


def imported(tree: ast.Module) -> list[tuple[str, int]]:
    """Every localhand module a module names in an import, with the line."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("localhand")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "localhand" or node.module == "localhand.safety":
                found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
            elif node.module.startswith("localhand."):
                found.append((node.module, node.lineno))
    return found


def upward_imports(package: Path) -> list[str]:
    wrong = []
    for path in sorted(package.rglob("*.py")):
        if "evals/suite" in path.as_posix():  # the eval suite's fixture projects
            continue
        module = module_of(path, package)
        here = part_of(module)
        for name, line in imported(ast.parse(path.read_text())):
            there = part_of(name)
            if there == here or there not in FLOOR:
                continue
            if FLOOR[there] >= FLOOR[here]:
                wrong.append(f"{path.relative_to(package)}:{line} {here} imports {there}")
    return wrong


def test_every_part_has_a_floor() -> None:
    parts = {part_of(module_of(p)) for p in PACKAGE.rglob("*.py") if "evals/suite" not in str(p)}
    assert parts - FLOOR.keys() == set(), "give each new part a floor in FLOORS and the docs"


def test_imports_run_down() -> None:
    assert upward_imports(PACKAGE) == []


def test_an_import_up_a_floor_is_found(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "agent.py").write_text(
        "def later():\n    from localhand.session.door import Session\n"
    )
    (tmp_path / "types.py").write_text("from localhand.safety import box\n")
    assert upward_imports(tmp_path) == [
        "run/agent.py:2 run imports session",
        "types.py:1 types imports safety.box",
    ]


def test_the_floors_are_written_down() -> None:
    text = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    for part in FLOOR:
        if not part.startswith("_"):
            assert f"`{part.replace('.', '/')}" in text, f"{part} is not in docs/architecture.md"
