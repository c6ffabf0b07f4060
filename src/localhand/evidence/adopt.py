"""A check the model ran is evidence too: a run given no check is graded by the project's check
the model ran, run again at the end under the check guard (``localhand.session.finish``).

The loop notes each command ``run_command`` ran (``ran_command``; a refused one ran nothing).
Among them, a command runs the project's check when it runs, at the workspace's top level:

- what ``--verify auto`` chooses (``localhand.evidence.project_checks``);
- a ``check*`` script there (``check.sh``, ``check_calc.py``), named in the task or not;
- a test runner: pytest, ``python -m pytest``, ``python -m unittest``, ``node --test``, and
  ``npm test`` (yarn, pnpm, bun), ``make test``, ``cargo test``, ``go test`` where the project's
  files say it is tested so.

What is adopted is the project's form of that check, as ``--verify auto`` runs it, never the
model's flags: ``pytest -k nothing`` and ``pytest --collect-only`` adopt ``python3 -m pytest -q``,
and ``echo pytest`` runs no check. A command that moved elsewhere first (``cd sub && pytest``)
is not the project's check. A check whose own files (``localhand.evidence.checkfiles``: the
script, the tests, their configuration) the run created or changed is never adopted: the
change tracker says which files changed, and the model's own test is the model's word.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from localhand.evidence.checkfiles import SECTIONED, CheckFiles, _family, _unwrapped
from localhand.evidence.checkguard import CheckGuard
from localhand.evidence.project_checks import BY_TOOL, PYTEST, detect_check, inside, script_command
from localhand.safety.risk.shellparse import TooDeep, parse
from localhand.safety.risk.shellsyntax import Command, Script
from localhand.types import ToolCall, ToolResult

UNITTEST = "python3 -m unittest"
_RAN = re.compile(
    r"^\[(?:Exit code -?\d+\.|Killed by |Timed out after |Stopped|The command's)", re.M
)
"""The shell tool's status line: the command ran (a refusal or a bad call has none)."""
_CHECK_SCRIPT = re.compile(r"checks?(?:[_.-].*)?", re.IGNORECASE)
"""``check``, ``check.sh``, ``check_calc.py``, ``checks-all.sh``; not ``checkout.sh``."""
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_PACKAGE_TOOLS = frozenset({"npm", "yarn", "pnpm", "bun"})


def ran_command(call: ToolCall, result: ToolResult) -> str | None:
    """The command of a ``run_command`` call that ran, or None (another tool, or refused)."""
    command = call.arguments.get("command")
    if call.name != "run_command" or not isinstance(command, str):
        return None
    return command if _RAN.search(result.content) else None


@dataclass(frozen=True, slots=True)
class Adoption:
    """The check adopted (None: none), and why a check the model ran was not, if one was not."""

    command: str | None = None
    refused: str | None = None


def adopt(ran: Sequence[str], workspace: Path, task: str, guard: CheckGuard) -> Adoption:
    """The project's check among the commands the model ``ran`` (see the module docstring):
    the one ``--verify auto`` chooses first, else the last one run; a check whose own files
    the run changed is passed over, and the first so passed over said why."""
    found = detect_check(workspace, task)
    auto = found.command if found is not None else None
    known = {*guard.commands, auto}
    forms = list(dict.fromkeys(f for c in reversed(ran) if (f := check_form(c, workspace, auto))))
    forms.sort(key=lambda form: form not in known)  # stable: the last one run first
    refused: str | None = None
    for form in forms:
        touched = _touched(form, workspace, guard)
        if not touched:
            return Adoption(form, refused)
        refused = refused or (
            f"the check the model ran, `{form}`, was not adopted to grade the run: the run "
            f"created or changed its own files ({', '.join(touched)})"
        )
    return Adoption(None, refused)


def _touched(command: str, workspace: Path, guard: CheckGuard) -> list[str]:
    """The check files of ``command`` the run created, changed or deleted; where that cannot
    be told, what stands in the way (the check is then not adopted either)."""
    modified = guard.modified()
    if modified is None:
        return ["the workspace's starting point could not be taken"]
    kept = command in guard.commands  # kept at the start: the guard compares test parts
    compared = set(guard.changed_files()) if kept else set()
    files = CheckFiles.of([command]).inside(workspace)
    touched = [
        path
        for path in modified
        if (files.holds(path) or files.shadows(path))
        and not (kept and os.path.basename(path) in SECTIONED and path not in compared)
    ]
    if not kept:  # code under ignored folders that checks run: only a kept check lays it back
        touched += guard.sensitive_changes(())
    return touched


