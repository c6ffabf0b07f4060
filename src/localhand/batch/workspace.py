"""Each task of a batch works in its own workspace, made fresh and removed afterwards.

- **A git repository** (the task's workspace is in one): a ``git worktree`` of a snapshot of
  the working tree as it is now (tracked and untracked files, uncommitted changes included,
  ignored files left out), detached, so no branch is touched. Before the worktree is removed,
  what the task changed is kept as ``refs/localhand/batch/<task-id>``
  (``git diff <before> refs/localhand/batch/<task-id>``; the Result's ``git`` has ``before``).
- **Anything else**: a copy of the folder (``--keep-workspaces`` keeps it for a look).

Workspaces live under one root per batch file; a task's is ``<root>/<task-id>``. Whatever is
there when a task starts (left by a killed batch) is removed first, worktree registration
included, so a rerun always starts clean.

git runs through ``localhand.safety.box.git``: no hook (``post-checkout``), smudge filter or
fsmonitor from the repository's config runs when a worktree is added, kept or removed. Every
git that writes runs in the command sandbox, as ``localhand run``'s own does, writing only
where it must: the repository's directories and the batch's root when a worktree is added or
removed, and after the task only the worktree and the git directories it had before the task
(``Prepared.writable``): a task that pointed its worktree's ``.git`` file at another
repository gets no write there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from localhand.errors import ConfigError
from localhand.evidence.gitstate import snapshot_commit
from localhand.safety.box.git import git, run_git

_repo_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def default_root(tasks_file: Path) -> Path:
    """``$TMPDIR/localhand-batch-<user>-<hash of the batch file's path>``."""
    digest = hashlib.sha256(str(tasks_file.resolve()).encode()).hexdigest()[:12]
    user = os.environ.get("USER") or str(os.getuid() if hasattr(os, "getuid") else "user")
    return Path(tempfile.gettempdir()) / f"localhand-batch-{user}-{digest}"


@dataclass
class Prepared:
    """A task's workspace: where it is, how it was made, and (after the task, for a worktree
    whose files changed) the ref that keeps the changes."""

    path: Path
    kind: str
    """``worktree`` or ``copy``."""
    ref: str | None = None
    writable: tuple[str, ...] = ()
    """For a worktree: where localhand's git may write after the task, read before it."""


@contextlib.contextmanager
def task_workspace(
    source: Path, root: Path, task_id: str, *, keep: bool = False
) -> Iterator[Prepared]:
    """A fresh workspace for one task, removed on exit (unless ``keep``)."""
    if not source.is_dir():
        raise ConfigError(f"workspace {source} is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    dest = root / task_id
    top = git(source, "rev-parse", "--show-toplevel")
    repo = Path(top.strip()) if top else None
    _remove(dest, repo)
    if repo is None:
        shutil.copytree(source, dest, symlinks=True, ignore=_not_inside(root))
        prepared = Prepared(dest, "copy")
    else:
        prefix = (git(source, "rev-parse", "--show-prefix") or "").strip()
        _add_worktree(repo, source, dest)
        prepared = Prepared(dest / prefix if prefix else dest, "worktree")
        prepared.writable = (str(dest), *git_places(dest))
    try:
        yield prepared
    finally:
        if repo is not None:
            prepared.ref = keep_changes(dest, task_id, prepared.writable or None)
        if not keep:
            _remove(dest, repo)


def git_places(path: Path) -> tuple[str, ...]:
    """The git directory and common directory of the repository at ``path`` (real paths)."""
    places = git(path, "rev-parse", "--absolute-git-dir", "--git-common-dir") or ""
    found = [os.path.join(path, line) for line in places.splitlines() if line.strip()]
    return tuple(dict.fromkeys(map(os.path.realpath, found)))


def keep_changes(
    worktree: Path, task_id: str, writable: tuple[str, ...] | None = None
) -> str | None:
    """Commit the worktree's files (as they are) under ``refs/localhand/batch/<task-id>``,
    if they differ from where the worktree started; returns the ref. With ``writable``
    (``Prepared.writable``) git runs sandboxed and writes only there."""
    commit = snapshot_commit(worktree, f"localhand batch: task {task_id}", writable)
    if commit is None:
        return None
    after = git(worktree, "rev-parse", f"{commit}^{{tree}}")
    before = git(worktree, "rev-parse", "HEAD^{tree}")
    ref = f"refs/localhand/batch/{task_id}"
    if after == before or git(worktree, "update-ref", ref, commit, writable=writable) is None:
        return None
    return ref


def _add_worktree(repo: Path, source: Path, dest: Path) -> None:
    with _lock(repo):  # git's worktree bookkeeping does not like two adds at once
        places = git_places(source)
        message = "localhand batch: the workspace before the batch"
        commit = snapshot_commit(source, message, (str(source), *places))
        if commit is None:
            raise ConfigError(f"cannot snapshot the git repository at {repo} for a worktree")
        writable = (str(dest.parent), *places)
        done = run_git(repo, "worktree", "add", "--detach", str(dest), commit, writable=writable)
        if done.returncode != 0:
            raise ConfigError(
                f"git worktree add {dest} failed in {repo}: {done.stderr.strip()[:300]}"
            )


def _remove(dest: Path, repo: Path | None) -> None:
    if repo is not None:
        with _lock(repo):
            writable = (str(dest.parent), *git_places(repo))
            if dest.exists():
                run_git(repo, "worktree", "remove", "--force", "--force", str(dest),
                        writable=writable)  # fmt: skip
            run_git(repo, "worktree", "prune", writable=writable)
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest, ignore_errors=True)


def _not_inside(root: Path) -> Callable[[str, list[str]], list[str]]:
    root = root.resolve()

    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if (Path(directory) / n).resolve() == root]

    return ignore


def _lock(repo: Path) -> threading.Lock:
    with _locks_lock:
        return _repo_locks.setdefault(str(repo), threading.Lock())
