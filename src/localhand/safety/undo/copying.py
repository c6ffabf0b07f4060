"""Bytes copied between files for checkpoints and undo: in the kernel where it can be
(``copy_file_range``), never through a symlink, into files that are private from the start.

A checkpoint appends every file of the workspace to one data file, and undo copies ranges of
that file back; both go through ``Copier``, which falls back to reading and writing where the
kernel cannot copy (another file system, an old kernel) and remembers that it could not.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from localhand.paths import PRIVATE_FILE_MODE

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in must not block the open
CHUNK = 1 << 20


class Copier:
    """Copies bytes in the kernel (``copy_file_range``) where it can, else by read and write,
    remembering a failure so that each file does not try again."""

    def __init__(self) -> None:
        self.in_kernel = hasattr(os, "copy_file_range")

    def append(self, source: str, out: int) -> int:
        """Copy the regular file ``source`` (never followed if a symlink) to ``out`` at its
        position; the bytes copied."""
        fin = os.open(source, os.O_RDONLY | NOFOLLOW | _NONBLOCK | CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fin).st_mode):
                raise FileNotFoundError(errno.ENOENT, "no longer a regular file", source)
            return self.copy(fin, out)
        finally:
            os.close(fin)

    def copy(self, fin: int, fout: int, size: int | None = None, offset: int | None = None) -> int:
        """Copy from ``fin`` (at ``offset``, else its position) to ``fout``'s position:
        ``size`` bytes, or up to the end; the bytes copied."""
        done, left = 0, (1 << 62) if size is None else size
        if self.in_kernel:
            try:
                while left and (n := os.copy_file_range(fin, fout, min(left, 1 << 30), offset)):
                    done, left = done + n, left - n
                    offset = None if offset is None else offset + n
                return done
            except OSError:
                if done:
                    raise
                self.in_kernel = False
        while left:
            want = min(left, CHUNK)
            chunk = os.read(fin, want) if offset is None else os.pread(fin, want, offset)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(fout, view) :]
            done, left = done + len(chunk), left - len(chunk)
            offset = None if offset is None else offset + len(chunk)
        return done


def create_private(path: Path | str) -> int:
    """A new file, 0600 whatever the umask, open for writing; never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
    return os.open(path, flags, PRIVATE_FILE_MODE)
