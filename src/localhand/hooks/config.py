"""The ``[hooks]`` table of the user's own ``config.toml``, read into plain data::

    [hooks]
    timeout_s = 30                      # each hook's time limit, unless it gives its own
    [[hooks.post_edit]]
    command = "ruff check {path}"       # {path}: "$LOCALHAND_PATH", never the path's text
    path = "*.py"                       # only for calls whose path argument matches

Each ``[[hooks.KIND]]`` (``pre_tool``, ``post_tool``, ``post_edit``, ``stop``) is one hook:
``command`` (required), ``match`` (a tool-name regex or glob), ``path`` (a glob on the call's
``path`` argument) and ``timeout_s``. A mistake is a ``ConfigError`` naming the key and the
file, never a traceback. Where hooks may come from (the user's file only) is
``localhand.config.settings``'s business.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError, positive_seconds
from localhand.hooks.placeholders import PLACEHOLDERS, SingleQuoted, expanded

KINDS = ("pre_tool", "post_tool", "post_edit", "stop")
"""When a hook runs: before a tool call (exit 2 blocks it), after one, after a successful
edit or write, and when the run ends."""
EDIT_TOOLS = frozenset(("write_file", "edit_file"))
"""The tools after whose success ``post_edit`` hooks run."""
DEFAULT_TIMEOUT_S = 30.0
_HOOK_KEYS = ("command", "match", "path", "timeout_s")


@dataclass(frozen=True, slots=True)
class Hook:
    """One command the user asked to run at one kind of moment of a run."""

    kind: str
    """``pre_tool``, ``post_tool``, ``post_edit`` or ``stop``."""
    command: str
    """A bash command; ``{path}`` and ``{tool}`` stand for the call's, as references to
    ``LOCALHAND_PATH`` and ``LOCALHAND_TOOL`` (``localhand.hooks.placeholders``)."""
    match: str | None = None
    """Tool names it runs for: a regex (``edit_file|write_file``) or a glob (``*_file``);
    None: every tool."""
    path: str | None = None
    """A glob on the call's ``path`` argument (``*.py``, ``src/*``); None: any call, with a
    path or without."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Seconds it may take before it is killed (recorded as timed out)."""

    def applies(self, tool: str, path: str | None) -> bool:
        """Whether this hook runs for a call of ``tool`` on ``path``."""
        if self.match is not None and not _name_matches(self.match, tool):
            return False
        if self.path is None:
            return True
        return path is not None and fnmatch.fnmatchcase(path.removeprefix("./"), self.path)


def _name_matches(pattern: str, tool: str) -> bool:
    if fnmatch.fnmatchcase(tool, pattern):
        return True
    try:
        return re.fullmatch(pattern, tool) is not None
    except re.error:  # a glob that is no regex (``*_file``)
        return False


def hooks_from_toml(table: Any, path: str | Path) -> tuple[Hook, ...]:
    """The hooks of a ``[hooks]`` table read from the file ``path``."""
    where = f"in {path}"
    if not isinstance(table, dict):
        raise ConfigError(f"hooks {where} must be a table: [hooks] with [[hooks.post_edit]] ...")
    unknown = sorted(set(table) - {*KINDS, "timeout_s"})
    if unknown:
        raise ConfigError(
            f"unknown key hooks.{unknown[0]} {where}; [hooks] takes timeout_s and "
            f"[[hooks.KIND]] tables, KIND one of {', '.join(KINDS)}"
        )
    default = positive_seconds(
        table.get("timeout_s"), DEFAULT_TIMEOUT_S, f"hooks.timeout_s {where}"
    )
    hooks: list[Hook] = []
    for kind in KINDS:
        entries = table.get(kind, [])
        if isinstance(entries, dict):  # [hooks.stop] rather than [[hooks.stop]]: one hook
            entries = [entries]
        if not isinstance(entries, list):
            raise ConfigError(f"hooks.{kind} {where} must be [[hooks.{kind}]] tables")
        for number, entry in enumerate(entries, 1):
            hooks.append(_hook(kind, entry, f"hooks.{kind}[{number}]", where, default))
    return tuple(hooks)


def _hook(kind: str, entry: Any, name: str, where: str, default: float) -> Hook:
    if not isinstance(entry, dict):
        raise ConfigError(f'{name} {where} must be a table with command = "..."')
    unknown = sorted(set(entry) - set(_HOOK_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown key {name}.{unknown[0]} {where}; a hook takes {', '.join(_HOOK_KEYS)}"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(
            f'{name}.command {where} must be a command line, e.g. "ruff check {{path}}"'
        )
    if "\0" in command:
        raise ConfigError(f"{name}.command {where} holds a NUL byte, which bash cannot take")
    try:
        expanded(command)
    except SingleQuoted as quoted:
        (placeholder,) = quoted.args
        raise ConfigError(
            f"{name}.command {where} puts {placeholder} inside single quotes, where it cannot "
            f"expand (localhand passes it as the variable {PLACEHOLDERS[placeholder]}, never as "
            f"text a file name could run code from): write it bare or in double quotes, e.g. "
            f'"ruff check {placeholder}" or "echo \\"{placeholder}\\""'
        ) from None
    match = _text(entry.get("match"), f"{name}.match", where)
    if match is not None:
        try:
            re.compile(match)
        except re.error:
            if not any(c in match for c in "*?["):
                raise ConfigError(
                    f"{name}.match = {match!r} {where} is neither a regex nor a glob of tool "
                    'names; e.g. "edit_file|write_file" or "*_file"'
                ) from None
    if kind == "stop" and (match is not None or "path" in entry):
        raise ConfigError(
            f"{name} {where}: a stop hook runs once per run; it takes no match or path"
        )
    timeout = positive_seconds(entry.get("timeout_s"), default, f"{name}.timeout_s {where}")
    return Hook(kind, command, match, _text(entry.get("path"), f"{name}.path", where), timeout)


def _text(value: Any, name: str, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{name} {where} must be a non-empty string")
    return value


__all__ = ["DEFAULT_TIMEOUT_S", "EDIT_TOOLS", "KINDS", "Hook", "hooks_from_toml"]
