"""Runs one command and makes sure nothing it started outlives it. A script, not a module:

    python -I -S _supervisor.py STATUS_FD LIFELINE_FD OUTPUT_FD GRACE [FLAGS] -- ARGV...

It makes itself a child subreaper (Linux), so every process the command starts stays its
descendant, even one that detached with ``setsid``, ``nohup`` or a double fork. It runs ARGV in
a new session with its stdout and stderr on OUTPUT_FD, and writes ``exit N`` or ``signal N`` to
STATUS_FD when ARGV's process ends. When
LIFELINE_FD reaches end of file (the parent is done with the command, gave up on it, or died,
even by SIGKILL) or a SIGTERM arrives, it ends every descendant: SIGTERM, then SIGKILL after
GRACE seconds, then reaps them and exits. FLAGS, for a command without network, so that
nothing carries data out: ``--no-unix-sockets``, only IPv4, IPv6 and netlink sockets can be
opened (a seccomp filter); ``--write-beneath=PATH`` (repeated), files may be opened for
writing only beneath those paths (Landlock), so no FIFO outside can be written either. For a
sandboxed command with network: ``--no-other-sockets``, Unix sockets too but no other family
(``AF_VSOCK``, ``AF_PACKET``...); ``--relay=PORT=PATH[=HOST:PORT]`` (repeated), the
supervisor relays connections to ``127.0.0.1:PORT`` (the sandbox's own loopback) to the Unix
socket PATH (localhand's proxy), first asking it to ``CONNECT`` to HOST:PORT when given.
For any command: ``--stderr=FD``, its stderr on FD rather than OUTPUT_FD (a hook's reason
for blocking a call is its stderr alone). ARGV's stdin is the supervisor's own.

It imports nothing from localhand and runs with ``-I -S``: nothing in the workspace or the
environment can change what it does.
"""

from __future__ import annotations

# ``_signal``, not ``signal``: the same functions and numbers without ``enum``; and
# ``_quietly`` rather than ``contextlib.suppress``: those two imports were 6 ms of every
# command's ~15 (benchmarks/sandbox_bench.py). Every import here is paid once per command.
import _signal as signal  # type: ignore[import-not-found]  # (typeshed has no stub for it)
import os
import select
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every command ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable

_PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> None:
    status_fd, lifeline, output = int(argv[1]), int(argv[2]), int(argv[3])
    split = argv.index("--")
    grace, flags, command = float(argv[4]), argv[5:split], argv[split + 1 :]
    _become_subreaper()  # without it (not Linux), the command's session is what gets ended
    relays = [flag for flag in flags if flag.startswith("--relay=")]
    if relays:  # the network proxy's relay: a module beside this one, imported only for it
        sys.path.append(os.path.dirname(os.path.abspath(__file__)))
        import _netrelay  # type: ignore[import-not-found]

        try:
            relays = [_netrelay.listener(flag) for flag in relays]
        except OSError as error:  # the command still runs, without the network
            os.write(2, f"localhand: no network relay in the sandbox ({error})\n".encode())
            relays = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    ending = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: ending.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    errors = [int(flag[9:]) for flag in flags if flag.startswith("--stderr=")]
    pid = os.fork()
    if pid == 0:
        os.dup2(output, 1)
        os.dup2(errors[0] if errors else output, 2)
        beneath = [flag.split("=", 1)[1] for flag in flags if flag.startswith("--write-beneath=")]
        if beneath:
            _write_only_beneath(beneath)
        if "--no-unix-sockets" in flags:
            _deny_sockets(_OFFLINE_FAMILIES)
        elif "--no-other-sockets" in flags:
            _deny_sockets(_NETWORK_FAMILIES)
        _exec(command, (status_fd, lifeline, output, wake_r, wake_w, *errors))
    for relay in relays:  # after the fork: the command's process has no thread to inherit
        _netrelay.start(relay)
    # Let go of the output pipe: its end of file must mean the command's processes are done.
    for fd in (output, *errors):
        os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    reap = _Reaper(pid, status_fd)
    while not ending:
        reap()
        ready, _, _ = select.select([lifeline, wake_r], [], [], 1.0)
        if lifeline in ready:
            break
        if wake_r in ready:
            os.read(wake_r, 512)
    stopped = _end_all(pid, grace, reap)
    reap()
    if stopped:
        _quietly(os.write, status_fd, f"ended {stopped}\n".encode())
    os._exit(0)


