"""The workspace's state before a run, kept in git, and the diff of what the run changed.

Before a run in a git workspace, the working tree (tracked and untracked files, minus ignored
ones) is written as a commit through a temporary index, so the user's index, stash and
branches are left alone. The commit is kept under ``refs/localhand/<task_id>`` so git does
not collect it, and the Result says how to go back to it.

Every git command here goes through ``localhand.safety.box.git``: the workspace's config cannot
make localhand's own git run a program (fsmonitor, hooks, filters, textconv...), and git gets
the scrubbed environment. A file with a filter attribute is kept as its bytes on disk.

Where the repository lives (its git directory and, for a linked worktree, the common one) is
read before the run, when the model has not touched it, and git may write only there and in
the workspace (it runs in the command sandbox): a model that turned ``.git`` into a file
pointing at another repository, or ``objects`` into a symlink, gets no write outside from the
snapshot after the run, which then fails and is left out of the Result.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from localhand.safety.box.git import config_read_once, git
from localhand.safety.secrets.scrub import scrub_text

__all__ = [
    "MAX_DIFF_CHARS",
    "GitState",
    "record_before",
    "snapshot_commit",
    "with_diff",
]

MAX_DIFF_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class GitState:
    before: str
    """Commit holding the workspace as it was before the run."""
    ref: str
    diff: str = ""
    """``git diff`` from ``before`` to the workspace after the run (capped)."""
    writable: tuple[str, ...] = ()
    """Where git may write: the workspace, then the repository's directories as they were
    before the run."""

    def to_dict(self) -> dict[str, str]:
        return {
            "before": self.before,
            "ref": self.ref,
            "restore": f"git restore --source={self.before} --worktree -- .",
            "diff": self.diff,
        }


@config_read_once()  # before the model's first command: nothing else runs yet
def record_before(workspace: Path, task_id: str) -> GitState | None:
    """Snapshot the workspace as a commit; ``None`` when it is not in a git repository."""
    places = git(workspace, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    if places is None:
        return None
    found = [os.path.join(workspace, line) for line in places.splitlines() if line.strip()]
    writable = tuple(dict.fromkeys([str(workspace), *map(os.path.realpath, found)]))
    message = f"localhand: workspace before task {task_id}"
    commit = snapshot_commit(workspace, message, writable)
    if commit is None:
        return None
    ref = f"refs/localhand/{task_id}"
    if git(workspace, "update-ref", ref, commit, writable=writable) is None:
        return None
    return GitState(before=commit, ref=ref, writable=writable)


@config_read_once()
def with_diff(state: GitState, workspace: Path) -> GitState:
    """The same state, plus the diff from ``before`` to the workspace now (after the run:
    the model's commands, background ones included, have ended)."""
    after = snapshot_commit(workspace, "localhand: workspace after the run", state.writable)
    if after is None:
        return state
    # run_git adds --no-ext-diff --no-textconv to every diff.
    diff = git(
        workspace, "diff", "--no-color", state.before, after, "--", ".", writable=state.writable
    )
    # The Result is printed, stored and shown: a changed .env must not put its secrets there.
    diff = scrub_text(diff or "")
    if len(diff) > MAX_DIFF_CHARS:
        cut = len(diff) - MAX_DIFF_CHARS
        note = f"[... {cut} more characters; run git diff {state.before}]"
        diff = f"{diff[:MAX_DIFF_CHARS]}\n{note}\n"
    return GitState(before=state.before, ref=state.ref, diff=diff, writable=state.writable)


def snapshot_commit(
    workspace: Path, message: str, writable: tuple[str, ...] | None = None
) -> str | None:
    """The working tree (minus ignored files) as a commit, made through a temporary index so
    the user's own index is left alone; ``None`` when git cannot do it. With ``writable``
    (see ``GitState.writable``) git runs sandboxed and writes only there."""
    index = git(workspace, "rev-parse", "--git-path", "index")
    with tempfile.TemporaryDirectory(prefix="localhand-git-") as tmp:
        sandboxed = None if writable is None else (*writable, tmp)
        temp_index = Path(tmp) / "index"
        real_index = workspace / index.strip() if index else None
        if real_index is not None and real_index.is_file():
            # Starting from the real index lets git skip re-hashing files whose stat is unchanged.
            # Its mtime too: git re-hashes a file not older than the index (racily clean), and a
            # copy stamped now would hide an edit that kept the file's size and mtime.
            shutil.copy2(real_index, temp_index)
        env = {"GIT_INDEX_FILE": str(temp_index)}
        if git(workspace, "add", "--all", "--", ".", env=env, writable=sandboxed) is None:
            return None
        tree = git(workspace, "write-tree", env=env, writable=sandboxed)
        if tree is None:
            return None
        parent = git(workspace, "rev-parse", "--verify", "--quiet", "HEAD")
        args = ["commit-tree", tree.strip(), "-m", message]
        if parent:
            args += ["-p", parent.strip()]
        commit = git(workspace, *args, env=_identity(), writable=sandboxed)
        return commit.strip() if commit else None


def _identity() -> dict[str, str]:
    # commit-tree needs an author; a repository without user.name must not make this fail.
    return {
        "GIT_AUTHOR_NAME": os.environ.get("GIT_AUTHOR_NAME", "localhand"),
        "GIT_AUTHOR_EMAIL": os.environ.get("GIT_AUTHOR_EMAIL", "localhand@localhost"),
        "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", "localhand"),
        "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", "localhand@localhost"),
    }
