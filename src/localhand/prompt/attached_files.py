"""Files handed to a run (``localhand run --file PATH``, a task file's ``context_files``), put
in its first prompt within a token cap.

A question about code ("what does calc.py do?") is answered from the code only if the model
sees it; a small model in the simple path has no tools to read it. So the user can attach
files: ``--file`` is repeatable and takes globs (``'src/*.py'``, ``'**/*.md'``), resolved
against the workspace. localhand reads them outside the sandbox and sends them to the model,
so each must lie inside the workspace (no ``..``, no symlink out of it) and be text: a binary
file named on its own is an error; one a glob matches is left out, as is a file that looks
like it holds credentials (``.env``, keys), and the person is told. In the prompt the files
share one cap in tokens (``localhand.models.tokens``): a file that does not fit whole is cut
at a line, the ones after it are left out, and both the model and the person are told which.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from localhand.errors import ConfigError, ToolError
from localhand.models.tokens import CODE_CHARS_PER_TOKEN, estimate_text_tokens
from localhand.paths import IGNORED_DIRS
from localhand.safety.risk.paths import is_secret_file
from localhand.tools.workspace import Workspace

CAP_TOKENS = 16_000
"""Tokens of attached files in the first prompt, unless the caller gives another cap (the
simple path: half the model's window, ``localhand.run.simple.context_chars``)."""
READ_LIMIT = 4 * 1024 * 1024
"""Bytes read of one file: far beyond any cap; a larger file is cut anyway."""
_SNIFF = 8192
_GLOB_CHARS = frozenset("*?[")
_SKIPPED_DIRS = IGNORED_DIRS | {".hg", ".svn"}


@dataclass(slots=True)
class Attached:
    """The files' text for the prompt, and what the cap did to them."""

    text: str = ""
    cut: list[str] = field(default_factory=list)
    """Files shown only in part."""
    left_out: list[str] = field(default_factory=list)
    """Files not shown at all (no room, unreadable, binary)."""
    tokens: int = 0
    cap: int = CAP_TOKENS

    def summary(self) -> str:
        """One sentence for the person, empty when every file went in whole."""
        if not (self.cut or self.left_out):
            return ""
        parts = []
        if self.cut:
            parts.append("cut: " + ", ".join(self.cut))
        if self.left_out:
            parts.append("left out: " + ", ".join(self.left_out))
        return f"attached files are capped at {self.cap:,} tokens; " + "; ".join(parts)


def attach(workspace: Path, paths: Sequence[str], cap_tokens: int = CAP_TOKENS) -> Attached:
    """``paths`` (relative to ``workspace``), read through the workspace jail, fenced, within
    ``cap_tokens`` in all; every file cut or left out is said in the text too."""
    jail = Workspace(workspace)
    out = Attached(cap=cap_tokens)
    parts: list[str] = []
    for path in paths:
        try:
            data = _read(jail, path)
        except (ToolError, OSError, ConfigError) as exc:
            parts.append(f"(context file {path} left out: {exc})")
            out.left_out.append(path)
            continue
        text = data.decode("utf-8", errors="replace")
        room = 0 if out.cut else cap_tokens - out.tokens  # after a cut file, none fits
        tokens = estimate_text_tokens(text)
        if tokens <= room and len(data) < READ_LIMIT:
            body = text[:-1] if text.endswith("\n") else text  # the fence ends the line
            parts.append(f"Contents of {path}:\n```\n{body}\n```")
            out.tokens += tokens
            continue
        shown = _prefix(text, room)
        if not shown.strip():
            parts.append(f"(context file {path} left out: the {cap_tokens:,}-token cap is spent)")
            out.left_out.append(path)
            continue
        used = estimate_text_tokens(shown)
        whole = f"more than {tokens:,}" if len(data) >= READ_LIMIT else f"{tokens:,}"
        parts.append(
            f"Contents of {path} (cut to fit: about {used:,} of its {whole} tokens; "
            f"read_file shows the rest):\n```\n{shown}\n```"
        )
        out.tokens += used
        out.cut.append(f"{path} (about {used:,} of {whole} tokens)")
    if out.cut or out.left_out:
        parts.append(f"(Note: {out.summary()}.)")
    out.text = "\n\n".join(parts)
    return out


def attach_files(workspace: Path, paths: Sequence[str], budget_chars: int) -> str:
    """``attach``'s text, for ``localhand.prompt.system.build_messages``, whose callers size the
    room in characters of code (``CODE_CHARS_PER_TOKEN`` to a token)."""
    return attach(workspace, paths, max(1, budget_chars // CODE_CHARS_PER_TOKEN)).text


def announce(workspace: Path, paths: Sequence[str]) -> list[str]:
    """What to tell the person before the run about the files it attaches: how much of the
    cap they take, and which are cut or left out (a model with a small window, in the simple
    path, gets a smaller cap: the prompt says what it cut)."""
    summary = attach(workspace, paths).summary()
    return [summary] if summary else []


def expand(patterns: Sequence[str], workspace: Path, warn: Callable[[str], None]) -> list[str]:
    """``--file`` arguments as workspace-relative paths of text files, in order, each once.
    A path or glob that names nothing usable is a ``ConfigError`` saying what to do; a file a
    glob matches but that cannot be sent (binary, credentials, outside) is left out and
    ``warn`` is told."""
    root = Path(os.path.realpath(workspace))
    found: dict[str, None] = {}
    for pattern in patterns:
        if _GLOB_CHARS & set(pattern):
            matches = _glob(pattern, root, warn)
        else:
            matches = [_one(pattern, root)]
        found.update(dict.fromkeys(matches))
    return list(found)


def _one(given: str, root: Path) -> str:
    """A path the user named: inside the workspace, a file, text."""
    real = _inside(given, root)
    if real is None:
        raise ConfigError(
            f"--file {given}: outside the workspace {root} (a file elsewhere, ../, or a "
            "symlink out of it); attach files that are in the workspace, or pass --workspace"
        )
    if real.is_dir():
        raise ConfigError(f"--file {given} is a directory; name files, or a glob: '{given}/*'")
    if not real.is_file():
        raise ConfigError(f"--file {given}: no such file in {root}")
    reason = _not_text(real)
    if reason:
        raise ConfigError(f"--file {given} is {reason}; --file takes text files (code, notes)")
    return real.relative_to(root).as_posix()


def _glob(pattern: str, root: Path, warn: Callable[[str], None]) -> list[str]:
    base = pattern if os.path.isabs(pattern) else os.path.join(root, pattern)
    names = sorted(glob.glob(base, recursive=True))
    if not names and not os.path.isabs(pattern):  # a shell-like pattern from elsewhere
        names = sorted(glob.glob(pattern, recursive=True))
    kept, dropped = [], []
    for name in names:
        real = _inside(name, root)
        if real is None:
            dropped.append(f"{name}: outside the workspace")
            continue
        relative = real.relative_to(root).as_posix()
        if not real.is_file() or _SKIPPED_DIRS & set(Path(relative).parts):
            continue
        reason = "it looks like credentials" if is_secret_file(relative) else _not_text(real)
        if reason:
            dropped.append(f"{relative}: {reason}")
        else:
            kept.append(relative)
    if dropped:
        warn(f"--file {pattern} leaves out " + "; ".join(dropped))
    if not kept:
        raise ConfigError(
            f"--file {pattern} matches no text file in the workspace {root}; quote the glob "
            "so the shell leaves it to localhand, and give it relative to the workspace"
        )
    return kept


def _inside(given: str, root: Path) -> Path | None:
    """The real path of ``given`` when it lies inside ``root``: a relative path is taken from
    the workspace, or from the current directory when only there is it a file."""
    path = Path(given).expanduser()
    if not path.is_absolute():
        here = Path.cwd() / path
        path = here if not os.path.lexists(root / path) and os.path.lexists(here) else root / path
    real = Path(os.path.realpath(path))
    return real if real == root or root in real.parents else None


def _not_text(path: Path) -> str:
    """Why ``path`` is not a text file ("" when it is)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if b"\0" in head:
        return "a binary file (it holds NUL bytes)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut by the sniff's end
            return "a binary file (not UTF-8 text)"
    return ""


def _read(jail: Workspace, path: str) -> bytes:
    target = jail.resolve(path)  # checked again: the path is re-read at the first prompt
    if not target.is_file():
        raise ToolError(f"{path} is not a file")
    reason = _not_text(target)
    if reason:
        raise ConfigError(reason)
    with target.open("rb") as handle:
        return handle.read(READ_LIMIT)


def _prefix(text: str, tokens: int) -> str:
    """The most of ``text``'s start within ``tokens``: whole lines, or (when not even the
    first line fits) the start of the first."""
    if tokens <= 0:
        return ""
    lines = text.splitlines(keepends=True)
    count = _most(len(lines), lambda n: estimate_text_tokens("".join(lines[:n])) <= tokens)
    if count:
        return "".join(lines[:count]).rstrip("\n")
    first = lines[0] if lines else ""
    return first[: _most(len(first), lambda n: estimate_text_tokens(first[:n]) <= tokens)]


def _most(limit: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n`` up to ``limit`` for which ``fits(n)`` (which holds for 0 and, once
    false, stays false for every larger ``n``)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
