"""The workspace jail: every path a tool touches is resolved here and must stay inside the root.

``resolve`` checks a path by name; ``open`` and ``directory`` then open what it returned from a
descriptor of the root, following no symlink (``safe_open``), so that a symlink swapped in
after the check cannot lead the open outside.

localhand's own files are out of bounds even inside the root (``localhand.safety.box.own_files``):
its data directory (the run store, checkpoints) can be neither read nor written, its
installation (a ``.venv`` it runs from, its own source) not written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localhand.errors import ConfigError, ToolError
from localhand.paths import is_within
from localhand.safety.box import own_files
from localhand.tools.safe_open import open_under


class Workspace:
    """A directory the tools may read and write, and nothing outside it.

    Paths are resolved with symlinks followed (``realpath``), so a link that points outside the
    root is refused like ``../x`` is, while a link between two places inside the root works.
    Opening then goes through ``open`` or ``directory``, which follow no symlink at all: the
    resolved path has none left, so one met there was swapped in after the check.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(os.path.realpath(os.fspath(root)))
        if not path.is_dir():
            raise ConfigError(f"workspace {os.fspath(root)!r} is not a directory")
        self.root = path
        """The root, absolute and with symlinks resolved."""

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The absolute, symlink-free path for ``path``, or a ``ToolError`` saying why not.

        ``path`` is relative to the root, or absolute inside it; ``""`` means the root. The
        path need not exist (write_file creates files), but it must end up inside the root.
        """
        raw = os.fspath(path)
        # Models sometimes pad paths with spaces or newlines; real names rarely start or end so.
        text = raw.strip() or "."
        if "\0" in text:
            raise ToolError(f"path {raw!r} contains a NUL byte")
        candidate = Path(text)
        if not candidate.is_absolute():
            candidate = self.root / candidate
            first = Path(text).parts[0] if Path(text).parts else ""
            if first.startswith("~") and not os.path.lexists(self.root / first):
                raise ToolError(
                    f"path '{raw}' starts with '~', which is not expanded here (it would make a "
                    "folder named '~' in the workspace); use a path relative to the workspace"
                )
        too_long = next((part for part in candidate.parts if len(os.fsencode(part)) > 255), None)
        if too_long is not None:
            raise ToolError(
                f"path '{raw[:80]}…' has a name of {len(os.fsencode(too_long))} bytes; file "
                "names can be at most 255 bytes"
            )
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError) as error:
            raise ToolError(f"path '{raw}' cannot be used: {error}") from None
        if self.contains(real):
            if self._own(real, own_files.data_paths()):
                raise ToolError(own_files.refusal(raw, "data"))
            return real
        message = f"path '{raw}' is outside the workspace {self.root}; use a path relative to it"
        if self.contains(Path(os.path.normpath(candidate))):
            message += f" (it is a symlink that resolves to {real})"
        raise ToolError(message)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` relative to the root, with ``/`` separators; ``"."`` for the root itself."""
        rel = self.resolve(path).relative_to(self.root).as_posix()
        return rel or "."

    def contains(self, path: Path) -> bool:
        """True when the absolute ``path`` is the root or below it (no symlinks are followed)."""
        return path == self.root or path.is_relative_to(self.root)

    def open(self, target: Path, flags: int, mode: int = 0o666) -> int:
        """A descriptor for ``target`` (a path ``resolve`` returned) opened with ``flags``, no
        symlink followed in any component; the caller closes it. Raises ``OSError``, with
        ``ELOOP`` when a symlink was met (``safe_open.swapped`` tells), and ``ToolError`` for
        writing in localhand's own installation."""
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            self.check_writable(target)
        return open_under(self.root, self.relpath(target), flags, mode)

    def check_writable(self, target: Path) -> None:
        """A ``ToolError`` when ``target`` (from ``resolve``) is in localhand's own
        installation, which no tool writes: a file planted there (a ``.pth``, a module)
        would run at localhand's next start."""
        if self._own(target, own_files.install_paths()):
            raise ToolError(own_files.refusal(self.relpath(target), "install"))

    def off_limits(self, target: Path) -> bool:
        """Whether ``target`` (absolute, resolved) is localhand's data, which no tool reads:
        for walks (search) that do not go through ``resolve`` for every file."""
        return self._own(target, own_files.data_paths())

    def _own(self, path: Path, own: tuple[str, ...]) -> bool:
        """Whether ``path`` lies in one of ``own`` (real paths)."""
        return any(is_within(os.fspath(path), mine) for mine in own)

    @contextmanager
    def directory(self, target: Path, *, make: bool = False) -> Iterator[int]:
        """A readable descriptor of the directory ``target`` (from ``resolve``), opened like
        ``open`` does and closed on exit; ``make`` creates it and its missing parents."""
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
        if make:  # only writes make directories: the file goes into this one
            self.check_writable(target)
        fd = open_under(self.root, self.relpath(target), flags, make=make)
        try:
            yield fd
        finally:
            os.close(fd)

    def relpath(self, target: Path) -> str:
        """``target``, a path ``resolve`` returned, relative to the root and ``/``-separated
        (``.`` for the root), without resolving it again. On strings: pathlib's
        ``relative_to`` would double what opening a file costs."""
        text, root = os.fspath(target), os.fspath(self.root)
        if text == root:
            return "."
        if root != "/" and not text.startswith(root + os.sep):
            raise ToolError(f"path '{target}' is outside the workspace {self.root}")
        return text[len(root) :].lstrip(os.sep).replace(os.sep, "/")
