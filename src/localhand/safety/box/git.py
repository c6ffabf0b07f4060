"""localhand's own git: never a program the repository chose, never a secret in its environment.

localhand runs git itself (the before/after snapshot of a run, batch worktrees, the branch in
the prompt). The model can write the workspace's ``.git/config``, ``.gitattributes`` and any
file a config includes, and many config keys name a program git runs: ``core.fsmonitor``,
hooks, ``filter.<driver>.clean``, ``diff.<driver>.textconv``, ``credential.helper``... Left
alone, localhand's end-of-run snapshot would run such a program outside any sandbox, with
localhand's own environment (API keys) and the network. So every git localhand runs goes
through ``run_git``, which:

- overrides every program-running key with command-line-scope config (``GIT_CONFIG_COUNT``,
  the environment form of ``git -c``: it is read after the repository's config, reaches the
  git processes git itself starts, and takes any driver name, even one with ``=`` in it).
  Per-driver keys are overridden for every driver the repository's config defines, listed
  with ``git config --list --null --includes``, which reads config and runs nothing;
- reads no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``)
  and passes none of the caller's ``GIT_*`` variables: the environment is the scrubbed one
  commands get (``command_environment``), so a program git ran anyway would find no secret;
- points git at the repository it found itself (``GIT_DIR`` and ``GIT_WORK_TREE``), so a
  ``core.worktree`` in the config cannot make the snapshot read the home directory;
- finds the git executable on a ``PATH`` without the workspace in it (a workspace's activated
  ``.venv/bin`` is on ``PATH``, and the model can write a ``git`` there);
- refuses every transport (``protocol.allow=never``): a partial clone's lazy fetch would
  otherwise run ``core.sshCommand`` or a remote helper;
- has a timeout, after which git and whatever it started are killed.

Keys git reads only from protected (system, global, command-line) config, such as
``uploadpack.packObjectsHook``, ``safe.directory`` and ``trace2.*``, are out of the
repository's reach once system and global config are off.

What remains: a driver defined between the listing and the git command it protects (by a
process still running at the end of a run) is not overridden; the sandbox's PID namespace ends
such processes before localhand snapshots.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from localhand.safety.box.proc import kill_group
from localhand.safety.box.sandbox import Sandbox, available, current_sandbox
from localhand.safety.secrets.environment import command_environment

GIT_TIMEOUT_S = 120.0
MIN_VERSION = (2, 32)
"""``GIT_CONFIG_GLOBAL`` and ``GIT_CONFIG_COUNT`` (the overrides) need git 2.32."""
MAX_OVERRIDES = 10_000
"""A config defining more drivers than this takes to override is refused, not half done."""

FIXED_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a hook run by every command that looks at the work tree
    ("core.hooksPath", os.devnull),  # no hook at all (update-ref runs reference-transaction)
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),  # "cat" is git's own "no pager"; --no-pager is passed too
    ("core.editor", ":"),  # ":" is git's own "no editor"
    ("sequence.editor", ":"),
    ("core.askPass", ""),  # empty: no askpass program, and SSH_ASKPASS is not consulted
    ("core.sshCommand", "false"),
    ("core.gitProxy", "none"),
    ("core.alternateRefsCommand", "true"),  # prints no refs
    ("diff.external", ""),  # and --no-ext-diff on every diff
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("protocol.allow", "never"),  # no transport: no ssh, no remote helper, no lazy fetch
    ("submodule.recurse", "false"),
    ("safe.bareRepository", "explicit"),  # no bare repository planted in the workspace
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
"""Program-running keys with no driver name, and what they are set to."""

DRIVER_OVERRIDES: Mapping[str, tuple[tuple[str, str], ...]] = {
    # Empty clean/smudge/process means "no filter" (checked with git 2.39); required=false,
    # or a required filter with no command fails the whole `git add`.
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    # textconv and command are also switched off by --no-textconv and --no-ext-diff on diff.
    "diff": (("textconv", ""), ("command", ""), ("cachetextconv", "false")),
    "merge": (("driver", "false"),),  # localhand never merges; a merge would just conflict
    "credential": (("helper", ""),),  # credential.<url>.helper
}
"""For each ``<section>.<driver>.<key>`` the repository's config defines, what it is set to."""