def _exec(command: list[str], close: tuple[int, ...]) -> None:
    try:
        signal.set_wakeup_fd(-1)
        # Python ignores SIGPIPE and SIGXFSZ; a command must get the defaults, so that
        # `yes | head` ends quietly as it does in a terminal.
        for name in ("SIGCHLD", "SIGTERM", "SIGINT", "SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        for fd in close:
            os.close(fd)
        os.setsid()
        os.execvp(command[0], command)
    except BaseException as error:
        os.write(2, f"localhand: cannot run {command[0]}: {error}\n".encode())
    os._exit(127)


_SECCOMP = {  # machine: (its AUDIT_ARCH, socket(), the 32-bit AUDIT_ARCH, its socket calls)
    "x86_64": (0xC000003E, 41, 0x40000003, (102, 359)),  # i386: socketcall, socket
    "aarch64": (0xC00000B7, 198, 0x40000028, (281,)),  # arm: socket
}
_NR_IO_URING_SETUP = 425  # the same everywhere; io_uring can open sockets past the filter
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_OFFLINE_FAMILIES = (_AF_INET, _AF_INET6, _AF_NETLINK)
_NETWORK_FAMILIES = (_AF_UNIX, *_OFFLINE_FAMILIES)
_EACCES = 13
_LANDLOCK_WRITE_FILE = 1 << 1
_NR_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: the same everywhere


def _socket_filter(
    native: int,
    nr_socket: int,
    compat: int,
    compat_sockets: tuple[int, ...],
    families: tuple[int, ...] = _OFFLINE_FAMILIES,
) -> list[tuple[int, int, int, int]]:
    """The seccomp program, as (code, jump if true, jump if false, k) instructions: native
    ``socket()`` of a family not in ``families``, x32 calls and ``io_uring_setup`` fail; a
    32-bit program may open no socket at all (``socketcall`` hides its arguments); any other
    architecture nothing."""
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | _EACCES  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO
    program: list[str | tuple[int, int, str | None, str | None]] = [
        (ld, 4, None, None),  # the architecture
        (jeq, native, None, "compat"),
        (ld, 0, None, None),  # the system call's number
        (jge, 0x40000000, "deny", None),  # x32
        (jeq, nr_socket, None, "not socket"),
        (ld, 16, None, None),  # socket()'s first argument (its low 32 bits)
        *((jeq, family, "allow", None) for family in families[:-1]),
        (jeq, families[-1], "allow", "deny"),
        "not socket",
        (jeq, _NR_IO_URING_SETUP, "deny", "allow"),
        "compat",
        (jeq, compat, None, "deny"),
        (ld, 0, None, None),
        *((jeq, number, "deny", None) for number in compat_sockets),
        (jeq, _NR_IO_URING_SETUP, "deny", "allow"),
        "allow",
        (ret, allow, None, None),
        "deny",
        (ret, deny, None, None),
    ]
    labels, count = {}, 0
    for item in program:
        if isinstance(item, str):
            labels[item] = count
        else:
            count += 1
    assembled: list[tuple[int, int, int, int]] = []
    for code, k, if_true, if_false in (item for item in program if not isinstance(item, str)):
        here = len(assembled)
        jump = [0 if label is None else labels[label] - here - 1 for label in (if_true, if_false)]
        assembled.append((code, jump[0], jump[1], k))
    return assembled


def _deny_sockets(families: tuple[int, ...]) -> None:
    """Install a seccomp filter on this process (and so the command) that makes a socket of
    any family but ``families`` impossible to open (see ``_socket_filter``). Exits 126 with a
    message rather than run the command without it on a machine that should support it."""
    machine = os.uname().machine
    if machine not in _SECCOMP:
        os.write(2, f"localhand: socket families cannot be limited on {machine}\n".encode())
        return
    program = _socket_filter(*_SECCOMP[machine], families)
    try:
        import ctypes  # loaded only when used
        import struct  # loaded only when used

        code = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
        buffer = ctypes.create_string_buffer(code)
        fprog = struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buffer))
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
        if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.c_char_p(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
    except (OSError, AttributeError) as error:
        os.write(2, f"localhand: cannot limit sockets ({error}); nothing was run\n".encode())
        os._exit(126)


def _write_only_beneath(paths: list[str]) -> None:
    """Landlock: the command may open a file for writing only beneath ``paths``. A read-only
    mount does not stop a write into a FIFO or a device outside, which another program may be
    reading; this does. Where the kernel has no Landlock, nothing changes."""
    import ctypes  # loaded only when used
    import struct  # loaded only when used

    libc = ctypes.CDLL(None, use_errno=True)
    create, add_rule, restrict = _NR_LANDLOCK
    attributes = struct.pack("=Q", _LANDLOCK_WRITE_FILE)
    ruleset = libc.syscall(create, attributes, len(attributes), 0)
    if ruleset < 0:
        return  # no Landlock in this kernel, or it is turned off
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = struct.pack("=Qi", _LANDLOCK_WRITE_FILE, fd)
                if libc.syscall(add_rule, ruleset, 1, rule, 0) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(restrict, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    except OSError as error:
        os.write(2, f"localhand: cannot confine writes ({error}); nothing was run\n".encode())
        os._exit(126)
    finally:
        os.close(ruleset)


def _become_subreaper() -> bool:
    try:
        import ctypes  # loaded only when used

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class _Reaper:
    """Reaps every exited child (as a subreaper, orphans become ours); reports the
    command's own status once, the moment it is known."""

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid, self.status_fd, self.reported = pid, status_fd, False

    def __call__(self) -> None:
        while True:
            try:
                child, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if child == 0:
                return
            if child == self.pid and not self.reported:
                self.reported = True
                if os.WIFSIGNALED(code):
                    status = f"signal {os.WTERMSIG(code)}"
                else:
                    status = f"exit {os.waitstatus_to_exitcode(code)}"
                _quietly(os.write, self.status_fd, (status + "\n").encode())


def _descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, process group) of the live processes below this one; without /proc, of the
    command's session. PIDs of exited processes can be reused, so only these are signalled."""
    children: dict[int, list[tuple[int, int]]] = {}
    session: list[tuple[int, int]] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] in (b"Z", b"X"):
            continue
        entry = (int(name), int(fields[2]))
        children.setdefault(int(fields[1]), []).append(entry)
        if int(fields[3]) == pid:
            session.append(entry)
    found: list[tuple[int, int]] = []
    queue = [os.getpid()]
    while queue:
        for entry in children.get(queue.pop(), []):
            found.append(entry)
            queue.append(entry[0])
    return found + [entry for entry in session if entry not in found]


