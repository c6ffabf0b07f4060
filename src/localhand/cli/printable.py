"""Text from a model or a command made safe to write to a terminal: every string of an event
passes through ``printable`` before the live view or ``localhand show`` prints it (see
``localhand.cli.view``)."""

from __future__ import annotations

from typing import Any

from localhand.safety.approval.approver import escape as shown


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: every control or invisible formatting character
    (escape sequences, bells, C1 controls, bidi overrides) written out as ``\\x1b`` by the same
    ``escape`` that shows commands for approval; newlines and tabs are kept."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else shown(line) for line in text.split("\n"))


def printable_data(data: Any) -> Any:
    """``data`` (an event's JSON-like fields) with ``printable`` applied to every string."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {key: printable_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [printable_data(value) for value in data]
    return data
