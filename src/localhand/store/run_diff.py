"""What a run changed, as a diff with per-file line counts: ``change_of``.

In a git workspace the Result carries ``git.diff`` (``localhand.evidence.gitstate``): the run's
whole change, scrubbed and capped. Elsewhere the store keeps the workspace as the run found it
(``localhand.store.archive``: up to a few MiB, secret-looking files left out), and each
modified file is compared with its copy there. That comparison is against the file on disk
*now*: right after the run that is the run's work; for ``show`` later, a file changed since
the run ended is named in the note. Without a before-copy (too big a workspace, a store that
could not keep one) the files are listed with their sizes and the note says no line diff is
available.

Every diff shown anywhere passes through ``scrub_text`` here, and a secret-looking file's
content is never read: the run store and the dashboard outlive the run. Files are read with
``O_NOFOLLOW`` under the real workspace only, so a symlink the model left cannot make the diff
show a file from elsewhere.
"""

from __future__ import annotations

import difflib
import io
import os
import stat
import tarfile
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError
from localhand.safety.risk.paths import is_secret_file
from localhand.safety.secrets.scrub import scrub_data, scrub_text
from localhand.safety.undo.restore import find

if TYPE_CHECKING:
    from localhand.store import RunInfo, Store

MAX_FILE_BYTES = 1024 * 1024
"""Files larger than this (before or after) are listed with their size, without lines."""
MAX_DIFF_CHARS = 100_000
"""As ``gitstate.MAX_DIFF_CHARS``: the diff is cut past this, and says so."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change: lines added and removed, or (no line diff) its size now."""

    path: str
    added: int = 0
    removed: int = 0
    binary: bool = False
    """No lines to count: binary, too big, secret-looking, or no copy from before."""
    size: int | None = None
    """Bytes on disk now, when there are no lines to count (``None``: the file is gone)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RunChange:
    files: tuple[FileChange, ...]
    diff: str
    """A unified diff (``diff --git`` headers), scrubbed; empty when there is none."""
    source: str
    """``git`` (the Result's diff), ``copy`` (against the store's before-copy) or ``none``."""
    note: str = ""

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "added": self.added,
            "removed": self.removed,
            "diff": self.diff,
            "source": self.source,
            "note": self.note,
        }


def change_of(
    result: dict[str, Any] | None,
    *,
    before: bytes | None = None,
    workspace: str | Path | None = None,
    finished_at: float | None = None,
) -> RunChange:
    """The change a run made, from its Result (``git.diff``, ``files_modified``) and, outside
    git, the store's gzipped tar of the workspace before the run (``before``)."""
    result = result or {}
    diff = scrub_text(str((result.get("git") or {}).get("diff") or ""))
    if diff.strip():
        return RunChange(tuple(file_stats(diff)), diff, "git")
    paths = [str(p) for p in result.get("files_modified") or []]
    if not paths:
        return RunChange((), "", "none")
    root = Path(workspace) if workspace else None
    if before is None or root is None or not root.is_dir():
        why = "the workspace is not a git repository and the run store kept no copy of it"
        if root is not None and not root.is_dir():
            why = f"the workspace {root} is gone"
        files = tuple(_listed(root, p) for p in paths)
        return RunChange(files, "", "none", f"no line diff: {why}; files listed with sizes")
    return _against_copy(paths, before, root, finished_at)


def stored_change(store: Store, run: RunInfo) -> dict[str, Any] | None:
    """A recorded run's change (``RunChange.to_dict``) and ``undo`` command, from what the
    store kept: its Result (scrubbed again: a store written before the scrubber knew a
    secret's shape still has it) and its before-copy. ``None`` for a run without a Result."""
    if run.result is None:
        return None
    result = scrub_data(run.result)
    change = kept_change(result, store, run.id, run.finished_at)
    return {**change.to_dict(), "undo": undo_command(result, store, run.id)}


def kept_change(
    result: dict[str, Any], store: Store | None, run_id: str | None, finished_at: float | None
) -> RunChange:
    """``change_of`` a recorded run (``run_id`` in ``store``), against the before-copy the
    store kept of its workspace; without either, from the Result alone."""
    kept, workspace = None, ""
    if store is not None and run_id:
        kept = store.archive(run_id)
        with suppress(ConfigError):
            workspace = store.run(run_id).workspace
    before = kept.data if kept is not None else None
    return change_of(result, before=before, workspace=workspace or None, finished_at=finished_at)


def undo_command(result: dict[str, Any] | None, store: Store | None, run_id: str | None) -> str:
    """The whole command that puts the workspace back (empty when there is none):
    ``localhand undo RUN_ID`` when the run took checkpoints, else, for a change in a git
    workspace, the Result's ``git restore``."""
    result = result or {}
    if store is not None and run_id and _has_checkpoints(store, run_id):
        return f"localhand undo {run_id}"
    restore = (result.get("git") or {}).get("restore")
    return str(restore) if restore and result.get("files_modified") else ""


def _has_checkpoints(store: Store, run_id: str) -> bool:
    try:
        info = store.run(run_id)
        found = find(info.id, info.task_id, info.started_at, info.finished_at, info.workspace)
    except (ConfigError, OSError):
        return False
    return bool(found)


