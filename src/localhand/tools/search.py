"""search_files' engine: a regex over the text files of a tree, in one linear pass, in bounded time.

Each file is first searched whole (one C-level scan); only files that match are split into
lines. Most files of a tree do not match, so this keeps large trees fast.

The pattern comes from the model, and one like ``(a|aa)+$`` backtracks for longer than anyone
waits on a line of ``a``: the ``re`` module would hold the GIL all that time, so neither the
wall clock nor the dashboard could interrupt it. The ``regex`` module runs it instead: it
releases the GIL while matching and stops at a timeout, so a search ends within
``ToolLimits.search_timeout_ms`` or the task's remaining wall clock, whichever comes first.

The tree is walked from descriptors, like the other file tools open files: each directory is
opened below the workspace root following no symlink, and each file relative to its
directory's descriptor with ``O_NOFOLLOW``, so a directory swapped for a symlink mid-search
is skipped, never followed out. A symlinked file is searched when it resolves inside the
workspace (as read_file would open it); a symlinked directory is not entered (no loops).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Any

from localhand.errors import ToolError
from localhand.paths import IGNORED_DIRS
from localhand.tools.deadline import mark_reached, remaining_s
from localhand.tools.fsio import BINARY_SNIFF_BYTES, READ_FLAGS, as_regular
from localhand.tools.limits import ToolLimits
from localhand.tools.safe_open import open_beneath, opened_root
from localhand.tools.workspace import Workspace

# Anchors to the whole text mean something else when the whole file is scanned at once.
_WHOLE_TEXT_ANCHOR = re.compile(r"\\[AZz]")
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)


# Literal text, ``.``, ``^``, ``$`` and escaped punctuation: no repetition, no alternation.
_CANNOT_BACKTRACK = re.compile(r"(?:[^*+?{}|()\[\]\\]|\\[^A-Za-z0-9])*")


class _Linear:
    """``re`` for a pattern that cannot backtrack (most searches: a name, ``def foo``): it
    needs neither the ``regex`` module, ~10 ms to import, nor its timeout."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._search = re.compile(pattern, flags).search

    def search(self, text: str, pos: int = 0, timeout: float = 0) -> re.Match[str] | None:
        return self._search(text, pos)


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> tuple[Any, Any, str]:
    """The regex, its whole-text twin (None when it has whole-text anchors), and the note.
    Cached: models search for the same thing again, and ``regex.compile`` is slower than
    ``re.compile`` to look up its own cache."""
    if _CANNOT_BACKTRACK.fullmatch(pattern):
        return _Linear(pattern), _Linear(pattern, re.MULTILINE), ""
    import regex  # ~10 ms to import: loaded with the first search that needs it

    try:
        compiled, note = regex.compile(pattern), ""
    except (regex.error, ValueError, OverflowError) as error:
        note = f"[{pattern!r} is not a valid regex ({error}); searched for it as literal text.]"
        compiled = regex.compile(regex.escape(pattern))
    whole = None
    if not _WHOLE_TEXT_ANCHOR.search(compiled.pattern):
        whole = regex.compile(compiled.pattern, compiled.flags | regex.MULTILINE)
    return compiled, whole, note


def time_limit(limits: ToolLimits) -> tuple[float, bool]:
    """Seconds a search may take: the cap, or what is left of the task's wall clock if less;
    and whether the wall clock is what limits it."""
    limit = limits.search_timeout_ms / 1000
    left = remaining_s()
    if left is None or left >= limit:
        return limit, False
    return max(0.001, left), True


def search_tree(
    workspace: Workspace, target: Path, pattern: str, limit: int, limits: ToolLimits
) -> str:
    """``path:line: text`` for up to ``limit`` lines matching ``pattern`` under ``target``.

    Raises ``ToolError`` when the search outlasts its time limit (see ``time_limit``)."""
    if not pattern:
        raise ToolError("pattern is empty; give a regular expression or some text to find")
    compiled, whole, note = _compiled(pattern)
    budget, cut_by_deadline = time_limit(limits)
    ends = time.monotonic() + budget
    hits: list[str] = []
    rel = ""
    try:
        for rel, text in _texts(workspace, target, limits.search_max_file_bytes):
            for number, line in _matching_lines(compiled, whole, text, ends):
                hits.append(f"{rel}:{number}: {_clip(line.strip(), limits.search_max_line_chars)}")
                if len(hits) >= limit:
                    hits.append(
                        f"[Stopped at {limit} matches; use a narrower pattern or path to see more.]"
                    )
                    return "\n".join([note, *hits] if note else hits)
    except TimeoutError:
        if cut_by_deadline:
            mark_reached()
        where = f" (it was matching '{rel}')" if rel else ""
        raise ToolError(
            f"search_files stopped after {budget:.1f} s: the pattern {pattern!r} takes too long "
            f"to match{where}. Simplify it: nested repetition such as (a+)+ or (a|aa)+ makes "
            "the regex engine try exponentially many ways; or search a narrower path"
        ) from None
    if not hits:
        # Not workspace.relative: it would resolve the path again, and it may have changed.
        where = workspace.relpath(target)
        hits.append(f"No matches for {pattern!r} in '{where}'.")
    return "\n".join([note, *hits] if note else hits)


