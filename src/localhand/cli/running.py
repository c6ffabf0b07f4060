"""The running line: what the run is waiting for, and for how long, redrawn in place.

While a reply is awaited or a command runs, a terminal shows one line that says what and
counts the seconds (Rich's status, on stderr; transient, so nothing of it stays). Without
a terminal nothing is drawn.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text

from localhand.cli.lines import fit, one_line
from localhand.safety.approval.approver import escape as shown


def running_label(call: dict[str, Any]) -> str:
    """The running line's label for a native tool call (``{"function": {"name",
    "arguments"}}``): the command a ``run_command`` runs, else the tool's name."""
    function = call.get("function") or {}
    name = str(function.get("name") or "a tool")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if isinstance(command, str) and command.strip():
        return f"running {shown(one_line(command))}"
    return f"running {shown(name)}"


_ONE_STRING = re.compile(r'\{"\w+": "((?:[^"\\]|\\.)*)…')


def arguments_shown(summary: str) -> str:
    """A tool call's ``args_summary`` (its arguments' JSON, perhaps cut) as a person reads
    it: one argument's value alone (``{"command": "ls"}`` → ``ls``), else the JSON."""
    try:
        arguments = json.loads(summary)
    except ValueError:  # cut at the timeline's limit: a lone string argument, still shown bare
        cut = _ONE_STRING.fullmatch(summary)
        if cut is None:
            return one_line(summary)
        try:
            return one_line(json.loads(f'"{cut.group(1).rstrip(chr(92))}"')) + "…"
        except ValueError:
            return one_line(summary)
    if isinstance(arguments, dict) and len(arguments) == 1:
        (value,) = arguments.values()
        if isinstance(value, str):
            return one_line(value)
    return one_line(summary)


class Waiting:
    """The waiting line: rendered anew at each refresh, so its clock runs by itself."""

    def __init__(
        self,
        started: float,
        label: str = "waiting for the model's reply",
        *,
        width: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.started = started
        self.label = label
        self.width = width
        """The terminal's width now (None: no cut), which the line must fit."""
        self.tokens: int | None = None
        self.tokens_per_s: float | None = None
        self.noted = 0.0
        """The elapsed seconds at the last progress line (without a live terminal)."""

    def describe(self, elapsed: float) -> str:
        text = f"{self.label}: {elapsed:.0f} s"
        if self.tokens is not None:
            text += f", {self.tokens} tokens"
            if self.tokens_per_s is not None:
                text += f", {self.tokens_per_s:.1f} tokens/s"
        return text

    def __rich__(self) -> Text:
        text = Text(shown(self.describe(time.monotonic() - self.started)), style="dim")
        width = self.width()
        return fit(text, None if width is None else width - 2)  # the spinner takes 2
