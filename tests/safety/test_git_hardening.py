"""localhand's own git runs no program the repository names, and hands git no secret.

Each test arms a real repository the way a model could (``.git/config``, an included config,
``.gitattributes``, hooks): every program-running key points at a script that writes its
environment to a canary file outside the repository. The control test runs plain git the way
localhand used to and sees the canaries appear; the others run localhand's real entry points
and check that no canary appears and that the snapshot and diff are still right.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from localhand.batch.workspace import task_workspace
from localhand.evidence import gitstate
from localhand.prompt.system import _git_branch
from localhand.safety.box import git as safegit

SECRET = "sk-test-0123456789abcdefghijklmnopqrstuv"
PLAIN_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def plain_git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """git as anyone would run it: the repository's config in full effect."""
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **PLAIN_GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    return done.stdout


class Armed:
    """A repository whose config runs a canary script from every key that can run one."""

    def __init__(self, tmp_path: Path) -> None:
        self.repo = tmp_path / "repo"
        self.canaries = tmp_path / "canaries"
        self.scripts = tmp_path / "scripts"
        self.outside = tmp_path / "outside"
        for directory in (self.repo, self.canaries, self.scripts, self.outside):
            directory.mkdir()
        (self.outside / "private.txt").write_text("not for the snapshot\n")
        plain_git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "a.py").write_text("a = 1\n")
        (self.repo / "secret.txt").write_text("raw bytes on disk\n")
        (self.repo / "data.bin").write_text("one\n")
        plain_git(self.repo, "add", ".")
        plain_git(self.repo, "commit", "-qm", "start")
        self.arm()

    def script(self, name: str) -> str:
        """A program that leaves ``canaries/<name>`` (its environment) and passes stdin on."""
        path = self.scripts / name
        path.write_text(f"#!/bin/sh\nenv > '{self.canaries / name}'\nexec cat\n")
        path.chmod(0o755)
        return str(path)

    def arm(self) -> None:
        git_dir = self.repo / ".git"
        hooks_path = self.scripts / "hooks"
        hooks_path.mkdir()
        for hook in ("reference-transaction", "post-checkout", "post-index-change", "pre-auto-gc"):
            for directory, prefix in ((git_dir / "hooks", "hook-"), (hooks_path, "hookspath-")):
                (directory / hook).write_text(f"#!/bin/sh\nexec '{self.script(prefix + hook)}'\n")
                (directory / hook).chmod(0o755)
        included = self.scripts / "included.config"
        included.write_text(f'[filter "inc"]\n\tclean = {self.script("include-filter")}\n')
        conditional = self.scripts / "conditional.config"
        conditional.write_text(f'[diff "incdiff"]\n\ttextconv = {self.script("includeif")}\n')
        settings = {
            "core.fsmonitor": self.script("fsmonitor"),
            "core.hooksPath": str(hooks_path),
            "core.pager": self.script("pager"),
            "core.editor": self.script("editor"),
            "sequence.editor": self.script("sequence-editor"),
            "core.askPass": self.script("askpass"),
            "core.sshCommand": self.script("ssh"),
            "core.alternateRefsCommand": self.script("alternate-refs"),
            "diff.external": self.script("external-diff"),
            "diff.evil.textconv": self.script("textconv"),
            "diff.evil.command": self.script("diff-command"),
            "filter.evil.clean": self.script("clean"),
            "filter.evil.smudge": self.script("smudge"),
            "filter.evil.process": self.script("process"),
            "filter.evil.required": "true",
            "filter.a=b.clean": self.script("clean-a=b"),
            "merge.evil.driver": self.script("merge-driver"),
            "credential.helper": "!" + self.script("credential"),
            "credential.https://example.com.helper": "!" + self.script("credential-url"),
            "uploadpack.packObjectsHook": self.script("pack-objects-hook"),
            "gpg.program": self.script("gpg"),
            "commit.gpgSign": "true",
            "include.path": str(included),
            f"includeIf.gitdir:{git_dir}/.path": str(conditional),
        }
        for key, value in settings.items():
            plain_git(self.repo, "config", key, value)
        (self.repo / ".gitattributes").write_text(
            "secret.txt filter=evil diff=evil merge=evil\n"
            "a.py filter=inc\n"
            "*.bin diff=incdiff\n"
            "weird.txt filter=a=b\n"
        )
        (self.repo / "weird.txt").write_text("weird\n")

    def fired(self) -> list[str]:
        return sorted(path.name for path in self.canaries.iterdir())