def _matching_lines(compiled: Any, whole: Any, text: str, ends: float) -> Iterator[tuple[int, str]]:
    """``(number, line)`` for each line of ``text`` that ``compiled`` matches on its own.

    A call with a timeout costs ten times one without (about 1.5 µs), so lines are not tried
    one by one: the whole-text twin jumps, in C, to the next line where a match starts, and
    only that line is tried on its own. A match found within one line is also found in the
    whole text, at the same place or earlier, so no line is skipped that would match (unless a
    lookaround looks past the line's end, which the file-level check always ignored too)."""
    if whole is None:  # \A or \Z: they mean the start and end of each line here
        for number, line in enumerate(text.split("\n"), 1):
            if compiled.search(line, timeout=_left(ends)):
                yield number, line
        return
    number, counted, position = 1, 0, 0
    while position <= len(text):
        found = whole.search(text, position, timeout=_left(ends))
        if found is None:
            return
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.start())
        end = len(text) if end == -1 else end
        number += text.count("\n", counted, start)
        counted = start
        line = text[start:end]
        if compiled.search(line, timeout=_left(ends)):
            yield number, line
        position = end + 1


def _left(ends: float) -> float:
    """Seconds until ``ends``; a ``TimeoutError`` once it has passed (as the regex raises)."""
    left = ends - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _texts(workspace: Workspace, target: Path, max_bytes: int) -> Iterator[tuple[str, str]]:
    """``(path relative to the root, text)`` for each file searched under ``target``, in
    sorted order: a directory's files, then its subdirectories one by one, skipping ignored
    directories and what is not searched (special, too large, binary, unreadable files)."""
    start = workspace.relpath(target)
    with opened_root(workspace.root) as root_fd:
        if not target.is_dir():
            text = _read_beneath(root_fd, start, max_bytes)
            if text is not None:
                yield start, text
            return
        pending = [start]
        while pending:
            directory = pending.pop()
            try:
                dir_fd = open_beneath(root_fd, directory, _DIRECTORY)
            except OSError:  # gone, unreadable, or swapped for a symlink since it was listed
                continue
            try:
                subdirs: list[str] = []
                for entry in sorted(os.scandir(dir_fd), key=_name):
                    rel = entry.name if directory == "." else f"{directory}/{entry.name}"
                    kind = _kind(entry)
                    if kind == "dir":
                        # localhand's data directory (its store) is never read by a tool
                        own = workspace.off_limits(workspace.root / rel)
                        if entry.name not in IGNORED_DIRS and not own:
                            subdirs.append(rel)
                        continue
                    if kind == "link":
                        text = _read_link(workspace, root_fd, rel, max_bytes)
                    else:
                        text = _read_at(dir_fd, entry.name, max_bytes)
                    if text is not None:
                        yield rel, text
                pending.extend(reversed(subdirs))
            finally:
                os.close(dir_fd)


_name = attrgetter("name")


def _kind(entry: os.DirEntry[str]) -> str:
    """``dir``, ``link`` or ``file`` (anything else: opening it tells what it is)."""
    try:
        if entry.is_symlink():
            return "link"
        return "dir" if entry.is_dir(follow_symlinks=False) else "file"
    except OSError:
        return "file"


def _read_link(workspace: Workspace, root_fd: int, rel: str, max_bytes: int) -> str | None:
    """A symlinked file's text if it resolves inside the workspace (to a file, not a
    directory); opened like any other path, following no symlink once resolved."""
    try:
        real = workspace.resolve(rel)
    except ToolError:
        return None
    return _read_beneath(root_fd, workspace.relpath(real), max_bytes)


def _read_beneath(root_fd: int, rel: str, max_bytes: int) -> str | None:
    try:
        fd = open_beneath(root_fd, rel, READ_FLAGS)
    except OSError:
        return None
    return _text(fd, rel, max_bytes)


def _read_at(dir_fd: int, name: str, max_bytes: int) -> str | None:
    try:
        fd = os.open(name, _NOFOLLOW, dir_fd=dir_fd)
    except OSError:  # gone, unreadable, or a symlink now (O_NOFOLLOW)
        return None
    return _text(fd, name, max_bytes)


def _text(fd: int, name: str, max_bytes: int) -> str | None:
    """The file's text, or None for what is not searched: special, too large, binary,
    unreadable. Closes ``fd``."""
    try:
        with as_regular(fd, name) as handle:  # never blocks on a FIFO, never reads a device
            if os.fstat(handle.fileno()).st_size > max_bytes:
                return None
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", "replace")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
