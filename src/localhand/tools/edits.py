"""Text replacement for edit_file: exact first, then loose, else a refusal that helps the retry.

Pure functions on strings, so every outcome can be tested without a file system. The order:
an exact single match is applied as is; an exact match in the file's CRLF newlines next; then
one region equal up to whitespace (``edits_loose``: applied, re-indented, reported as loose,
never as exact); otherwise the closest region is quoted (``edits_hint``).
"""

from __future__ import annotations

from dataclasses import dataclass

from localhand.errors import ToolError
from localhand.tools.edits_hint import not_found_message
from localhand.tools.edits_loose import find_all, line_of, loose_replace


@dataclass(frozen=True)
class Edit:
    """An applied edit: the new text, the first line changed and, when loose, what differed."""

    text: str
    line: int
    loose: str = ""


def replace_once(text: str, old: str, new: str, *, where: str) -> Edit:
    """``text`` with the single occurrence of ``old`` replaced by ``new``.

    Raises ``ToolError`` when ``old`` is empty or whitespace, occurs nowhere even loosely, or
    occurs more than once; the message says which and how to fix the call. ``where`` names the
    file in messages.
    """
    if not old.strip():
        what = "empty" if not old else "only whitespace"
        raise ToolError(
            f"old_text is {what}, which cannot say where to edit. Put an existing line of "
            f"'{where}' in old_text (and, to insert, that line plus the new lines in new_text); "
            "to create or overwrite a whole file use write_file"
        )
    if old == new:
        raise ToolError("old_text and new_text are the same; nothing to change")
    starts = find_all(text, old)
    if not starts and "\r\n" in text and "\r" not in old:
        # The model saw the file's lines without their CR; match in the file's own newlines.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        starts = find_all(text, old)
    if len(starts) > 1:
        numbers = dict.fromkeys(line_of(text, start) for start in starts)
        lines = ", ".join(str(number) for number in list(numbers)[:10])
        raise ToolError(
            f"old_text occurs {len(starts)} times in '{where}' (at lines {lines}); include more "
            "of the surrounding lines in old_text so that it matches exactly once"
        )
    if starts:
        start = starts[0]
        return Edit(text[:start] + new + text[start + len(old) :], line_of(text, start))
    loose = loose_replace(text, old, new, where=where)
    if loose is None:
        raise ToolError(not_found_message(text, old, where))
    return Edit(loose.text, loose.line, loose.differs)
