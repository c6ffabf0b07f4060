"""What edit_file says when ``old_text`` matches nothing, not even loosely.

The model's next call is only as good as what it is shown. Rather than "read the file again"
(a whole extra turn, paid in prefill), the tool result quotes the region of the file closest
to ``old_text`` verbatim, with line numbers as read_file shows them, and names the lines that
differ, so the retry can copy the right text at once. Stale views (the file changed since the
model read it) and misremembered lines are the usual causes. Pure functions on strings.
"""

from __future__ import annotations

import difflib
import re

_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\| ", re.MULTILINE)
_MAX_LINES_SCANNED = 20_000
_MAX_QUOTED_LINES = 30
_MIN_SIMILARITY = 0.5
_SHORTLIST = 40


def not_found_message(text: str, old: str, where: str) -> str:
    """Why ``old`` was not found in ``text``, quoting the closest region when there is one."""
    message = f"old_text was not found in '{where}'"
    if _LINE_NUMBER_PREFIX.match(old):
        return (
            f"{message}. It starts with a line-number prefix like '   12| ' from read_file's "
            "output; leave those prefixes out of old_text"
        )
    closest = closest_region(text, old)
    if closest is None:
        return f"{message}; nothing in it is close. Read the file again and copy the exact text"
    first, rows = closest
    quoted = "\n".join(f"{number:>6}| {row}" for number, row in enumerate(rows, first))
    differs = _differences(old, rows, first)
    last = first + len(rows) - 1
    span = f"line {first}" if last == first else f"lines {first}-{last}"
    return (
        f"{message}. The closest text is at {span} "
        f"(quoted exactly; the 'N| ' prefixes are not part of the file):\n{quoted}\n{differs}\n"
        "Call edit_file again with old_text copied from those lines."
    )


def closest_region(text: str, old: str) -> tuple[int, list[str]] | None:
    """The 1-based first line and the lines of the stretch of ``text`` most like ``old``.

    Windows as long as ``old`` are scored by difflib's ratio on their stripped lines; a cheap
    upper bound shortlists them first so that a long file costs little.
    """
    wanted = [row.strip() for row in old.replace("\r\n", "\n").strip("\n").split("\n")]
    rows = text.replace("\r\n", "\n").split("\n")[:_MAX_LINES_SCANNED]
    if not any(wanted) or not rows:
        return None
    target = "\n".join(wanted)
    wanted_set = {row for row in wanted if row}
    stripped = [row.strip() for row in rows]
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    scored = []
    # One line more or fewer than old_text too: models re-wrap comments and long calls.
    for size in {max(1, len(wanted) - 1), len(wanted), len(wanted) + 1}:
        size = min(size, len(rows))
        for start in range(len(rows) - size + 1):
            window = stripped[start : start + size]
            # Lines copied right count first: a stale view differs in one line of many.
            hits = sum(1 for row in window if row in wanted_set) / len(wanted)
            matcher.set_seq1("\n".join(window))
            scored.append((hits + matcher.quick_ratio(), hits, start, size))
    scored.sort(key=lambda item: (-item[0], item[2], item[3]))
    best_score, best_ratio, best_start, best_size = 0.0, 0.0, -1, 0
    for bound, hits, start, size in scored[:_SHORTLIST]:
        if bound <= best_score:
            break
        matcher.set_seq1("\n".join(stripped[start : start + size]))
        ratio = matcher.ratio()
        if hits + ratio > best_score:
            best_score, best_ratio, best_start, best_size = hits + ratio, ratio, start, size
    if best_ratio < _MIN_SIMILARITY:
        return None
    return best_start + 1, rows[best_start : best_start + min(best_size, _MAX_QUOTED_LINES)]


def _differences(old: str, rows: list[str], first: int) -> str:
    """Up to three lines of old_text that differ from the file's, each with the file's line."""
    wanted = old.replace("\r\n", "\n").strip("\n").split("\n")
    if len(wanted) != len(rows):
        return (
            f"Differences: old_text has {len(wanted)} line(s) where the file has these "
            f"{len(rows)}; lines are broken differently or some are missing."
        )
    notes = []
    for offset, (mine, theirs) in enumerate(zip(wanted, rows, strict=True)):
        if mine == theirs:
            continue
        if mine.strip() == theirs.strip():
            what = "indentation differs" if mine.lstrip() == theirs.lstrip() else "whitespace"
            notes.append(f"line {first + offset}: {what}")
        else:
            notes.append(
                f"line {first + offset}: you wrote {mine.strip()!r}, file has {theirs.strip()!r}"
            )
        if len(notes) == 3:
            break
    return "Differences: " + ("; ".join(notes) if notes else "none line by line") + "."