def file_stats(diff: str) -> list[FileChange]:
    """Each file of a unified diff with its added and removed lines."""
    found: list[FileChange] = []
    path, added, removed, binary, in_hunk = "", 0, 0, False, False

    def close() -> None:
        if path:
            found.append(FileChange(path, added, removed, binary))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            close()
            path, added, removed, binary, in_hunk = _header_path(line), 0, 0, False, False
        elif not in_hunk and line.startswith("+++ ") and line[4:] != "/dev/null":
            path = _strip_prefix(line[4:], "b/")
        elif not in_hunk and line.startswith("--- ") and line[4:] != "/dev/null" and not path:
            path = _strip_prefix(line[4:], "a/")
        elif line.startswith("Binary files ") and not in_hunk:
            binary = True
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    close()
    return found


def _header_path(line: str) -> str:
    rest = line[len("diff --git ") :]
    cut = rest.rfind(" b/")
    return rest[cut + 3 :] if cut >= 0 else rest


def _strip_prefix(text: str, prefix: str) -> str:
    text = text.strip().strip('"')
    return text[len(prefix) :] if text.startswith(prefix) else text


def _against_copy(
    paths: list[str], before: bytes, root: Path, finished_at: float | None
) -> RunChange:
    files: list[FileChange] = []
    parts: list[str] = []
    later: list[str] = []
    try:
        old = _members(before)
    except (tarfile.TarError, OSError, EOFError):
        listed = tuple(_listed(root, p) for p in paths)
        return RunChange(listed, "", "none", "no line diff: the kept copy is unreadable")
    for path in paths:
        now = read_now(root, path)
        if (
            finished_at is not None
            and (found := _lstat(root, path))
            and found.st_mtime > finished_at
        ):
            later.append(path)
        then = old.get(path, _ABSENT)
        text = file_diff(path, then, now)
        if text is None:
            files.append(_listed(root, path))
            continue
        text = scrub_text(text)
        files.extend(file_stats(text))
        parts.append(text)
    diff = "".join(parts)
    if len(diff) > MAX_DIFF_CHARS:
        diff = f"{diff[:MAX_DIFF_CHARS]}\n[... {len(diff) - MAX_DIFF_CHARS} more characters]\n"
    note = "compared with the copy the run store kept from before the run"
    if later:
        note += f"; changed after the run ended, shown as they are now: {', '.join(later)}"
    return RunChange(tuple(files), diff, "copy", note)


def _members(data: bytes) -> dict[str, bytes | None]:
    """Each regular file of the archive (up to ``MAX_FILE_BYTES``; larger ones as ``None``)."""
    kept: dict[str, bytes | None] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            name = os.path.normpath(member.name)
            if member.size > MAX_FILE_BYTES or is_secret_file(name):
                kept[name] = None
                continue
            handle = tar.extractfile(member)
            kept[name] = handle.read() if handle is not None else None
    return kept


_ABSENT = object()
"""A file that is not there (not in the before-copy, or gone from the disk now)."""


def file_diff(path: str, then: object, now: object) -> str | None:
    """The unified diff of one file from ``then`` to ``now`` (bytes, or ``_ABSENT``), or
    ``None`` when it has no lines to show (binary, too big, secret-looking, unreadable)."""
    if is_secret_file(path):
        return None
    old = "" if then is _ABSENT else _text(then)
    new = "" if now is _ABSENT else _text(now)
    if old is None or new is None:
        return None
    a = "/dev/null" if then is _ABSENT else f"a/{path}"
    b = "/dev/null" if now is _ABSENT else f"b/{path}"
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), a, b, lineterm=""))
    if not lines:
        return ""
    return f"diff --git a/{path} b/{path}\n" + "\n".join(lines) + "\n"


def _text(content: object) -> str | None:
    if not isinstance(content, bytes) or b"\0" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _inside(root: Path, path: str) -> str | None:
    """``path``'s real location when it lies under the real workspace, else ``None``."""
    base = os.path.realpath(root)
    parent = os.path.realpath(os.path.join(base, os.path.dirname(path)))
    if parent != base and not parent.startswith(base + os.sep):
        return None
    return os.path.join(parent, os.path.basename(path))


def read_now(root: Path, path: str) -> object:
    """The file's bytes now; ``_ABSENT`` when it is gone; ``None`` when it cannot be shown
    (too big, not a regular file, outside the workspace)."""
    where = _inside(root, path)
    if where is None:
        return None
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return _ABSENT
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:  # a FIFO, a device
            return None
        return handle.read(MAX_FILE_BYTES + 1)


def _lstat(root: Path | None, path: str) -> os.stat_result | None:
    """The file's own status (a link's, not its target's), when it lies under the workspace."""
    where = _inside(root, path) if root is not None else None
    try:
        return os.lstat(where) if where else None
    except OSError:
        return None


def _listed(root: Path | None, path: str) -> FileChange:
    """``path`` without a line diff: listed with its size now."""
    found = _lstat(root, path)
    return FileChange(path, binary=True, size=found.st_size if found else None)
