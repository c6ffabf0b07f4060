"""Open a path below a root directory without following any symlink: what was checked is opened.

``Workspace.resolve`` checks a path by name (``realpath``), and a name can change between that
check and the open: a directory swapped for a symlink to ``$HOME`` in between would redirect a
write out of the workspace. So the file tools open the checked path, which has no symlink left
in it, relative to a descriptor of the root, and refuse any symlink met on the way: one there
now was swapped in since the check. ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` does
that in one system call where the kernel has it (Linux 5.6+); elsewhere each component is
opened with ``O_NOFOLLOW`` from its parent's descriptor. Neither follows ``..`` or an absolute
path, so nothing outside the root can be reached, however the tree changes meanwhile.

A refusal is an ``OSError`` with ``errno.ELOOP`` (``swapped`` says so); other errors are the
usual ones (``ENOENT``, ``ENOTDIR``...).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# A descriptor only walked through needs search permission, not read: O_PATH where there is one.
_STEP = getattr(os, "O_PATH", os.O_RDONLY) | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_TMPFILE = getattr(os, "O_TMPFILE", 0)  # includes O_DIRECTORY's bit: compare it whole

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
# openat2 is 437 on every architecture that numbers its system calls the generic way; only
# the two where that was checked are used.
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}

_openat2: Any = None
"""The ``syscall`` function set up for openat2; None until first needed, False where there is
no openat2 (another system, an old kernel, a seccomp filter that refuses it)."""


def swapped(error: OSError) -> bool:
    """True when ``error`` means a symlink (or a way out of the root) was met on the way."""
    return error.errno in (errno.ELOOP, errno.EXDEV)


@contextmanager
def opened_root(root: str | os.PathLike[str]) -> Iterator[int]:
    """A descriptor of the directory ``root``, closed on exit. ``root`` itself must not be a
    symlink (a workspace root is stored resolved, so it becoming one means it was swapped)."""
    fd = os.open(root, _STEP)
    try:
        yield fd
    finally:
        os.close(fd)


def open_under(
    root: str | os.PathLike[str], rel: str, flags: int, mode: int = 0o666, *, make: bool = False
) -> int:
    """``open_beneath`` from the directory ``root``, opened for the call and closed after it."""
    root_fd = os.open(root, _STEP)
    try:
        return open_beneath(root_fd, rel, flags, mode, make=make)
    finally:
        os.close(root_fd)


def open_beneath(
    root_fd: int, rel: str, flags: int, mode: int = 0o666, *, make: bool = False
) -> int:
    """A descriptor for ``rel`` (relative to ``root_fd``, ``/``-separated, no ``..``) opened
    with ``flags``, following no symlink in any component; the caller closes it.

    ``make`` creates missing directories on the way, as ``mkdir -p`` would, each opened and
    checked like the rest: the parents, and the last component too when ``flags`` has
    ``O_DIRECTORY``. Raises ``OSError``: ``ELOOP`` when a component is a symlink, ``ENOENT``,
    ``ENOTDIR``... as ``open`` would.
    """
    parts = _parts(rel)
    flags |= _CLOEXEC
    if _openat2 is not False:
        try:
            # Not O_NOFOLLOW: with it, a symlink at the end would meet O_DIRECTORY as ENOTDIR;
            # without, RESOLVE_NO_SYMLINKS refuses it as ELOOP like any other component.
            return _open2(root_fd, "/".join(parts) or ".", flags, mode)
        except OSError as error:
            # The walk answers when ENOENT may only mean a parent to make, when EAGAIN says a
            # rename raced the lookup, and when openat2 turned out not to work here.
            code = error.errno
            walk_answers = code == errno.EAGAIN or (code == errno.ENOENT and make)
            if not walk_answers and _openat2 is not False:
                raise
    return _walk(root_fd, parts, flags | _NOFOLLOW, mode, make)


def _parts(rel: str) -> list[str]:
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if rel.startswith("/") or ".." in parts:
        # Workspace.resolve never gives these; refusing them keeps this module safe on its own.
        raise OSError(errno.EXDEV, "path leads out of the root", rel)
    return parts


def _walk(root_fd: int, parts: list[str], flags: int, mode: int, make: bool) -> int:
    """One ``openat(O_NOFOLLOW)`` per component, each from its parent's descriptor."""
    if not parts:
        return os.open(".", flags, mode, dir_fd=root_fd)
    fd = root_fd
    try:
        for part in parts[:-1]:
            step = _open_at(fd, part, _STEP, 0, make)
            if fd != root_fd:
                os.close(fd)
            fd = step
        return _open_at(fd, parts[-1], flags, mode, make and bool(flags & _DIRECTORY))
    finally:
        if fd != root_fd:
            os.close(fd)