def check_form(command: str, workspace: Path, auto: str | None = None) -> str | None:
    """The project's form of the check ``command`` runs in ``workspace`` (``auto``: the
    command ``--verify auto`` chooses), or None when it runs none there."""
    try:
        script = parse(command)
    except (TooDeep, RecursionError):
        return None
    for cmd in _simple(script):
        words = _unwrapped([word.text for word in cmd.words if not word.leading_dynamic])
        if not words:
            continue
        if os.path.basename(words[0]) in ("cd", "pushd"):
            if _elsewhere(words[1:2], workspace):
                return None  # what follows runs in another folder
            continue
        form = _form(words, workspace, auto)
        if form is not None:
            return form
    return None


def _simple(script: Script) -> Iterator[Command]:
    """The simple commands of ``script`` in order, those of ``( … )`` and ``{ … }`` included."""
    for pipeline in script.pipelines:
        for cmd in pipeline.commands:
            yield from _simple(cmd.body) if cmd.body is not None else (cmd,)


def _elsewhere(target: list[str], workspace: Path) -> bool:
    if not target or target[0] == "-":
        return True  # home, or the folder before: not the workspace
    try:
        return (workspace / target[0]).resolve() != workspace.resolve()
    except (OSError, RuntimeError):
        return True


def _form(words: list[str], workspace: Path, auto: str | None) -> str | None:
    program, args = _family(os.path.basename(words[0])), words[1:]
    operands = [arg for arg in args if not arg.startswith("-")]
    if program in ("pytest", "py.test"):
        return PYTEST
    if program in ("python", "python3"):
        return _python(args, workspace, auto)
    if program == "node" and "--test" in args:
        return "node --test"
    if program in _SHELLS or program == "node":
        return None if "-c" in args or "-e" in args else _script(operands[:1], workspace, auto)
    if "/" in words[0]:
        return _script(words[:1], workspace, auto)
    tool = "npm" if program in _PACKAGE_TOOLS else "make" if program == "gmake" else program
    asks = operands[:1] in (["test"], ["t"]) or operands[:2] == ["run", "test"]
    if tool in BY_TOOL and (asks or (tool == "make" and "test" in operands)):
        found = BY_TOOL[tool](workspace)
        return found.command if found is not None else None
    return None


def _python(args: list[str], workspace: Path, auto: str | None) -> str | None:
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg == "-m":
            module, rest = args[position : position + 1], args[position + 1 :]
            if module == ["unittest"]:
                return _unittest(rest, workspace)
            return PYTEST if module == ["pytest"] else None
        if arg in ("-c", "-"):
            return None  # inline code: no script to adopt
        if arg in ("-W", "-X"):
            position += 1  # its value
        elif not arg.startswith("-"):
            return _script([arg], workspace, auto)
    return None


def _unittest(args: list[str], workspace: Path) -> str:
    """``python3 -m unittest``, or its discovery from a top-level folder the model named (a
    whole folder: never its ``-p``/``-k`` patterns nor single tests)."""
    if args[:1] != ["discover"]:
        return UNITTEST
    rest = args[1:]
    start = next((rest[i + 1] for i, a in enumerate(rest[:-1]) if a in ("-s", "--start-directory")),
                 next((a for a in rest if not a.startswith("-")), ""))  # fmt: skip
    folder = os.path.normpath(start.removeprefix("./")) if start else ""
    if not folder or "/" in folder or folder.startswith(".") or not (workspace / folder).is_dir():
        return UNITTEST
    return f"{UNITTEST} discover -s {shlex.quote(folder)}"


def _script(operand: list[str], workspace: Path, auto: str | None) -> str | None:
    """How ``--verify auto`` runs the script ``operand`` names, when it is the project's check:
    a ``check*`` script at the top level, or the one the task names."""
    if not operand:
        return None
    name = operand[0]
    root = str(workspace.resolve())
    if os.path.isabs(name) and name.startswith(root + os.sep):
        name = name[len(root) + 1 :]
    name = os.path.normpath(name.removeprefix("./"))
    path = inside(workspace, name)
    try:
        command = script_command(path, name) if path is not None and path.is_file() else None
    except OSError:
        return None
    top_level = "/" not in name and _CHECK_SCRIPT.fullmatch(name) is not None
    return command if command is not None and (top_level or command == auto) else None


__all__ = ["Adoption", "adopt", "check_form", "ran_command"]