@pytest.fixture
def armed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Armed:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return Armed(tmp_path)


def test_the_armed_repository_does_run_programs_for_plain_git(armed: Armed) -> None:
    """The control: the same steps as localhand's snapshot, with plain git, fire the canaries
    (with the API key in their environment), so the tests below can fail."""
    index = armed.repo.parent / "control-index"
    (armed.repo / "data.bin").write_text("two\n")
    plain_git(armed.repo, "add", "--all", "--", ".", env={"GIT_INDEX_FILE": str(index)})
    tree = plain_git(armed.repo, "write-tree", env={"GIT_INDEX_FILE": str(index)}).strip()
    commit = plain_git(armed.repo, "commit-tree", tree, "-p", "HEAD", "-m", "x").strip()
    plain_git(armed.repo, "update-ref", "refs/control", commit)
    plain_git(armed.repo, "diff", "HEAD", commit)
    fired = set(armed.fired())
    expected = {
        "fsmonitor",
        "hookspath-post-index-change",
        "hookspath-reference-transaction",
        "include-filter",
        "process",
        "external-diff",
    }
    assert expected <= fired, fired
    assert SECRET in (armed.canaries / "fsmonitor").read_text()


def test_record_before_and_with_diff_run_nothing_and_stay_right(armed: Armed) -> None:
    index_before = (armed.repo / ".git" / "index").read_bytes()
    state = gitstate.record_before(armed.repo, "t1")
    assert state is not None
    (armed.repo / "a.py").write_text("a = 2\n")
    (armed.repo / "secret.txt").write_text("raw bytes, edited\n")
    (armed.repo / "data.bin").write_text("two\n")
    (armed.repo / "new.txt").write_text("new\n")
    after = gitstate.with_diff(state, armed.repo)

    assert armed.fired() == []
    assert (armed.repo / ".git" / "index").read_bytes() == index_before
    # The snapshot holds the bytes on disk: no clean filter rewrote them.
    kept = safegit.git(armed.repo, "show", f"{state.before}:secret.txt")
    assert kept == "raw bytes on disk\n"
    assert safegit.git(armed.repo, "rev-parse", state.ref) == state.before + "\n"
    diff = after.diff
    for line in ("+a = 2", "-raw bytes on disk", "+raw bytes, edited", "+two", "+new"):
        assert line in diff.splitlines(), diff
    assert "Binary" not in diff
    assert armed.fired() == []


