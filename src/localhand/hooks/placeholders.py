"""``{path}`` and ``{tool}`` in a hook's command: references to variables, never the text.

The path (and the tool's name) is the model's choice, so its text never enters the command
line: a file named ``$(touch pwned).py`` or ``";touch pwned;".py`` would run there, since no
quoting of the text survives every place a placeholder may stand (inside double quotes, the
shell still runs a ``$(...)`` it finds). The hook gets the values in ``LOCALHAND_PATH`` and
``LOCALHAND_TOOL`` (and in the JSON on its stdin), and each placeholder becomes a reference to
its variable, quoted as its place needs: ``"${LOCALHAND_PATH}"`` where it stands bare (no word
splitting, no glob), ``${LOCALHAND_PATH}`` inside double quotes. Inside single quotes nothing
expands, so such a command is refused when the configuration is read (``expanded`` raises).
"""

from __future__ import annotations

PATH_VARIABLE = "LOCALHAND_PATH"
TOOL_VARIABLE = "LOCALHAND_TOOL"
PLACEHOLDERS = {"{path}": PATH_VARIABLE, "{tool}": TOOL_VARIABLE}
_WORD_START = " \t\n;&|()"
"""What may stand before a ``#`` that begins a comment."""


class SingleQuoted(ValueError):
    """A placeholder inside single quotes, where its variable could not expand."""

    def __init__(self, placeholder: str) -> None:
        super().__init__(placeholder)
        self.placeholder = placeholder


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
        elif frame != '"' and (char == "'" or command.startswith("$'", i)):
            step = _single_quoted(command, i) - i
            for name in PLACEHOLDERS:
                if name in command[i : i + step]:
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


def _single_quoted(command: str, start: int) -> int:
    """Where the single-quoted text at ``start`` (``'...'`` or ``$'...'``) ends: just past its
    closing quote, or the end of ``command``."""
    if command[start] == "'":
        end = command.find("'", start + 1)
        return len(command) if end < 0 else end + 1
    i = start + 2
    while i < len(command) and command[i] != "'":
        i += 2 if command[i] == "\\" else 1
    return min(i + 1, len(command))


__all__ = ["PATH_VARIABLE", "PLACEHOLDERS", "TOOL_VARIABLE", "SingleQuoted", "expanded"]
