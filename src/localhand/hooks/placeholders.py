"""``{path}`` and ``{tool}`` in a hook's command: references to variables, never the text.

The path is the model's choice, so its text never enters the command line: no quoting of it
survives every place a placeholder may stand (in double quotes the shell still runs a
``$(...)``). The hook gets it in ``LOCALHAND_PATH`` (the tool in ``LOCALHAND_TOOL``), and each
placeholder becomes a reference quoted for its place: ``"${LOCALHAND_PATH}"`` bare (no word
splitting, no glob), ``${LOCALHAND_PATH}`` in double quotes. In single quotes nothing expands:
``expanded`` raises ``SingleQuoted``, and the configuration is refused.
"""

from __future__ import annotations

import re

PATH_VARIABLE = "LOCALHAND_PATH"
TOOL_VARIABLE = "LOCALHAND_TOOL"
PLACEHOLDERS = {"{path}": PATH_VARIABLE, "{tool}": TOOL_VARIABLE}
_SINGLE = re.compile(r"\$'(?:\\.|[^'\\])*'?|'[^']*'?", re.DOTALL)
"""Single-quoted text (``'...'``, ``$'...'``), to its closing quote or the end."""
_WORD_START = " \t\n;&|()"
"""What may stand before a ``#`` that begins a comment."""


class SingleQuoted(ValueError):
    """A placeholder (its only argument) inside single quotes, where no variable expands."""


def expanded(command: str) -> str:
    """``command`` with each placeholder replaced by a reference to its variable, quoted for
    where it stands. Nested command substitutions (``$(...)``, backticks) and subshells
    start unquoted again, as bash reads them. ``SingleQuoted`` for one inside ``'...'`` or
    ``$'...'``."""
    out: list[str] = []
    frames = ["cmd"]  # "cmd": unquoted (top, subshell, $(...)); '"': double; "`": backticks
    i = 0
    while i < len(command):
        frame = frames[-1]
        placeholder = next((p for p in PLACEHOLDERS if command.startswith(p, i)), None)
        if placeholder is not None:
            variable = "${" + PLACEHOLDERS[placeholder] + "}"
            out.append(variable if frame == '"' else f'"{variable}"')
            i += len(placeholder)
            continue
        char = command[i]
        step = 1
        if char == "\\":
            step = 2
        elif frame != '"' and (quoted := _SINGLE.match(command, i)):
            step = quoted.end() - i
            for name in PLACEHOLDERS:
                if name in quoted.group():
                    raise SingleQuoted(name)
        elif frame != '"' and char == "#" and (i == 0 or command[i - 1] in _WORD_START):
            end = command.find("\n", i)  # a comment: nothing in it runs
            step = (len(command) if end < 0 else end) - i
        elif command.startswith("$(", i):
            frames.append("cmd")
            step = 2
        elif char in ('"', "`"):  # the same mark closes what it opened, else opens its own
            if frame == char:
                frames.pop()
            else:
                frames.append(char)
        elif frame != '"' and char == "(":
            frames.append("cmd")
        elif frame == "cmd" and char == ")" and len(frames) > 1:
            frames.pop()
        out.append(command[i : i + step])
        i += step
    return "".join(out)


__all__ = ["PATH_VARIABLE", "PLACEHOLDERS", "TOOL_VARIABLE", "SingleQuoted", "expanded"]