def _open_at(dir_fd: int, name: str, flags: int, mode: int, make_dir: bool) -> int:
    """``name`` in ``dir_fd``, made first as a directory if it is missing and ``make_dir``."""
    try:
        try:
            return os.open(name, flags, mode, dir_fd=dir_fd)
        except FileNotFoundError:
            if not make_dir:
                raise
        with suppress(FileExistsError):  # made meanwhile: opened and checked like any other
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        return os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as error:
        raise _explained(error, dir_fd, name) from None


def _explained(error: OSError, dir_fd: int, name: str) -> OSError:
    """``ELOOP`` for a symlink: Linux reports ``ENOTDIR`` when one meets ``O_DIRECTORY``."""
    if error.errno == errno.ENOTDIR:
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return OSError(errno.ELOOP, "a symlink is in the way", name)
        except OSError:
            pass
    return error


def _open2(root_fd: int, rel: str, flags: int, mode: int) -> int:
    global _openat2
    if _openat2 is None:
        _openat2 = _setup_openat2()
        if _openat2 is False:
            raise OSError(errno.ENOSYS, "no openat2")
    # openat2 refuses a mode where no file is made, unlike open.
    makes = flags & os.O_CREAT or (_TMPFILE and flags & _TMPFILE == _TMPFILE)
    how = _openat2.how(flags, mode if makes else 0, _RESOLVE)
    fd = _openat2(_SYS_OPENAT2[_openat2.machine], root_fd, os.fsencode(rel), how, 24)
    if fd >= 0:
        return int(fd)
    import ctypes  # loaded only when used

    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM, errno.E2BIG) and _probe_fails():
        _openat2 = False  # not this kernel, or filtered out: the walk from now on
    raise OSError(code, os.strerror(code), rel)


def _setup_openat2() -> Any:
    """``syscall`` typed for openat2, or False where it cannot be used here."""
    machine = os.uname().machine if hasattr(os, "uname") else ""
    if not sys.platform.startswith("linux") or machine not in _SYS_OPENAT2:
        return False
    try:
        import ctypes  # loaded only when used

        class OpenHow(ctypes.Structure):
            _fields_ = [  # the layout of the kernel's struct open_how
                ("flags", ctypes.c_uint64),
                ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64),
            ]

        function: Any = ctypes.CDLL(None, use_errno=True).syscall  # carries how and machine
    except (OSError, AttributeError, ImportError):
        return False
    function.restype = ctypes.c_long
    function.argtypes = [
        ctypes.c_long,
        ctypes.c_long,
        ctypes.c_char_p,
        ctypes.POINTER(OpenHow),
        ctypes.c_size_t,
    ]
    function.how = OpenHow
    function.machine = machine
    return function


def _probe_fails() -> bool:
    """Whether openat2 fails on the simplest call (so an error is about it, not the path)."""
    how = _openat2.how(os.O_RDONLY | _CLOEXEC, 0, 0)
    fd = _openat2(_SYS_OPENAT2[_openat2.machine], -100, b"/", how, 24)  # AT_FDCWD
    if fd >= 0:
        os.close(fd)
        return False
    return True
