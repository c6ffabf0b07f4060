"""How a project is tested, told from its files: the command ``--verify auto`` runs, and the
one an ``unverified`` Result suggests.

A tool-loop run with no checks cannot show that its work is right, so it ends ``unverified``
(see ``localhand.evidence.verify.grade``). Most projects say how they are tested; this module reads
that, in this order (the first that applies wins):

1. a ``check*`` script the task names in its text (``check_calc.py``, ``scripts/check.sh``)
   that exists in the workspace: ``python3``/``sh``/``node`` by its suffix, else run directly;
2. a Makefile with a ``test:`` target: ``make test`` (the project's own entry point, which
   usually wraps the language's runner);
3. ``package.json`` whose ``scripts.test`` is not npm's placeholder: ``npm test``;
4. ``Cargo.toml``: ``cargo test``;
5. ``go.mod``: ``go test ./...``;
6. pytest: its configuration (``pytest.ini``, ``pytest.toml``, ``[tool.pytest.ini_options]``
   or ``[tool.pytest]`` in ``pyproject.toml``, ``[pytest]`` in ``tox.ini``, ``[tool:pytest]``
   in ``setup.cfg``), a ``conftest.py``, or test files (``test_*.py``, ``*_test.py``) at the
   top or in ``tests/``/``test/``: ``python3 -m pytest -q``.

Only the workspace's top level is read (and ``tests/``/``test/``): a project tested from a
sub-folder needs ``--verify "COMMAND"``. Commands are built from names, never copied from the
task's text, so a task cannot smuggle a command in through a file name.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from localhand.errors import ConfigError
from localhand.evidence.checkfiles import PYTEST_NAME, package_scripts
from localhand.evidence.verify import Check, CommandCheck

AUTO = "auto"
"""The verify command that stands for "the command this project is tested with"."""

NPM_PLACEHOLDER = "no test specified"
"""What ``npm init`` writes into ``scripts.test``: a script that always fails."""

_NAMED_SCRIPT = re.compile(r"(?<![\w.-])((?:[\w.-]+/)*check[\w.-]*)", re.IGNORECASE)
_MAKE_TEST = re.compile(r"^(?:[\w.-]+[ \t]+)*test(?:[ \t]+[\w.-]+)*[ \t]*:(?!=)", re.MULTILINE)
"""A rule whose targets include ``test`` (``test:``, ``test lint:``, ``test::``), not an
assignment (``test := 1``)."""
_RUNNERS = {".py": "python3", ".sh": "sh", ".bash": "bash", ".js": "node", ".mjs": "node"}


@dataclass(frozen=True, slots=True)
class ProjectCheck:
    """A command that checks the project, and what it was told from."""

    command: str
    source: str
    """Where it came from, in words: ``"Cargo.toml"``, ``"the task names check_calc.py"``."""


def detect_check(workspace: Path, task: str = "") -> ProjectCheck | None:
    """The command that tests the project in ``workspace`` (see the module docstring), or
    ``None`` when its files do not say. Never raises for what is on disk: it runs as a run
    ends, where an odd file name (too long, unreadable) must not cost the run its Result."""
    detectors: tuple[Callable[[Path], ProjectCheck | None], ...] = (
        lambda ws: _named_script(ws, task),
        *BY_TOOL.values(),
        _pytest,
    )
    for detector in detectors:
        try:
            found = detector(workspace)
        except (OSError, ValueError):  # ENAMETOOLONG, EACCES, a NUL in a name
            continue
        if found is not None:
            return found
    return None


def resolve_auto(command: str, workspace: Path, task: str) -> str:
    """``command`` itself, or for ``auto`` the detected command; ``ConfigError`` saying what
    to do when nothing can be detected."""
    if command.strip() != AUTO:
        return command
    found = detect_check(workspace, task)
    if found is None:
        raise ConfigError(
            f"--verify auto: cannot tell how the project in {workspace} is tested (no check* "
            "script named in the task, Makefile test target, package.json test script, "
            "Cargo.toml, go.mod or pytest configuration/tests); name the command with "
            '--verify "COMMAND" (a task file: verify: ["COMMAND"])'
        )
    return found.command


class _Checked(Protocol):
    """What ``with_detected_checks`` reads of a task (``localhand.run.task.Task``, a floor up)."""

    @property
    def checks(self) -> tuple[Check, ...]: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def description(self) -> str: ...
    def with_changes(self: _T, **changes: Any) -> _T: ...


_T = TypeVar("_T", bound=_Checked)


def with_detected_checks(task: _T) -> _T:
    """``task`` with each ``auto`` verify command replaced by the command its workspace is
    tested with (``ConfigError`` when there is none to find). Every entry (``run --verify``,
    task files, batch lines, MCP, the dashboard) reaches the run through here."""
    if not any(isinstance(c, CommandCheck) and c.command.strip() == AUTO for c in task.checks):
        return task
    checks = tuple(
        replace(c, command=resolve_auto(c.command, task.workspace, task.description))
        if isinstance(c, CommandCheck)
        else c
        for c in task.checks
    )
    return task.with_changes(checks=checks)


def _named_script(workspace: Path, task: str) -> ProjectCheck | None:
    for match in _NAMED_SCRIPT.finditer(task):
        name = match.group(1).rstrip(".")
        if not Path(name).name.lower().startswith("check"):
            continue  # a folder called check*/ with another name inside
        command = script_at(workspace, name)
        if command is not None:
            return ProjectCheck(command, f"the task names {name}")
    return None


def script_at(workspace: Path, name: str) -> str | None:
    """How ``--verify auto`` runs the script ``name`` in ``workspace`` (``script_command``), or
    None when there is none there: outside it, missing, or a name the file system refuses."""
    path = inside(workspace, name)
    try:
        return script_command(path, name) if path is not None and path.is_file() else None
    except OSError:  # a name too long for the file system: not a script
        return None


def script_command(path: Path, name: str) -> str | None:
    """How ``--verify auto`` runs the script ``name`` at ``path``: by its suffix, else
    directly if executable; None when it is neither a known kind of script nor executable."""
    runner = _RUNNERS.get(path.suffix.lower())
    quoted = shlex.quote(name)
    if runner is not None:
        return f"{runner} {quoted}"
    if os.access(path, os.X_OK):
        return quoted if "/" in name else f"./{quoted}"
    return None


def inside(workspace: Path, name: str) -> Path | None:
    """``workspace / name`` when it stays inside the workspace (no ``..``, no symlink out)."""
    if name.startswith("/") or ".." in Path(name).parts:
        return None
    path = workspace / name
    try:
        path.resolve().relative_to(workspace.resolve())
    except (OSError, ValueError):
        return None
    return path


def _makefile(workspace: Path) -> ProjectCheck | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _read(workspace / name)
        if text is not None and _MAKE_TEST.search(text):
            return ProjectCheck("make test", f"{name} has a test target")
    return None


def _npm(workspace: Path) -> ProjectCheck | None:
    text = _read(workspace / "package.json")
    test = None if text is None else package_scripts(text).get("test")
    if not isinstance(test, str) or not test.strip() or NPM_PLACEHOLDER in test:
        return None
    return ProjectCheck("npm test", "package.json has a test script")


def _marker(workspace: Path, name: str, command: str) -> ProjectCheck | None:
    return ProjectCheck(command, name) if (workspace / name).is_file() else None


_PYTEST_CONFIG = (
    ("pytest.ini", ""),
    (".pytest.ini", ""),
    ("pytest.toml", ""),  # pytest 9's own TOML file
    ("pyproject.toml", "[tool.pytest"),  # [tool.pytest.ini_options], or pytest 9's [tool.pytest]
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)


BY_TOOL: dict[str, Callable[[Path], ProjectCheck | None]] = {
    "make": _makefile,
    "npm": _npm,
    "cargo": lambda workspace: _marker(workspace, "Cargo.toml", "cargo test"),
    "go": lambda workspace: _marker(workspace, "go.mod", "go test ./..."),
}
"""By tool, the checks ``--verify auto`` finds in this order after a named script."""
PYTEST = "python3 -m pytest -q"


def _pytest(workspace: Path) -> ProjectCheck | None:
    command = PYTEST
    for name, section in _PYTEST_CONFIG:
        text = _read(workspace / name)
        if text is not None and section in text:
            return ProjectCheck(command, f"pytest configuration in {name}")
    if (workspace / "conftest.py").is_file():
        return ProjectCheck(command, "conftest.py")
    for folder in (workspace, workspace / "tests", workspace / "test"):
        if _has_test_files(folder):
            where = "tests" if folder == workspace else f"tests in {folder.name}/"
            return ProjectCheck(command, f"pytest-style {where}")
    return None


def _has_test_files(folder: Path) -> bool:
    try:
        names = [entry.name for entry in os.scandir(folder) if entry.is_file()]
    except OSError:
        return False
    return any(re.fullmatch(PYTEST_NAME, name) for name in names)


def _read(path: Path, limit: int = 1_000_000) -> str | None:
    """A small text file's content, or ``None`` (missing, unreadable, a folder, too big)."""
    try:
        if not path.is_file() or path.stat().st_size > limit:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
