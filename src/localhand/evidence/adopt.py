"""A check the model ran is evidence too: a run given no check is graded by the project's check
the model ran, run again at the end under the check guard (``localhand.session.finish``).

The loop notes the commands ``run_command`` ran (``ran_command``: not those refused). One is the
project's check when, at the workspace's top level, it runs what ``--verify auto`` chooses, a
``check*`` script there, or a test runner (pytest, unittest, ``node --test``; ``npm test``,
``make test``, ``cargo test``, ``go test`` where the project's files say so). Its project's
form is adopted, never the model's flags (``pytest -k nothing`` adopts ``python3 -m pytest
-q``), and never a check whose own files (``localhand.evidence.checkfiles``) the run changed.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from localhand.evidence import checkfiles
from localhand.evidence.checkfiles import SECTIONED, CheckFiles
from localhand.evidence.checkguard import CheckGuard
from localhand.evidence.project_checks import BY_TOOL, PYTEST, detect_check, script_at
from localhand.safety.risk.shellparse import TooDeep, parse
from localhand.safety.risk.types import SHELLS
from localhand.types import ToolCall, ToolResult

UNITTEST = "python3 -m unittest"
Adopted = tuple[str | None, str | None]
_RAN = re.compile(r"(?m)^\[(?:Exit code -?\d+\.|Killed by |Timed out |Stopped|The command's)")
"""The shell tool's status line: the command ran (a refusal or a bad call has none)."""
_CHECK_SCRIPT = re.compile(r"checks?(?:[_.-].*)?", re.IGNORECASE)  # not checkout.sh


def ran_command(call: ToolCall, result: ToolResult) -> str | None:
    """The command of a ``run_command`` call that ran, or None (another tool, or refused)."""
    command = call.arguments.get("command")
    if call.name != "run_command" or not isinstance(command, str):
        return None
    return command if _RAN.search(result.content) else None


def adopt(ran: Sequence[str], workspace: Path, task: str, guard: CheckGuard) -> Adopted:
    """The project's check among the commands the model ``ran``: the one ``--verify auto``
    chooses first, else the last one run, passing over those whose own files the run changed;
    and why the first so passed over was not adopted (None: none was)."""
    found = detect_check(workspace, task)
    auto = found.command if found is not None else None
    forms = list(dict.fromkeys(f for c in reversed(ran) if (f := check_form(c, workspace, auto))))
    forms.sort(key=lambda form: form not in {*guard.commands, auto})  # stable: latest first
    refused = None
    for form in forms:
        if not (touched := _touched(form, workspace, guard)):
            return form, refused
        refused = refused or (
            f"the check the model ran, `{form}`, was not adopted to grade the run: the run "
            f"created or changed its own files ({', '.join(touched)})"
        )
    return None, refused


def _touched(command: str, workspace: Path, guard: CheckGuard) -> list[str]:
    """The check files of ``command`` the run changed (where that cannot be told, why)."""
    if (modified := guard.modified()) is None:
        return ["the workspace's starting point could not be taken"]
    kept = command in guard.commands  # kept from the start: the guard compares test parts
    compared = set(guard.changed_files()) if kept else set()
    files = CheckFiles.of([command]).inside(workspace)
    shadows = guard.shadows(modified, files)
    touched = [
        path
        for path in modified
        if (files.holds(path) or path in shadows)
        and not (kept and os.path.basename(path) in SECTIONED and path not in compared)
    ]  # what checks run under ignored folders: only a check kept from the start lays it back
    return touched if kept else touched + guard.sensitive_changes(())


def check_form(command: str, workspace: Path, auto: str | None = None) -> str | None:
    """The project's form of the check ``command`` runs in ``workspace`` (``auto``: the
    command ``--verify auto`` chooses), or None when it runs none there."""
    try:
        script = parse(command)
    except (TooDeep, RecursionError):
        return None
    for cmd in checkfiles._simple_commands(script):  # ( … ), { … }, $( … ) too
        words = checkfiles._unwrapped(cmd.words)
        if words and os.path.basename(words[0]) in ("cd", "pushd"):
            here = words[1:2] not in ([], ["-"]) and os.path.realpath(workspace / words[1])
            if here != os.path.realpath(workspace):
                return None  # what follows runs in another folder
        elif words and (form := _form(words, workspace, auto)) is not None:
            return form
    return None


def _form(words: list[str], workspace: Path, auto: str | None) -> str | None:
    program, args = checkfiles._family(os.path.basename(words[0])), words[1:]
    operands = [arg for arg in args if not arg.startswith("-")]
    if program in ("pytest", "py.test"):
        return PYTEST
    if program in ("python", "python3"):
        return _python(args, workspace, auto)
    if program == "node" and "--test" in args:
        return "node --test"
    if program in SHELLS or program == "node":
        return None if {"-c", "-e"} & set(args) else _script(operands[:1], workspace, auto)
    if "/" in words[0]:
        return _script(words[:1], workspace, auto)
    tool = (
        "npm" if program in checkfiles._PACKAGE_TOOLS else "make" if program == "gmake" else program
    )
    asks = operands[:1] in (["test"], ["t"]) or operands[:2] == ["run", "test"]
    if tool in BY_TOOL and (asks or (tool == "make" and "test" in operands)):
        found = BY_TOOL[tool](workspace)
        return found.command if found is not None else None
    return None


def _python(args: list[str], workspace: Path, auto: str | None) -> str | None:
    for position, arg in enumerate(args):
        if arg == "-m":
            module = args[position + 1 : position + 2]
            if module == ["unittest"]:
                return _unittest(args[position + 2 :], workspace)
            return PYTEST if module == ["pytest"] else None
        if arg in ("-c", "-"):
            return None  # inline code: no script to adopt
        if not arg.startswith("-") and args[position - 1 : position] not in (["-W"], ["-X"]):
            return _script([arg], workspace, auto)
    return None


def _unittest(args: list[str], workspace: Path) -> str:
    """Discovery in all of the top-level folder of the tests named (never their patterns)."""
    for arg in args:
        folder = arg.removeprefix("./").replace(".", "/").split("/")[0]
        if folder and not arg.startswith("-") and (workspace / folder).is_dir():
            return f"{UNITTEST} discover -s {shlex.quote(folder)}"
    return UNITTEST


def _script(operand: list[str], workspace: Path, auto: str | None) -> str | None:
    """How ``--verify auto`` runs the script named: a top-level ``check*`` or the task's."""
    if not operand:
        return None
    root = os.path.realpath(workspace)
    name = os.path.normpath(operand[0].removeprefix(root + os.sep).removeprefix("./"))
    command = script_at(workspace, name)
    top_level = "/" not in name and _CHECK_SCRIPT.fullmatch(name) is not None
    return command if command is not None and (top_level or command == auto) else None


__all__ = ["adopt", "check_form", "ran_command"]
