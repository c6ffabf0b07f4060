"""The names the model sees for MCP tools.

A tool keeps its MCP name when no other offered tool has it, so a model trained on a
server's tools finds them as it knows them. On a clash (with a built-in tool or another
server's tool) every MCP tool of that name becomes ``SERVER__TOOL``; the built-in tool keeps
its name, so a server cannot take ``run_command`` from under the approval policy.

Every name must match ``^[a-zA-Z0-9_-]{1,64}$`` (what OpenAI-compatible servers and most
chat templates accept). A name that does not (a hostile server's ``read file; rm -rf``, a
dotted name, 200 characters) is renamed, with a warning, never used as it is; an empty one
is refused.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def offered_names(
    tools: Sequence[tuple[str, str]],
    taken: Iterable[str],
    warn: Callable[[str], None],
) -> list[str | None]:
    """The name to offer for each ``(server, tool)`` pair, in order (None: refused).

    ``taken`` are the names already offered (the built-in tools)."""
    taken = set(taken)
    counts = Counter(tool for _, tool in tools)
    used = set(taken)
    names: list[str | None] = []
    for server, tool in tools:
        if not tool:
            warn(f"MCP server '{server}' offers a tool with an empty name; it is left out")
            names.append(None)
            continue
        clash = tool in taken or counts[tool] > 1
        wanted = f"{prefix(server)}{SEPARATOR}{tool}" if clash else tool
        name = unique(safe(wanted), used)
        if name != wanted:
            warn(
                f"MCP server '{server}' offers a tool named {shown(tool)}, which the model "
                f"gets as '{name}' (tool names must match {VALID_NAME.pattern}"
                " and differ from every other tool's)"
            )
        used.add(name)
        names.append(name)
    return names


def prefix(server: str) -> str:
    """``server`` as a name prefix: valid characters only, at most 24 of them."""
    return safe(server)[:24] or "mcp"


def safe(name: str) -> str:
    """``name`` with every character outside ``[a-zA-Z0-9_-]`` as ``_``, cut to 64."""
    return _INVALID.sub("_", name)[:MAX_NAME] or "_"


def unique(name: str, used: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... (cut to stay within 64) if it is taken."""
    if name not in used:
        return name
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = name[: MAX_NAME - len(suffix)] + suffix
        if candidate not in used:
            return candidate
        number += 1


def shown(name: str, limit: int = 80) -> str:
    """A tool name for a message: quoted, control characters escaped, cut at ``limit``."""
    text = repr(name[:limit])
    return text if len(name) <= limit else f"{text}... ({len(name)} characters)"


__all__ = ["SEPARATOR", "VALID_NAME", "offered_names", "prefix", "safe", "shown", "unique"]
