"""Limits on what one sandboxed command may take: ``/tmp`` space, memory and processes.

Without them a model's command (a fork bomb, a runaway build, ``yes > /tmp/x``) can take the
whole machine down with localhand and the model server on it. ``[sandbox]`` sets them:

- ``tmp_size``: the size of each throw-away directory (``/tmp``, ``/var/tmp``, ``/dev/shm``,
  the empty ``$HOME``), through bubblewrap's ``--size`` (bubblewrap 0.7+);
- ``memory`` and ``processes``: through a control group made for each command, which the
  command joins before bubblewrap starts (so everything it starts is inside): cgroup v1's
  ``memory`` and ``pids`` controllers where localhand may write them (as root may), or
  cgroup v2 in the nearest group of its own (or above it) that is delegated to it with both
  controllers, else a systemd user scope (``systemd-run --user --scope``). Where none can be
  had, memory is still bounded per process by ``RLIMIT_AS``, which binds root too;
  ``RLIMIT_NPROC`` would not do for processes: it counts all of the user's, and not root's.

When one is hit the kernel says so (``memory.oom_control``'s ``oom_kill``, ``pids.events``'s
``max``) and ``Limiter.hits`` turns that into a line for the tool result and a warning event.
``held`` says what enforces each limit (the Result's ``sandbox.limits.held``); where one
cannot be enforced, ``unenforced`` says why, and the run says so once.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace

from localhand.safety.box.own_files import is_within

GIB = 1024**3
_V1 = "/sys/fs/cgroup"
_counter = itertools.count(1)
_failed: list[str] = []
"""Why a command's control group could not be made: the Result no longer says it held."""


