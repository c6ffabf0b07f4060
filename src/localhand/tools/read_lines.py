"""``read_file``'s reading: a file's lines, numbered, within the caps of ``ToolLimits``.

A file is read a line at a time through ``readline`` with a cap, so a huge file, or a 50 MB
line of minified code, never sits in memory; past the lines shown, the rest is only counted,
and only up to a byte budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, BinaryIO

from localhand.tools.limits import ToolLimits


def numbered_lines(
    handle: BinaryIO, first: int, last: int | None, limits: ToolLimits
) -> tuple[list[str], int | None, bool, int | None]:
    """Lines ``first``..``last`` with numbers, within the caps; the total line count (None
    when the file is too large to count), whether the caps cut it, the first non-UTF-8 line."""
    shown: list[str] = []
    used, total, cut, bad = 0, 0, False, None
    for number, (raw, dropped) in enumerate(_lines(handle, limits.read_max_line_chars), 1):
        total = number
        if number < first:
            continue
        if last is not None and number > last:
            break
        line, valid = _decode(raw, cut_off=bool(dropped))
        if not valid and bad is None:
            bad = number
        elif dropped:  # a character cut in half by the cap is not shown either
            dropped += len(raw) - len(line.encode("utf-8"))
        if dropped:
            line += f"… [{dropped:,} more bytes in this line]"
        entry = f"{number:>5}| {line}"
        if shown and (
            len(shown) >= limits.read_max_lines or used + len(entry) > limits.read_max_bytes
        ):
            cut = True
            break
        shown.append(entry)
        used += len(entry) + 1
    else:  # read to the end: every line is counted
        return shown, total, cut, bad
    return shown, _add(total, _count_lines(handle, limits.read_count_max_bytes)), cut, bad


def _lines(handle: IO[bytes], keep: int) -> Iterator[tuple[bytes, int]]:
    """Each line without its newline, cut to ``keep`` bytes, and how many bytes were cut off.

    Reading through ``readline(keep)`` means a 50 MB line of minified code never sits in memory.
    """
    while head := handle.readline(keep):
        dropped, tail = 0, head
        while not tail.endswith(b"\n"):
            tail = handle.readline(1 << 16)
            if not tail:
                break
            dropped += len(tail.removesuffix(b"\n").removesuffix(b"\r"))
        yield head.removesuffix(b"\n").removesuffix(b"\r"), dropped


def _count_lines(handle: IO[bytes], budget: int) -> int | None:
    """How many more lines ``handle`` holds (a last line without a newline counts), or None
    when that would mean reading more than ``budget`` bytes."""
    count, last, read = 0, b"\n", 0
    while chunk := handle.read(1 << 20):
        read += len(chunk)
        if read > budget:
            return None
        count += chunk.count(b"\n")
        last = chunk
    return count + (0 if last.endswith(b"\n") else 1)


def _add(total: int, more: int | None) -> int | None:
    return None if more is None else total + more


def _decode(raw: bytes, *, cut_off: bool) -> tuple[str, bool]:
    """The line as text and whether it was valid UTF-8. A line cut at the length cap may end
    in the middle of a character; that is not counted as invalid."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError as error:
        if cut_off and error.start >= len(raw) - 3 and error.end == len(raw):
            try:
                return raw[: error.start].decode("utf-8"), True
            except UnicodeDecodeError:
                pass
        return raw.decode("utf-8", "replace"), False
