"""git: what reads, what changes the repository, and what loses work or rewrites history.

Losing uncommitted work (``reset --hard``, ``checkout -- .``, ``clean -f``), rewriting or
force-pushing history, deleting reflogs and stashes, and configuration that makes git run a
program (hooks, aliases with ``!``, ``core.sshCommand``...) are dangerous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from localhand.safety.risk.shellsyntax import Word
from localhand.safety.risk.types import DANGEROUS, MODERATE, Feed

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

READS = frozenset(
    "status log diff show rev-parse ls-files ls-tree blame grep describe shortlog cat-file help "
    "version whatchanged name-rev merge-base for-each-ref count-objects check-ignore check-attr "
    "show-ref show-branch rev-list var cherry range-diff diff-tree diff-files diff-index fsck "
    "verify-commit verify-tag annotate".split()
)
_GLOBAL_WITH_VALUE = frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace"))
_RUNS_PROGRAM = (
    "core.hookspath",
    "core.fsmonitor",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "credential.helper",
    "sequence.editor",
    "diff.external",
    "gpg.program",
    "gpg.ssh.program",
    "uploadpack.packobjectshook",
    "include.path",
)
_RUNS_PROGRAM_PARTS = (
    "filter.",
    "includeif.",
    ".textconv",
    ".driver",
    ".command",
    ".cmd",
    ".uploadpack",
    ".receivepack",
    ".helper",
    ".program",
    "protocol.",
)


@dataclass(frozen=True, slots=True)
class GitCall:
    """A git subcommand's arguments: the words, their texts, long and short flags."""

    rest: list[Word]
    texts: list[str]
    flags: set[str]
    short: set[str]