SUBCOMMAND_FLAGS: Mapping[str, tuple[str, ...]] = {
    "diff": ("--no-ext-diff", "--no-textconv"),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
    "commit-tree": ("--no-gpg-sign",),
}
"""Flags put right after these subcommands: the same switches, said twice."""

_VERSION = re.compile(r"git version (\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class Repository:
    git_dir: Path
    """The ``.git`` directory, or the ``.git`` file of a linked worktree."""
    work_tree: Path


def find_repository(start: Path) -> Repository | None:
    """The repository git's own discovery would find from ``start``: the nearest ``.git`` at or
    above it, not crossing into another file system. Unlike git, ``core.worktree`` is not
    consulted: the work tree is always the directory holding ``.git``."""
    try:
        here = Path(os.path.realpath(start))
        device = here.stat().st_dev
    except (OSError, ValueError):
        return None
    for directory in (here, *here.parents):
        try:
            if directory.stat().st_dev != device:
                return None
        except OSError:
            return None
        dotgit = directory / ".git"
        if dotgit.is_dir() or dotgit.is_file():
            return Repository(dotgit, directory)
    return None


def git_environment(
    repository: Repository | None = None,
    extra: Mapping[str, str] | None = None,
    overrides: Iterable[tuple[str, str]] = FIXED_OVERRIDES,
) -> dict[str, str]:
    """The environment localhand's git runs with: scrubbed of secrets, no ``GIT_*`` from the
    caller, no system or global config, ``overrides`` as command-line config, then ``extra``
    (the caller's own ``GIT_INDEX_FILE``, identity...)."""
    # command_environment has no askpass, ssh agent or display either (host_service).
    env = {
        name: value for name, value in command_environment().items() if not name.startswith("GIT_")
    }
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PROTOCOL_FROM_USER="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        GIT_EDITOR=":",
    )
    env["PATH"] = _trusted_path(env.get("PATH", os.defpath), repository)
    if repository is not None:
        env["GIT_DIR"] = str(repository.git_dir)
        env["GIT_WORK_TREE"] = str(repository.work_tree)
    config = list(overrides)
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_CONFIG_COUNT"] = str(len(config))
    env.update(extra or {})
    return env


def driver_overrides(listing: str) -> list[tuple[str, str]]:
    """Overrides for every driver named in ``listing`` (``git config --list --null``'s output:
    ``key\\nvalue`` entries separated by NUL) whose section is in ``DRIVER_OVERRIDES``."""
    drivers: dict[tuple[str, str], None] = {}  # ordered and without repeats
    for entry in listing.split("\0"):
        key = entry.split("\n", 1)[0]
        section, dot, rest = key.partition(".")
        subsection, dot2, _name = rest.rpartition(".")
        if dot and dot2 and subsection and section.lower() in DRIVER_OVERRIDES:
            drivers[(section.lower(), subsection)] = None
    return [
        (f"{section}.{driver}.{key}", value)
        for section, driver in drivers
        for key, value in DRIVER_OVERRIDES[section]
    ]