def test_a_snapshot_lists_the_config_once_and_each_later_call_afresh(
    armed: Armed, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[int] = []
    real_run = safegit._run

    def counting(argv: list[str], *rest: object) -> subprocess.CompletedProcess[str]:
        if "config" in argv[1:3]:
            listed.append(1)
        return real_run(argv, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(safegit, "_run", counting)
    state = gitstate.record_before(armed.repo, "t1")
    assert state is not None and len(listed) == 1, "one listing for the whole snapshot"
    safegit.git(armed.repo, "status", "--short")
    safegit.git(armed.repo, "status", "--short")
    assert len(listed) == 3, "outside a snapshot, every call reads the config again"
    assert armed.fired() == []


def test_no_secret_reaches_a_program_git_might_run(
    armed: Armed, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The caller's environment is hostile too: git's own variables that name programs.
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", armed.script("env-external-diff"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{armed.script('env-fsm')}'")
    monkeypatch.setenv("GIT_DIR", str(armed.outside))
    state = gitstate.record_before(armed.repo, "t2")
    assert state is not None
    (armed.repo / "a.py").write_text("a = 3\n")
    assert "+a = 3" in gitstate.with_diff(state, armed.repo).diff
    assert armed.fired() == []

    env = safegit.git_environment(safegit.find_repository(armed.repo))
    assert "OPENAI_API_KEY" not in env
    assert SECRET not in "".join(env.values())
    outside_git = {k for k in env if k.startswith("GIT_")} - {
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_TERMINAL_PROMPT",
        "GIT_PROTOCOL_FROM_USER",
        "GIT_OPTIONAL_LOCKS",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_CONFIG_COUNT",
    }
    assert all(k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")) for k in outside_git)
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_DIR"] == str(armed.repo / ".git")


def test_a_program_that_does_run_gets_no_secret(armed: Armed) -> None:
    """Were git to run a program despite the overrides, the program would inherit git's
    environment: run the canary script with exactly that environment and read what it saw."""
    env = safegit.git_environment(safegit.find_repository(armed.repo))
    subprocess.run([armed.script("direct")], env=env, stdin=subprocess.DEVNULL, check=True)
    seen = (armed.canaries / "direct").read_text()
    assert SECRET not in seen
    assert "OPENAI_API_KEY" not in seen


def test_core_worktree_cannot_point_the_snapshot_elsewhere(armed: Armed) -> None:
    plain_git(armed.repo, "config", "core.worktree", str(armed.outside))
    state = gitstate.record_before(armed.repo, "t3")
    assert state is not None
    (armed.repo / "a.py").write_text("a = 4\n")
    diff = gitstate.with_diff(state, armed.repo).diff
    assert "+a = 4" in diff
    files = safegit.git(armed.repo, "ls-tree", "-r", "--name-only", state.before) or ""
    assert "private.txt" not in files
    assert "a.py" in files.split()


def test_a_git_planted_on_path_inside_the_workspace_is_not_run(
    armed: Armed, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = armed.repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "git").write_text(f"#!/bin/sh\nexec '{armed.script('planted-git')}'\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    state = gitstate.record_before(armed.repo, "t4")
    assert state is not None
    assert armed.fired() == []


def test_batch_worktrees_run_no_hook_filter_or_fsmonitor(armed: Armed, tmp_path: Path) -> None:
    with task_workspace(armed.repo, tmp_path / "batch", "task") as prepared:
        assert prepared.kind == "worktree"
        # Checked out as stored, not through the smudge filter.
        assert (prepared.path / "secret.txt").read_text() == "raw bytes on disk\n"
        (prepared.path / "secret.txt").write_text("changed in the worktree\n")
    assert prepared.ref == "refs/localhand/batch/task"
    shown = safegit.git(armed.repo, "show", f"{prepared.ref}:secret.txt")
    assert shown == "changed in the worktree\n"
    assert not (tmp_path / "batch" / "task").exists()
    assert armed.fired() == []


def test_the_prompt_branch_runs_nothing(armed: Armed) -> None:
    assert _git_branch(armed.repo) == "main"
    assert armed.fired() == []


def test_not_a_repository_is_a_plain_failure(tmp_path: Path) -> None:
    assert gitstate.record_before(tmp_path, "t5") is None
    done = safegit.run_git(tmp_path / "missing", "status")
    assert done.returncode != 0
    assert "not a git repository" in done.stderr


def test_driver_names_are_read_from_the_listing() -> None:
    listing = "filter.Evil.clean\nx\0diff.a.b.textconv\ny\0credential.helper\nz\0core.bare\nfalse\0"
    overrides = dict(safegit.driver_overrides(listing))
    assert overrides["filter.Evil.clean"] == ""
    assert overrides["filter.Evil.required"] == "false"
    assert overrides["diff.a.b.textconv"] == ""
    assert not any(key.startswith("core.") for key in overrides)


def test_a_git_that_hangs_is_killed_with_what_it_started(tmp_path: Path) -> None:
    started = time.monotonic()
    done = safegit._run(["sh", "-c", "sleep 30 & sleep 30"], tmp_path, dict(os.environ), 0.3)
    assert done.returncode == 124
    assert "timed out" in done.stderr
    assert time.monotonic() - started < 10