def git(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    index = 0
    while index < len(args) and args[index].text.startswith("-"):
        text = args[index].text
        if text == "-c" and index + 1 < len(args):
            _config(a, args[index + 1].text, "git -c")
        if text == "-C" and index + 1 < len(args):
            a.where.chdir(args[index + 1])
        index += 2 if text in _GLOBAL_WITH_VALUE else 1
    if index >= len(args):
        return
    sub, rest = args[index].text, args[index + 1 :]
    texts = [w.text for w in rest]
    flags = {t for t in texts if t.startswith("-")}
    short = {c for t in texts if t.startswith("-") and not t.startswith("--") for c in t[1:]}
    runs_program = any(t.startswith("ext::") for t in texts) or flags & {"--upload-pack", "-u"}
    if runs_program and sub in ("clone", "fetch", "pull", "ls-remote", "push", "remote"):
        a.flag(DANGEROUS, f"makes git run a program (git {sub} with ext:: or --upload-pack)")
    if sub in READS:
        return
    handler = _SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(a, GitCall(rest, texts, flags, short))
    else:
        a.flag(MODERATE, f"changes the repository (git {sub})")


def _config(a: Analyzer, setting: str, how: str) -> None:
    key, _, value = setting.partition("=")
    key = key.lower()
    if key.startswith("alias.") and value.lstrip().startswith("!"):
        a.flag(DANGEROUS, f"defines a git alias that runs a shell command ({how})")
    elif key in _RUNS_PROGRAM or any(part in key for part in _RUNS_PROGRAM_PARTS):
        a.flag(DANGEROUS, f"sets {key}, which makes git run a program ({how})")


def _push(a: Analyzer, g: GitCall) -> None:
    a.network = True
    forced = {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--prune"}
    refspecs = [t for t in g.texts if not t.startswith("-")]
    if g.flags & forced or "f" in g.short or any(t.startswith("+") for t in refspecs):
        a.flag(DANGEROUS, "force-pushes, which can overwrite history on the remote")
    elif "--delete" in g.flags or "d" in g.short or any(t.startswith(":") for t in refspecs[1:]):
        a.flag(DANGEROUS, "deletes a branch or tag on the remote")
    else:
        a.flag(MODERATE, "pushes commits to a remote")


def _reset(a: Analyzer, g: GitCall) -> None:
    if g.flags & {"--hard", "--merge", "--keep"}:
        a.flag(DANGEROUS, "discards uncommitted changes (git reset --hard)")
    else:
        a.flag(MODERATE, "moves the branch or unstages files (git reset)")


def _clean(a: Analyzer, g: GitCall) -> None:
    if "n" in g.short or "--dry-run" in g.flags:
        return
    if "f" in g.short or "--force" in g.flags:
        a.flag(DANGEROUS, "deletes untracked files for good (git clean)")
    else:
        a.flag(MODERATE, "deletes untracked files (git clean)")


def _checkout(a: Analyzer, g: GitCall) -> None:
    if "f" in g.short or "--force" in g.flags or "--discard-changes" in g.flags:
        a.flag(DANGEROUS, "discards uncommitted changes (git checkout --force)")
    elif "--" in g.texts or "." in g.texts or "-p" in g.flags or "--patch" in g.flags:
        a.flag(DANGEROUS, "discards uncommitted changes to files (git checkout -- path)")
    else:
        a.flag(MODERATE, "switches branches (git checkout)")


def _restore(a: Analyzer, g: GitCall) -> None:
    staged_only = ("--staged" in g.flags or "S" in g.short) and not (
        "--worktree" in g.flags or "W" in g.short
    )
    if staged_only:
        a.flag(MODERATE, "unstages files (git restore --staged)")
    else:
        a.flag(DANGEROUS, "discards uncommitted changes to files (git restore)")


def _rebase(a: Analyzer, g: GitCall) -> None:
    if g.flags & {"--abort", "--quit", "--show-current-patch", "--continue"}:
        a.flag(MODERATE, "continues or stops a rebase")
    else:
        a.flag(DANGEROUS, "rewrites commit history (git rebase)")
    if any(t.startswith("--exec") for t in g.texts) or "x" in g.short:
        a.flag(DANGEROUS, "runs commands during a rebase (git rebase --exec)")


def _commit(a: Analyzer, g: GitCall) -> None:
    if "--amend" in g.flags:
        a.flag(DANGEROUS, "rewrites the last commit (git commit --amend)")
    else:
        a.flag(MODERATE, "creates a commit")


def _history(a: Analyzer, g: GitCall) -> None:
    a.flag(DANGEROUS, "rewrites the repository's history")


def _reflog(a: Analyzer, g: GitCall) -> None:
    if g.texts and g.texts[0] in ("expire", "delete"):
        a.flag(DANGEROUS, "deletes reflog entries, the way to recover lost commits")


def _gc(a: Analyzer, g: GitCall) -> None:
    if any(t.startswith("--prune") and not t.endswith("never") for t in g.texts):
        a.flag(DANGEROUS, "deletes unreachable commits for good (git gc --prune)")
    else:
        a.flag(MODERATE, "compacts the repository (git gc)")


def _prune(a: Analyzer, g: GitCall) -> None:
    if "n" not in g.short and "--dry-run" not in g.flags:
        a.flag(DANGEROUS, "deletes unreachable commits for good (git prune)")


def _update_ref(a: Analyzer, g: GitCall) -> None:
    a.flag(DANGEROUS, "moves or deletes a ref directly (git update-ref), which can lose commits")


def _branch(a: Analyzer, g: GitCall) -> None:
    operands = [t for t in g.texts if not t.startswith("-")]
    if "D" in g.short or (
        ("d" in g.short or "--delete" in g.flags) and ("f" in g.short or "--force" in g.flags)
    ):
        a.flag(DANGEROUS, "deletes a branch even if it is not merged (git branch -D)")
    elif "d" in g.short or "--delete" in g.flags or "M" in g.short or "C" in g.short:
        a.flag(MODERATE, "deletes, renames or copies a branch")
    elif operands and not g.flags & {"--list", "--contains", "--merged", "--no-merged", "-a", "-r"}:
        a.flag(MODERATE, "creates or changes a branch")


def _tag(a: Analyzer, g: GitCall) -> None:
    operands = [t for t in g.texts if not t.startswith("-")]
    if operands and not ("l" in g.short or "--list" in g.flags):
        a.flag(MODERATE, "creates or deletes a tag")


def _stash(a: Analyzer, g: GitCall) -> None:
    action = g.texts[0] if g.texts else "push"
    if action in ("drop", "clear"):
        a.flag(DANGEROUS, f"deletes stashed changes for good (git stash {action})")
    elif action not in ("list", "show"):
        a.flag(MODERATE, f"stashes or restores changes (git stash {action})")


def _git_config(a: Analyzer, g: GitCall) -> None:
    operands = [t for t in g.texts if not t.startswith("-")]
    reading = any(t.startswith(("--get", "--list", "--show")) for t in g.texts) or "l" in g.short
    if reading or len(operands) < 2:
        return
    _config(a, f"{operands[0]}={operands[1]}", "git config")
    if g.flags & {"--global", "--system"}:
        a.flag(MODERATE, "changes git settings outside the workspace")
    else:
        a.flag(MODERATE, "changes the repository's git settings")


def _remote_ops(a: Analyzer, g: GitCall) -> None:
    a.network = True
    a.flag(MODERATE, "fetches from or clones a remote repository")


def _remote(a: Analyzer, g: GitCall) -> None:
    if g.texts and g.texts[0] in ("add", "remove", "rm", "rename", "set-url", "set-head", "prune"):
        a.flag(MODERATE, f"changes the repository's remotes (git remote {g.texts[0]})")


def _submodule(a: Analyzer, g: GitCall) -> None:
    if g.texts and g.texts[0] == "foreach":
        commands = [w for w in g.rest[1:] if not w.text.startswith("--")]
        a.run_text(
            Word(" ".join(w.text for w in commands), any(w.dynamic for w in commands)), "runs"
        )
    else:
        a.network = True
        a.flag(MODERATE, "changes submodules")


def _worktree(a: Analyzer, g: GitCall) -> None:
    if g.texts and g.texts[0] == "remove" and ("f" in g.short or "--force" in g.flags):
        a.flag(DANGEROUS, "deletes a worktree with uncommitted changes (git worktree remove -f)")
    elif g.texts and g.texts[0] != "list":
        a.flag(MODERATE, f"changes worktrees (git worktree {g.texts[0]})")


_SUBCOMMANDS = {
    "push": _push,
    "reset": _reset,
    "clean": _clean,
    "checkout": _checkout,
    "switch": _checkout,
    "restore": _restore,
    "rebase": _rebase,
    "commit": _commit,
    "filter-branch": _history,
    "filter-repo": _history,
    "replace": _history,
    "reflog": _reflog,
    "gc": _gc,
    "prune": _prune,
    "update-ref": _update_ref,
    "branch": _branch,
    "tag": _tag,
    "stash": _stash,
    "config": _git_config,
    "clone": _remote_ops,
    "fetch": _remote_ops,
    "pull": _remote_ops,
    "ls-remote": _remote_ops,
    "remote": _remote,
    "submodule": _submodule,
    "worktree": _worktree,
}
