"""The file tools: read, write, edit, list and search, bound to one workspace.

The docstrings' first paragraphs and ``Args:`` sections are what the model sees, so they are
short; every token of them is sent with every request.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from localhand.errors import ToolError
from localhand.paths import IGNORED_DIRS
from localhand.safety.approval.approver import (
    ApprovalPolicy,
    Approver,
    DenyAll,
    check_policy,
    needs_approval,
)
from localhand.safety.approval.approver import refusal as refusal_message
from localhand.tools.edits import replace_once
from localhand.tools.fsio import (
    BINARY_SNIFF_BYTES,
    READ_FLAGS,
    as_regular,
    atomic_write_at,
    describe_binary,
    special_kind,
    sync_files,
)
from localhand.tools.limits import ToolLimits
from localhand.tools.read_lines import numbered_lines
from localhand.tools.safe_open import swapped
from localhand.tools.search import search_tree
from localhand.tools.workspace import Workspace


class FileTools:
    """The file tools for one workspace. Override a method to change one tool's behaviour.

    Writes into ``.git`` (hooks, config) can make git run code later, so they need approval
    under ``policy`` (see ``localhand.safety.approval.approver``); ``approver`` None refuses them.

    Every file written is recorded in ``written`` (see ``take_written``), so that the loop
    need not walk the whole workspace to see what write_file and edit_file changed.

    Paths are checked by name (``Workspace.resolve``) and then opened from a descriptor of the
    root following no symlink (``Workspace.open``, ``Workspace.directory``; writes rename
    inside the directory they opened), so a symlink swapped in after the check is refused
    rather than followed out of the workspace.
    """

    def __init__(
        self,
        workspace: Workspace,
        limits: ToolLimits | None = None,
        *,
        policy: ApprovalPolicy = "dangerous",
        approver: Approver | None = None,
    ) -> None:
        self.workspace = workspace
        self.limits = limits or ToolLimits()
        self.policy = check_policy(policy)
        self.approver = approver if approver is not None else DenyAll()
        self.written: set[Path] = set()
        """The files ``_write`` wrote since the last ``take_written`` (absolute, symlinks
        resolved); a set, so that it stays small however long it goes untaken."""
        self._unsynced: set[Path] = set()
        """The files written since the last ``close``: synced then (``fsio``'s durability)."""

    def functions(self) -> list[Callable[..., Any]]:
        """The tools as bound methods, ready for ``ToolRegistry``."""
        return [
            self.read_file,
            self.write_file,
            self.edit_file,
            self.list_directory,
            self.search_files,
        ]

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Read a text file, with line numbers.

        Args:
            path: File path.
            start_line: First line to read (from 1).
            end_line: Last line to read (inclusive).
        """
        target, rel = self._existing(path, want_dir=False)
        if start_line is not None and start_line < 1:
            raise ToolError(f"start_line must be 1 or more (lines count from 1), got {start_line}")
        if end_line is not None and end_line < 1:
            raise ToolError(f"end_line must be 1 or more (lines count from 1), got {end_line}")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ToolError(f"end_line {end_line} is before start_line {start_line}")
        with self._open(target, rel) as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
            size = os.fstat(handle.fileno()).st_size
            if b"\0" in head:
                kind = describe_binary(head)
                return f"'{rel}' is a binary file ({kind}, {size:,} bytes); not shown."
            handle.seek(0)
            shown, total, cut, bad = numbered_lines(handle, start_line or 1, end_line, self.limits)
        first = start_line or 1
        if total == 0:
            return f"'{rel}' is empty."
        if not shown:
            raise ToolError(
                f"start_line {first} is past the end of '{rel}', which has {total} lines"
            )
        end = first + len(shown) - 1
        of = f"of {total}" if total is not None else f"of a {size:,}-byte file, too big to count"
        if cut:
            shown.append(
                f"[Showing lines {first}-{end} {of}. To read more, call read_file with "
                f"start_line={end + 1}.]"
            )
        elif first > 1 or total is None or end < total:
            shown.append(f"[Lines {first}-{end} {of}.]")
        if bad is not None:
            shown.append(
                f"[Note: '{rel}' is not valid UTF-8 (from line {bad}); bytes that are not are "
                "shown as \ufffd. edit_file keeps them as they are outside the text it replaces.]"
            )
        return "\n".join(shown)

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file with the given content.

        Args:
            path: File path.
            content: The complete new file content.
        """
        target = self.workspace.resolve(path)
        rel = self.workspace.relpath(target)  # resolved already: no second realpath
        data = content.encode("utf-8", "replace")  # a lone surrogate from JSON becomes '?'
        self._check_size(len(data), rel)
        existed = self._writable(target, rel, "write_file")
        self._write(target, rel, data)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} '{rel}': {len(data):,} bytes, {lines} line{'' if lines == 1 else 's'}."

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace old_text, which must occur exactly once in the file, with new_text.

        Args:
            path: File path.
            old_text: Exact text to replace, indentation included.
            new_text: Replacement text.
        """
        target, rel = self._existing(path, want_dir=False)
        self._writable(target, rel, "edit_file")
        with self._open(target, rel) as handle:
            self._check_size(os.fstat(handle.fileno()).st_size, rel, reading=True)
            data = handle.read()
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise ToolError(f"'{rel}' is a binary file; edit_file only changes text files")
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
        text = data.decode("utf-8", "surrogateescape")
        if "\ufffd" in old_text and "\ufffd" not in text and _has_invalid_utf8(text):
            raise ToolError(
                f"old_text contains \ufffd, which read_file shows for bytes of '{rel}' that are "
                "not UTF-8; those bytes cannot be matched. Choose old_text from lines without "
                "\ufffd"
            )
        edit = replace_once(text, old_text, new_text, where=rel)
        try:
            new_data = edit.text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            new_data = edit.text.encode("utf-8", "replace")
        self._check_size(len(new_data), rel)
        self._write(target, rel, new_data)
        removed, added = old_text.count("\n") + 1, new_text.count("\n") + 1 if new_text else 0
        done = f"Edited '{rel}' at line {edit.line}: replaced {removed} line(s) with {added}."
        if edit.loose:
            # Never reported as exact: the model should look before building on this edit.
            done += (
                f" old_text did not match exactly ({edit.loose} differ); it matched one place "
                "loosely and the edit was applied there, re-indented to the file. Read those "
                "lines to check them."
            )
        return done

    def _check_size(self, size: int, rel: str, *, reading: bool = False) -> None:
        cap = self.limits.write_max_bytes
        if size <= cap:
            return
        if reading:
            raise ToolError(
                f"'{rel}' is {size:,} bytes, more than edit_file handles ({cap:,}); change it "
                "with run_command (sed, a script) instead"
            )
        raise ToolError(
            f"the new content of '{rel}' is {size:,} bytes, more than the {cap:,} allowed; "
            "write a smaller file, or generate a large one with a script"
        )

    def list_directory(self, path: str = ".") -> str:
        """List a directory; subdirectories end with '/'.

        Args:
            path: Directory path.
        """
        target, rel = self._existing(path, want_dir=True)
        dirs, files = [], []
        try:
            with self.workspace.directory(target) as fd:
                entries = list(os.scandir(fd))
        except OSError as error:
            raise ToolError(failure("list", rel, error)) from None
        for entry in entries:
            if _is_dir(entry):
                if entry.name not in IGNORED_DIRS:
                    dirs.append(entry.name + "/")
            else:
                files.append(entry.name)
        names = sorted(dirs, key=_name_key) + sorted(files, key=_name_key)
        if not names:
            return f"'{rel}' is empty."
        cap = self.limits.list_max_entries
        if len(names) > cap:
            names = [*names[:cap], f"[... {len(names) - cap} more entries not shown]"]
        return "\n".join(names)

    def search_files(self, pattern: str, path: str = ".", max_results: int = 50) -> str:
        """Search file contents for a regular expression; prints path:line: text.

        Args:
            pattern: Python regular expression.
            path: File or directory to search.
            max_results: Most matches to show.
        """
        target = self.workspace.resolve(path)
        if not target.exists():
            raise ToolError(self._not_found(path, target))
        limit = max(1, min(max_results, self.limits.search_max_results))
        return search_tree(self.workspace, target, pattern, limit, self.limits)

    def _existing(self, path: str, *, want_dir: bool) -> tuple[Path, str]:
        target = self.workspace.resolve(path)
        rel = self.workspace.relpath(target)
        if not target.exists():
            raise ToolError(self._not_found(path, target))
        if want_dir and not target.is_dir():
            raise ToolError(f"'{rel}' is a file, not a directory; use read_file to read it")
        if not want_dir and target.is_dir():
            raise ToolError(f"'{rel}' is a directory; use list_directory to see its contents")
        if not want_dir and not target.is_file():
            kind = special_kind(os.stat(target).st_mode)
            raise ToolError(f"'{rel}' is {kind}, not a regular file; it was not opened")
        return target, rel

    def _open(self, target: Path, rel: str) -> BinaryIO:
        try:
            return as_regular(self.workspace.open(target, READ_FLAGS), rel)
        except OSError as error:
            if error.errno == errno.EINVAL:  # swapped for a FIFO or device since _existing
                raise ToolError(f"'{rel}' is not a regular file; it was not opened") from None
            raise ToolError(failure("read", rel, error)) from None

    def _writable(self, target: Path, rel: str, tool: str) -> bool:
        """Whether ``target`` exists; refuses what must not be replaced, and asks for
        approval before writing inside ``.git``."""
        try:
            info = os.stat(target)
        except FileNotFoundError:
            info = None
        except OSError as error:
            raise ToolError(f"could not write '{rel}': {error.strerror or error}") from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ToolError(f"'{rel}' is a directory; give a file path")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise ToolError(
                f"'{rel}' is {special_kind(info.st_mode)}; only regular files can be written"
            )
        if info is not None and not info.st_mode & 0o222:
            raise ToolError(
                f"'{rel}' is read-only (mode {stat.S_IMODE(info.st_mode):o}), so it was left as it "
                "is; if it really must change, make it writable with run_command first"
            )
        if ".git" in PurePosixPath(rel).parts:
            from localhand.safety.risk.types import Risk  # the shell parser's too: only here

            risk = Risk(
                "dangerous", (f"writes {rel} inside .git, where hooks and config run code",)
            )
            if needs_approval(risk, self.policy) and not self.approver.approve(
                f"{tool} {rel}", risk
            ):
                raise ToolError(refusal_message("write", risk, self.policy, self.approver))
        return info is not None

    def _not_found(self, raw: str, target: Path) -> str:
        message = f"'{raw}' does not exist; use list_directory to see what is there"
        parent = target.parent
        try:
            with self.workspace.directory(parent) as fd:
                names = [name for name in os.listdir(fd) if name not in IGNORED_DIRS]
        except (OSError, ToolError):  # no parent, or not one to list: no suggestion
            names = []
        if names:
            close = difflib.get_close_matches(target.name, names, n=1, cutoff=0.6)
            if close:
                return f"{message}. Did you mean '{self.workspace.relative(parent / close[0])}'?"
        return message

    def close(self) -> None:
        """Sync the files written so far to the disk (the end of a run: see ``fsio``)."""
        unsynced, self._unsynced = self._unsynced, set()
        sync_files(unsynced)

    def take_written(self) -> set[Path]:
        """The files written since the last call (absolute, symlinks resolved), and forget them."""
        written, self.written = self.written, set()
        return written

    def _write(self, target: Path, rel: str, data: bytes) -> None:
        # The temporary file and its rename both happen in the directory opened here, so a
        # parent swapped for a symlink after the checks cannot take the write elsewhere.
        try:
            with self.workspace.directory(target.parent, make=True) as directory:
                atomic_write_at(directory, target.name, data)
        except OSError as error:
            raise ToolError(failure("write", rel, error)) from None
        self.written.add(target)
        self._unsynced.add(target)


def failure(verb: str, rel: str, error: OSError) -> str:
    """What the model reads when opening ``rel`` to ``verb`` it failed with ``error``."""
    if swapped(error):
        return (
            f"could not {verb} '{rel}': part of its path became a symlink after it was checked, "
            "so it was not opened; look at the path with list_directory and try again"
        )
    return f"could not {verb} '{rel}': {error.strerror or error}"


def reports_writes(function: Callable[..., Any]) -> bool:
    """True when ``function`` is the ``write_file`` or ``edit_file`` of a ``FileTools`` whose
    writing methods are the ones defined here: every file it changes is then in ``written``.
    Anything else that is not read-only (run_command, custom tools, overrides) may change
    files without saying so."""
    owner = getattr(function, "__self__", None)
    return (
        isinstance(owner, FileTools)
        and getattr(function, "__func__", None) in _REPORTING
        and type(owner)._write is FileTools._write
    )


_REPORTING = (FileTools.write_file, FileTools.edit_file)


def _has_invalid_utf8(text: str) -> bool:
    """True when ``text`` (decoded with surrogateescape) holds bytes that were not UTF-8."""
    return any("\udc80" <= char <= "\udcff" for char in text)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _name_key(name: str) -> tuple[str, str]:
    return name.casefold(), name