def _signal_all(pid: int, number: int, reap: _Reaper) -> list[int]:
    found = _descendants(pid)
    for group in {group for _, group in found if group != os.getpgid(0)}:
        _quietly(os.killpg, group, number)  # a whole group at once also catches fresh forks
    for target, _ in found:
        _quietly(os.kill, target, number)
    if not reap.reported:  # still our child (running or a zombie), so its PID is its own
        _quietly(os.kill, pid, number)
    return [target for target, _ in found]


def _end_all(pid: int, grace: float, reap: _Reaper) -> int:
    """End the command and its descendants; return how many processes it had left running."""
    reap()
    targets = _signal_all(pid, signal.SIGTERM, reap)
    if not targets and reap.reported:
        return 0
    stopped = len(set(targets) - {pid})
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()
        if not _descendants(pid) and reap.reported:
            return stopped
        time.sleep(0.02)
    for _ in range(200):  # a fork bomb forks between our scans; each round ends more of it
        reap()
        more = _signal_all(pid, signal.SIGKILL, reap)
        stopped = max(stopped, len(set(more) - {pid}))
        if not more and reap.reported:
            break
        time.sleep(0.005)
    reap()
    return stopped


def _quietly(call: Callable[..., object], *args: object) -> None:
    """``call(*args)``, where failing (a process already gone, a closed pipe) changes nothing."""
    try:  # noqa: SIM105 (contextlib costs an import: see the imports above)
        call(*args)
    except OSError:
        pass


if __name__ == "__main__":
    main(sys.argv)