def run_git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    writable: Sequence[str | os.PathLike[str]] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``cwd`` hardened as this module says. ``env`` adds variables (a
    temporary ``GIT_INDEX_FILE``, an identity). With ``writable`` (the workspace first), git
    runs in the command sandbox, without network, and can write only there: a model that
    pointed ``.git``, ``commondir`` or ``objects`` elsewhere during the run cannot make
    localhand's git write outside. A git that cannot start, times out or refuses to run safely
    is a non-zero exit status with the reason in ``stderr``, never an exception."""
    argv = ["git", *args]
    repository = find_repository(cwd)
    if repository is None:
        return _failed(argv, 128, f"fatal: not a git repository: {cwd}")
    executable = git_executable(repository)
    if executable is None:
        return _failed(argv, 127, "git not found (or too old to run safely: need 2.32)")
    listing = _config_listing(executable, repository, cwd, timeout)
    if listing.returncode not in (0, 1):  # 1: no config at all; anything else: unreadable
        return _failed(argv, listing.returncode, listing.stderr)
    overrides = [*FIXED_OVERRIDES, *driver_overrides(listing.stdout), *_excludes(executable)]
    if len(overrides) > MAX_OVERRIDES:
        return _failed(argv, 128, "the repository's config defines too many drivers to override")
    environment = git_environment(repository, env, overrides)
    if args and args[0] in SUBCOMMAND_FLAGS:
        args = (args[0], *SUBCOMMAND_FLAGS[args[0]], *args[1:])
    argv = _contained([executable, "--no-pager", *args], cwd, writable)
    return _run(argv, cwd, environment, timeout)


_listings: ContextVar[dict[Path, subprocess.CompletedProcess[str]] | None] = ContextVar(
    "localhand_git_listings", default=None
)


@contextmanager
def config_read_once() -> Iterator[None]:
    """Within the block, each repository's config is listed once rather than before every git
    call (about 5 ms each; a snapshot makes seven calls). Only for a run of git calls during
    which nothing else can change the config: the snapshots before the model's first command
    and after its last (its background processes are ended by then)."""
    token = _listings.set({})
    try:
        yield
    finally:
        _listings.reset(token)


def _config_listing(
    executable: str, repository: Repository, cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``git config --list`` of ``repository``: what names the drivers to override."""
    kept = _listings.get()
    if kept is not None and repository.git_dir in kept:
        return kept[repository.git_dir]
    base = git_environment(repository)
    listing = _run([executable, "config", "--list", "--null", "--includes"], cwd, base, timeout)
    if kept is not None:
        kept[repository.git_dir] = listing
    return listing


def _contained(
    argv: list[str], cwd: Path, writable: Sequence[str | os.PathLike[str]] | None
) -> list[str]:
    """``argv`` in the sandbox in force, writing only ``writable``, where one can be had."""
    if not writable or not current_sandbox().on or available() is not None:
        return argv
    workspace, *others = writable
    return Sandbox(network=False).wrap(argv, workspace, cwd, also_writable=others)


def git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    writable: Sequence[str | os.PathLike[str]] | None = None,
) -> str | None:
    """git's output, or ``None`` when it failed."""
    done = run_git(cwd, *args, env=env, timeout=timeout, writable=writable)
    return done.stdout if done.returncode == 0 else None


def git_executable(repository: Repository | None = None) -> str | None:
    """The git on ``PATH`` outside the workspace, if it is recent enough to be hardened."""
    path = _trusted_path(os.environ.get("PATH", os.defpath), repository)
    found = shutil.which("git", path=path)
    if found is None or _version(os.path.realpath(found)) < MIN_VERSION:
        return None
    return found


@functools.lru_cache(maxsize=8)
def _version(executable: str) -> tuple[int, int]:
    env = git_environment()
    done = _run([executable, "version"], Path(os.sep), env, 10)
    match = _VERSION.search(done.stdout)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def _trusted_path(path: str, repository: Repository | None) -> str:
    """``path`` without relative entries and without directories inside the work tree."""
    inside = str(repository.work_tree) + os.sep if repository is not None else None
    kept = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if inside is not None and (real + os.sep).startswith(inside):
            continue
        kept.append(entry)
    return os.pathsep.join(kept)


@functools.lru_cache(maxsize=8)
def _global_excludes(executable: str) -> str:
    # The user's own ignore file (core.excludesFile in ~/.gitconfig) keeps applying with global
    # config off: without it, files the user ignores everywhere would land in a run's diff.
    # `git config --global --get` reads that one file and runs nothing.
    env = git_environment(overrides=())
    del env["GIT_CONFIG_GLOBAL"]
    done = _run(
        [executable, "config", "--global", "--get", "--path", "core.excludesFile"],
        Path(os.sep),
        env,
        10,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _excludes(executable: str) -> list[tuple[str, str]]:
    excludes = _global_excludes(executable)
    # A file to read, not a program: safe to pass on after the overrides.
    return [("core.excludesFile", excludes)] if excludes else []


def _run(
    argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run with a timeout that ends git's whole process group, not just git."""
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return _failed(argv, 127, str(exc))
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process.pid, proc=process, grace_s=0)
        stdout, stderr = process.communicate()
        return _failed(argv, 124, f"git timed out after {timeout:g}s; {stderr}")
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def _failed(argv: list[str], code: int, message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(argv, code, "", message)
