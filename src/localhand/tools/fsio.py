"""Low-level file helpers the file tools share: atomic writes, safe opening, binary sniffing.

Atomic writes leave the original byte-identical on any failure (disk full included) and no
temporary file behind. On Linux the new content is written to an unnamed file (``O_TMPFILE``)
that only gets a name once it is complete, so even a SIGKILL mid-write leaves nothing; elsewhere
a hidden temporary file in the same directory is removed on every failure Python sees.

Both work relative to a descriptor of the target's directory, which the file tools open
without following symlinks (``safe_open``): a name cannot be redirected after it was checked.

Durability (what is synced, when, and what a crash can lose):

- A write (``write_file``, ``edit_file``) is atomic but not synced: the new content replaces
  the old by a rename, and nothing waits for the disk, as an editor's save does not sync the
  folder on every keystroke. Two ``fsync`` calls a write cost 4 to 36 ms on the machines
  measured, more than the rest of an iteration.
- The end of a run syncs them: ``sync_files`` ``fsync``s every file the run wrote, then each
  directory that got one (``FileTools.close``; the loop closes its tools however it ends:
  answer, limit, error, Ctrl-C).
- A crash of localhand itself (an exception, SIGKILL) loses nothing that was written: the
  kernel has it, and readers see the old file or the new one, never half of one.
- A crash of the machine (power cut, kernel panic) before the run's end can lose the run's
  writes since it started: a file may come back with its old content, or, on a file system
  that does not order a rename after the data it names (ext4 keeps that order for a rename
  over a file), empty or missing. After the run's end nothing is lost.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

BINARY_SNIFF_BYTES = 8192

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a zip archive (also .jar, .whl, .docx...)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\xca\xfe\xba\xbe", "a Java class or Mach-O file"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"MZ", "a Windows executable"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x00asm", "a WebAssembly module"),
    (b"RIFF", "a RIFF file (WAV audio, AVI video or WebP image)"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)


READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
"""Flags to open a file for reading with: O_NONBLOCK, so that opening a FIFO returns at once
instead of waiting for a writer (``as_regular`` then refuses it)."""


def as_regular(fd: int, name: str) -> BinaryIO:
    """The descriptor ``fd`` (opened with ``READ_FLAGS``) as a binary file, if it is a regular
    file; otherwise it is closed and an error raised.

    The check is made on the opened file (``fstat``), so a file swapped for a FIFO or a device
    between a check and the open is still refused. Raises ``IsADirectoryError`` for
    directories and ``OSError(EINVAL)`` for FIFOs, sockets and devices.
    """
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", name)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"not a regular file ({special_kind(mode)})", name)
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def special_kind(mode: int) -> str:
    """``a FIFO``, ``a socket``, ``a device``... for a file that is not regular."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def describe_binary(head: bytes) -> str:
    """What kind of binary file starts with ``head``: ``a PNG image``, or ``binary data``."""
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), "binary data")


DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
"""Flags to open a directory with: readable, so that it can be fsync'ed."""


def sync_files(paths: Iterable[Path]) -> None:
    """``fsync`` each file of ``paths``, then each directory holding one (the renames), best
    effort: a file gone since, or a file system that refuses ``fsync``, is passed over. No
    symlink is followed to a file; the module docstring says when this is called."""
    folders: set[Path] = set()
    for path in paths:
        folders.add(path.parent)
        _sync(path, READ_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    for folder in folders:
        _sync(folder, DIR_FLAGS)


def _sync(path: Path, flags: int) -> None:
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_at(dir_fd: int, name: str, data: bytes) -> None:
    """Replace the file ``name`` in the directory ``dir_fd`` with ``data``, so that readers see
    the old file or the new, never half.

    Everything happens relative to ``dir_fd`` (the temporary file, its rename over ``name``, the
    ``stat``), so a parent directory swapped for a symlink meanwhile cannot redirect the write.
    Keeps the old file's permission bits; a new file gets what the umask gives. Refuses a
    ``name`` that is now a symlink (``ELOOP``): rename would replace the link, not what it
    points to, which is not what was asked. On any failure the original is untouched and no
    temporary file is left. Nothing is synced here (see the module docstring).
    """
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        mode: int | None = None
    else:
        if stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, "a symlink is in the way", name)
        mode = stat.S_IMODE(info.st_mode)
    temp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
    if not _write_unnamed(dir_fd, temp, data, mode):
        _write_named(dir_fd, temp, data, mode)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _write_unnamed(dir_fd: int, temp: str, data: bytes, mode: int | None) -> bool:
    """Write ``data`` to an unnamed file in ``dir_fd`` and name it ``temp``; False where that
    cannot be done here (nothing is left behind then). A failed write leaves nothing either:
    the file had no name yet."""
    global _tmpfile_works
    if _tmpfile_works is False or not hasattr(os, "O_TMPFILE"):
        return False
    try:
        fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    except OSError:
        _tmpfile_works = False
        return False
    try:
        _fill(fd, data, mode)
        _tmpfile_works = _link(fd, dir_fd, temp)
        return _tmpfile_works
    finally:
        os.close(fd)


def _write_named(dir_fd: int, temp: str, data: bytes, mode: int | None) -> None:
    # os.open with 0o666 lets the umask decide a new file's mode, as open() would. O_EXCL
    # never follows a symlink, so the name cannot lead elsewhere.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags, 0o666, dir_fd=dir_fd)
    try:
        try:
            _fill(fd, data, mode)
        finally:
            os.close(fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _fill(fd: int, data: bytes, mode: int | None) -> None:
    _write_all(fd, data)
    if mode is not None:
        os.fchmod(fd, mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # a full disk usually raises ENOSPC; a 0-byte write means the same
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


_tmpfile_works: bool | None = None
"""Whether unnamed temporary files can be named here; None until first tried."""


def _link(fd: int, dir_fd: int, name: str) -> bool:
    """Give the unnamed file ``fd`` the name ``name`` in ``dir_fd``: ``linkat(AT_EMPTY_PATH)``,
    or the ``/proc/self/fd`` link where that needs a privilege this process lacks."""
    linkat = _linkat()
    if linkat is not None and linkat(fd, b"", dir_fd, os.fsencode(name), 0x1000) == 0:
        return True  # 0x1000: AT_EMPTY_PATH
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)
    except OSError:
        return False
    return True


_LINKAT: list[object] = []


def _linkat() -> Any:
    """libc's ``linkat``, looked up once (None where there is none)."""
    if not _LINKAT:
        try:
            import ctypes  # loaded only when used

            _LINKAT.append(ctypes.CDLL(None, use_errno=True).linkat)
        except (OSError, AttributeError, ImportError):
            _LINKAT.append(None)
    return _LINKAT[0]