def _half_the_memory() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 * GIB
    return max(GIB, total // 2)


@dataclass(frozen=True, slots=True)
class BoxLimits:
    """What one command may take; None: no limit."""

    tmp_size: int | None = GIB
    """Bytes in each throw-away directory (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``$HOME``)."""
    memory: int | None = field(default_factory=_half_the_memory)
    """Bytes of memory (and swap) for the command and everything it starts."""
    processes: int | None = 1024
    """Processes and threads at once for the command and everything it starts."""


DEFAULT_LIMITS = BoxLimits()
NO_LIMITS = BoxLimits(None, None, None)


def configured(values: Iterable[tuple[str, int | None]]) -> BoxLimits:
    """The defaults with ``[sandbox]``'s settings (``Settings.sandbox_limits``) applied."""
    return replace(DEFAULT_LIMITS, **dict(values))


def tmp_size_options(limits: BoxLimits) -> list[str]:
    """``--size N`` for bubblewrap's next ``--tmpfs``, where it knows the option."""
    if limits.tmp_size is None or not tmp_size_supported():
        return []
    return ["--size", str(limits.tmp_size)]


def tmp_size_supported() -> bool:
    """Whether this machine's bubblewrap takes ``--size`` (asked once per program)."""
    return _knows_size(shutil.which("bwrap"))


@functools.lru_cache(maxsize=4)
def _knows_size(bwrap: str | None) -> bool:
    """Whether the bubblewrap at ``bwrap`` takes ``--size`` (asked once per program)."""
    if bwrap is None:
        return False
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout + done.stderr


_HELD_BY = {
    "v1": ("cgroup v1 memory controller", "cgroup v1 pids controller"),
    "v2": ("cgroup v2 memory.max", "cgroup v2 pids.max"),
    "systemd": ("systemd user scope MemoryMax", "systemd user scope TasksMax"),
    None: ("RLIMIT_AS, each process on its own", None),
}


def held(limits: BoxLimits, *, boxed: bool = True) -> dict[str, str]:
    """What enforces each of ``limits`` here (``tmp_size``, ``memory``, ``processes``), for
    those that hold; ``boxed``: commands run in bubblewrap (without, no ``/tmp`` of theirs)."""
    memory, processes = _HELD_BY[None if _failed else control_groups()]
    found = {
        "tmp_size": "bubblewrap --size" if boxed and tmp_size_supported() else None,
        "memory": memory,
        "processes": processes,
    }
    return {name: how for name, how in found.items() if how and getattr(limits, name)}


def unenforced(limits: BoxLimits) -> list[str]:
    """What of ``limits`` this machine cannot enforce, with why, one line each."""
    said = []
    if limits.tmp_size is not None and not tmp_size_supported():
        said.append("the /tmp size limit (tmp_size): this bubblewrap has no --size (0.7+ has)")
    if limits.processes is not None and control_groups() is None:
        said.append(
            "the processes limit: no control group localhand may create here (cgroup v1 "
            "pids writable, as root has it, a cgroup v2 group delegated with the pids "
            "controller, or a systemd user session); memory is bounded per process only"
        )
    elif (limits.processes or limits.memory) and _failed:  # memory: per process only
        said.append(f"the memory and processes limits of a control group: {_failed[0]}")
    return said


@functools.cache
def control_groups() -> str | None:
    """How commands get their memory and process limits here: ``v1``, ``v2``, ``systemd``,
    or None where none can be had."""
    if _v1_dir("memory") and _v1_dir("pids"):
        return "v1"
    if _v2_dir() is not None:
        return "v2"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if shutil.which("systemd-run") and runtime and os.path.exists(os.path.join(runtime, "bus")):
        return "systemd"
    return None


def _own_group(controller: str) -> str:
    """This process's control group for ``controller`` (``""`` for cgroup v2's)."""
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, names, path = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    return path
    except OSError:
        pass
    return "/"


def _v1_dir(controller: str) -> str | None:
    """Where to make this controller's groups (under our own, else the root), if writable."""
    base = os.path.join(_V1, controller)
    if not os.path.isfile(os.path.join(base, "cgroup.procs")):
        return None
    if os.path.isfile(os.path.join(base, "cgroup.controllers")):
        return None  # cgroup v2 mounted at the controller's place
    for place in (base + _own_group(controller), base):
        if os.access(place, os.W_OK):
            return place.rstrip("/")
    return None


def _v2_dir() -> str | None:
    """The nearest cgroup v2 directory, from this process's own group up to the hierarchy's
    root (``/sys/fs/cgroup``, or ``unified`` beside v1), that has the memory and pids
    controllers open to its children and that localhand may write: the root as root, or
    the group systemd (or a container) delegated to this user."""
    mount = _V1 if os.path.isfile(os.path.join(_V1, "cgroup.controllers")) else f"{_V1}/unified"
    place = os.path.normpath(mount + _own_group(""))
    while is_within(place, mount):
        try:
            with open(os.path.join(place, "cgroup.subtree_control")) as handle:
                enabled = set(handle.read().split())
        except OSError:
            enabled = set()
        if {"memory", "pids"} <= enabled and os.access(place, os.W_OK):
            return place
        if place == mount:
            return None
        place = os.path.dirname(place)
    return None


@dataclass
class Limiter:
    """The control groups of one command: ``prefix`` makes it join them, ``hits`` says what
    limits it met."""

    limits: BoxLimits
    groups: dict[str, str] = field(default_factory=dict)
    """Controller (``memory``, ``pids``; ``unified`` for v2) to its group's directory."""
    scope: list[str] = field(default_factory=list)
    """The ``systemd-run`` prefix, where the limits come from a user scope."""

    def prefix(self) -> list[str]:
        """What goes before the command line so that it runs inside the limits."""
        if self.scope:
            return list(self.scope)
        if not self.groups and self.limits.memory is not None:
            kib = str(max(self.limits.memory // 1024, 1))  # RLIMIT_AS: each process's own
            return ["/bin/sh", "-c", 'ulimit -v "$1" || exit 125; shift; exec "$@"', "sh", kib]
        if not self.groups:
            return []
        procs = [os.path.join(group, "cgroup.procs") for group in self.groups.values()]
        join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", join, "sh", *procs, "--"]

    def wrapping(
        self, wrap: Callable[[list[str]], list[str]] | None
    ) -> Callable[[list[str]], list[str]] | None:
        """``wrap`` (a sandbox's, or None) with the command joining these groups first."""
        prefix = self.prefix()
        if not prefix:
            return wrap
        return lambda argv: [*prefix, *(wrap(argv) if wrap is not None else argv)]

    def hits(self, exit_code: int | None) -> list[str]:
        """The limits the command met, one sentence each, for the model and the events."""
        said = []
        if self._count("memory", "memory.oom_control", "oom_kill") or self._count(
            "unified", "memory.events", "oom_kill"
        ):
            said.append(
                f"it ran out of memory: the sandbox allows {_shown(self.limits.memory)} "
                "([sandbox] memory), and the kernel killed a process"
            )
        elif self.scope and exit_code == -9:
            said.append(
                "it was killed (SIGKILL), perhaps for memory: the sandbox allows "
                f"{_shown(self.limits.memory)} ([sandbox] memory)"
            )
        if self._count("pids", "pids.events", "max") or self._count(
            "unified", "pids.events", "max"
        ):
            said.append(
                f"it tried to run more than {self.limits.processes} processes or threads at "
                "once ([sandbox] processes), and starting more failed"
            )
        return said

    def _count(self, controller: str, name: str, key: str) -> int:
        group = self.groups.get(controller)
        if group is None:
            return 0
        try:
            with open(os.path.join(group, name)) as handle:
                for line in handle:
                    word, _, value = line.partition(" ")
                    if word == key:
                        return int(value)
        except (OSError, ValueError):
            pass
        return 0


@contextmanager
def limited(limits: BoxLimits) -> Iterator[Limiter]:
    """A ``Limiter`` for one command, its control groups removed on exit (the command and all
    it started have ended by then: its PID namespace ends with it)."""
    limiter = Limiter(limits)
    try:
        _make(limiter)
        yield limiter
    finally:
        _remove(limiter.groups.values())


def _remove(groups: Iterable[str], tries: int = 1) -> None:
    """Remove ``groups``. A group whose last task is still leaving just after its command
    ended is busy: a thread tries again for a few seconds rather than leave it behind."""
    busy = []
    for group in groups:
        try:
            os.rmdir(group)
        except FileNotFoundError:
            pass
        except OSError:
            busy.append(group)
    if busy and tries < 50:
        later = threading.Timer(0.1, _remove, (busy, tries + 1))
        later.daemon = True
        later.start()


def _make(limiter: Limiter) -> None:
    limits = limiter.limits
    if limits.memory is None and limits.processes is None:
        return
    kind = control_groups()
    # Unique beyond this process: a group an earlier process could not remove (its last task
    # still leaving) keeps its name, and process ids come round again.
    name = f"localhand-{os.getpid()}-{next(_counter)}-{os.urandom(3).hex()}"
    try:
        if kind == "v1":
            _make_v1(limiter, name)
        elif kind == "v2":
            _make_v2(limiter, name)
        elif kind == "systemd":
            limiter.scope = _scope(limits, name)
        _failed.clear()  # what failed once is not said of every command after it
    except OSError as error:
        _failed[:] = [f"making one failed ({error})"]
        _remove(limiter.groups.values())
        limiter.groups.clear()  # the command runs with RLIMIT_AS alone, not half a group


def _make_v1(limiter: Limiter, name: str) -> None:
    limits = limiter.limits
    if limits.memory is not None:
        group = _new_group(_v1_dir("memory"), name, limiter, "memory")
        _write(group, "memory.limit_in_bytes", limits.memory)
        with suppress(OSError):  # swap too, where the kernel accounts it
            _write(group, "memory.memsw.limit_in_bytes", limits.memory)
    if limits.processes is not None:
        group = _new_group(_v1_dir("pids"), name, limiter, "pids")
        _write(group, "pids.max", limits.processes)


def _make_v2(limiter: Limiter, name: str) -> None:
    limits = limiter.limits
    group = _new_group(_v2_dir(), name, limiter, "unified")
    if limits.memory is not None:
        _write(group, "memory.max", limits.memory)
        with suppress(OSError):  # no swap accounting: memory.max alone
            _write(group, "memory.swap.max", 0)
    if limits.processes is not None:
        _write(group, "pids.max", limits.processes)


def _new_group(parent: str | None, name: str, limiter: Limiter, controller: str) -> str:
    if parent is None:
        raise OSError("no control group directory")
    group = os.path.join(parent, name)
    os.mkdir(group)
    limiter.groups[controller] = group
    return group


def _write(group: str, name: str, value: int) -> None:
    with open(os.path.join(group, name), "w") as handle:
        handle.write(str(value))


def _scope(limits: BoxLimits, name: str) -> list[str]:
    systemd_run = shutil.which("systemd-run")
    if systemd_run is None:
        return []
    argv = [systemd_run, "--user", "--scope", "--quiet", "--collect", f"--unit={name}"]
    if limits.memory is not None:
        argv += ["-p", f"MemoryMax={limits.memory}", "-p", "MemorySwapMax=0"]
    if limits.processes is not None:
        argv += ["-p", f"TasksMax={limits.processes}"]
    return [*argv, "--"]


def _shown(size: int | None) -> str:
    if size is None:
        return "unlimited memory"
    for unit, factor in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"
