"""Lines that fit the terminal: one line per step, cut with an ellipsis, never wrapped.

A terminal wraps a line longer than its width wherever the width falls, mid-word, and a
narrow pane turns a run into a wall of broken lines. So each step's line is cut to the width
(``fit``), at a word boundary where one is near, and ends in ``…``; the model's thinking is
folded to a few such lines (``fold``). In a pipe there is no width: lines stay whole, for
logs and grep.
"""

from __future__ import annotations

import shutil
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from localhand.safety.approval.approver import escape as inert

ELLIPSIS = "…"
WORD_SLACK = 0.25
"""How far back (a share of the width) a cut may move to end at a space instead of mid-word."""
FOLDED_LINES = 6
"""Lines of the model's thinking shown with ``--show-thinking``; the rest is counted."""


def terminal_width(console: Console, own: bool) -> int | None:
    """The width a step's line must fit, or None (a pipe: lines stay whole). ``own``: the
    console is the process's stderr, so the terminal is asked (``shutil.get_terminal_size``,
    which reads ``COLUMNS`` first, then the terminal), as it may have been resized; else the
    console's own width (a test's, say)."""
    if not console.is_terminal:
        return None
    if own:
        return max(shutil.get_terminal_size((console.width, 24)).columns, 20)
    return max(console.width, 20)


def answer_width(out: object) -> int | None:
    """The width the answer (on ``out``, standard output) wraps at: the terminal's, or None
    when ``out`` is not a terminal (a pipe or a file gets the model's lines as they are)."""
    isatty = getattr(out, "isatty", None)
    try:
        if isatty is None or not isatty():
            return None
    except ValueError:  # closed
        return None
    return max(shutil.get_terminal_size().columns, 20)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) as one space."""
    return " ".join(text.split())


def fit(line: Text, width: int | None) -> Text:
    """``line`` cut to ``width`` cells with an ellipsis, at a space when one is within
    ``WORD_SLACK`` of the end; unchanged when it fits or ``width`` is None."""
    if width is None or line.cell_len <= width:
        return line
    cut = line.copy()
    cut.truncate(width - 1)  # in cells: wide characters count twice
    space = cut.plain.rfind(" ")
    if space >= width * (1 - WORD_SLACK):
        cut = cut[:space]
    cut.rstrip()
    cut.append(ELLIPSIS, style="dim")
    return cut


def fold(text: str, width: int | None, indent: str = "    ┆ ") -> list[Text]:
    """``text`` (the model's thinking) as at most ``FOLDED_LINES`` dimmed lines, each cut to
    ``width``, and a last line saying how many more there were."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    shown = [fit(Text(indent + line, style="dim"), width) for line in lines[:FOLDED_LINES]]
    if len(lines) > FOLDED_LINES:
        more = len(lines) - FOLDED_LINES
        shown.append(Text(f"{indent}… {more} more line{'s' if more > 1 else ''}", style="dim"))
    return shown


def wrap(text: str, width: int | None) -> str:
    """``text`` (an answer, for a terminal) wrapped as ``StreamWrap`` wraps a streamed one;
    None: unchanged."""
    if width is None:
        return text
    wrapping = StreamWrap(width)
    return wrapping.feed(text) + wrapping.flush()


class StreamWrap:
    """An answer, streamed or whole, with each line longer than ``width`` wrapped at spaces,
    never mid-word, keeping its indentation; a word longer than the width stays whole.
    ``feed`` returns what can be written now, a word held back until its end shows whether it
    fits; ``flush`` the rest."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.column = 0
        self.word = ""
        self.indent = ""
        """The line's leading spaces, repeated on each line it wraps to."""
        self.worded = False

    def feed(self, text: str) -> str:
        out: list[str] = []
        for char in text:
            if char == "\n":
                out.append(self._word() + "\n")
                self.column, self.indent, self.worded = 0, "", False
            elif char == " ":
                out.append(self._word())
                if not self.worded:
                    self.indent += " "
                if self.column < self.width:
                    out.append(" ")
                    self.column += 1
            else:
                self.word += char
        return "".join(out)

    def flush(self) -> str:
        return self._word()

    def _word(self) -> str:
        word, self.word = self.word, ""
        if not word:
            return ""
        size, self.worded = cell_len(word), True
        if self.column > len(self.indent) and self.column + size > self.width:
            self.column = len(self.indent) + size
            return "\n" + self.indent + word
        self.column += size
        return word


def hook_line(e: dict[str, Any]) -> str:
    """A ``hook_ran`` event's line (Rich markup): the kind, the command, how it ended, what
    it said; a blocking ``pre_tool`` hook in red."""
    if e["blocked"]:
        mark, ended = "[red]⛔[/]", "[red]blocked the call[/]"
    elif e["timed_out"]:
        mark, ended = "[yellow]![/]", "[yellow]timed out[/]"
    elif e["exit_code"] == 0:
        mark, ended = "[green]✓[/]", "exit 0"
    else:
        mark, ended = (
            "[yellow]![/]",
            f"exit {e['exit_code'] if e['exit_code'] is not None else '?'}",
        )
    took = e["duration_ms"]
    timing = f"{took / 1000:.1f} s" if took >= 1000 else f"{took} ms"
    said = f": {escape(one_line(e['output_summary']))}" if e["output_summary"] else ""
    command = escape(inert(one_line(e["command"])))
    head = f"      │ {mark} [bold]hook {e['hook']}[/] [dim]{command}[/]"
    return f"{head} → {ended} [dim]({timing}){said}[/]"
