"""What the tiny policy knows of the workspace, learnt from structured facts only: the task's
words, the workspace's files as they are on disk, and each tool call (its name and arguments)
with its result's ``ok``. No tool's output text is read: a tool's wording can change, and a
file's text read back from disk is what the tool showed (the read happened just before).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localhand.errors import ToolError
from localhand.paths import IGNORED_DIRS
from localhand.tools.workspace import Workspace
from localhand.types import ToolCall, ToolResult

_QUOTED = re.compile(r"`([^`\n]+)`")
_NAMED = re.compile(
    r"(?<![\w./>=<-])((?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/(-])"
)
"""A file name in the task's words: ``hello.txt``, ``src/app.py``, and names with several
dots (``config.prod.json``, ``test_my.module.py``, ``v1.2.notes.md``); not a version
(``>=2.31``), nor a call (``calc.double(2)``)."""
_SUFFIXES = frozenset(
    "py txt md rst json yaml yml toml cfg ini conf env csv tsv xml html htm css js mjs cjs ts "
    "tsx jsx sh bash zsh rs go c h cc cpp hpp java kt rb php pl lua sql lock log gitignore "
    "dockerfile mk cmake proto graphql svg tex".split()
)
"""The suffixes of a file a task names that does not exist yet: ``os.path`` and
``self.items`` in a task's words are code, not files."""
_ABBREV = re.compile(r"^[A-Za-z]\.[A-Za-z]$")  # "e.g", "i.e": words, not files
_RUNNERS = {".py": "python3", ".sh": "bash"}
"""How a script of the workspace is run: the commands a tiny model may choose besides the
checks (left free, it runs a file's name, or a tool's)."""
MAX_TEXT = 64_000
"""A file larger than this is not kept: no line of it is offered for an edit."""


def clean_path(path: Any) -> str:
    """A workspace path as one spelling (``./a//b.py`` is ``a/b.py``)."""
    text = posixpath.normpath(str(path or ".").strip())
    return "." if text in ("", ".") else text.removeprefix("./")


def task_words(task: str) -> tuple[list[str], list[str]]:
    """The commands the task quotes in backticks, and the files it names outside them."""
    quoted = list(dict.fromkeys(c.strip() for c in _QUOTED.findall(task) if c.strip()))
    named = _NAMED.findall(_QUOTED.sub(" ", task))
    targets = [clean_path(p) for p in named if not _ABBREV.match(p)]
    return quoted, list(dict.fromkeys(targets))


@dataclass(slots=True)
class Knowledge:
    """What the run has shown about the workspace."""

    root: Path
    checks: list[str] = field(default_factory=list)
    """Commands that check the work: the task's quoted ones, the run's ``--verify``, else the
    project's own (``localhand.evidence.project_checks``)."""
    targets: list[str] = field(default_factory=list)
    """The files the task names."""
    texts: dict[str, str | None] = field(default_factory=dict)
    """Every file known to exist: its text as last seen in full, or ``None`` (not read)."""
    fresh: set[str] = field(default_factory=set)
    """Files whose current text the model has seen: reading them again adds nothing."""
    dirs: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)
    acted: bool = False
    ran: dict[str, bool] = field(default_factory=dict)
    """Commands run since the last change, and whether they passed."""
    written: set[tuple[str, str]] = field(default_factory=set)
    """(path, line) of each line the model wrote itself: not offered for editing while no
    check says it is wrong (a tiny model otherwise edits its own edit back and forth)."""
    mine: set[str] = field(default_factory=set)
    """Files the model created: it may write them again once a check fails."""
    unchecked: bool = False
    """Whether a file has changed since a check last ran."""

    @classmethod
    def start(cls, root: Path, task: str, checks: Sequence[str]) -> Knowledge:
        quoted, named = task_words(task.split("\nWorkspace: ")[0])
        targets = [
            p for p in named if p.rsplit(".", 1)[-1].lower() in _SUFFIXES or (root / p).exists()
        ]
        known = cls(root, list(dict.fromkeys([*quoted, *checks])), targets)
        known._list(".")
        known.listed.discard(".")  # the model has not listed it: the task shows the top only
        return known

    # -- what a call showed -------------------------------------------------------------------
    def observe(self, call: ToolCall, result: ToolResult) -> None:
        self.acted = True
        args, name = call.arguments, call.name
        path = clean_path(args.get("path"))
        command = str(args.get("command", "")).strip()
        if name == "run_command":
            self.ran[command] = result.ok
            if command in self.checks:
                self.unchecked = False
            return
        if not result.ok:
            return
        if name == "read_file":
            self.texts[path] = self._read(path)
            if self.texts[path] is not None:
                self.fresh.add(path)
        elif name == "list_directory":
            self._list(path)
        elif name in ("write_file", "edit_file"):
            created = path not in self.texts
            self.texts[path] = self._read(path)
            self.fresh.add(path)
            if created:
                self.mine.add(path)
            wrote = args.get("content") if name == "write_file" else args.get("new_text")
            self.written.update((path, line.strip()) for line in str(wrote or "").splitlines())
            self.ran.clear()  # outputs from before the change are stale
            self.unchecked = True

    def _read(self, path: str) -> str | None:
        try:
            target = Workspace(self.root).resolve(path)
            if target.stat().st_size > MAX_TEXT:
                return None
            return target.read_text(encoding="utf-8")
        except (ToolError, OSError, UnicodeDecodeError):
            return None

    def _list(self, path: str) -> None:
        try:
            target = Workspace(self.root).resolve(path)
            entries = list(os.scandir(target))
        except (ToolError, OSError):
            return
        self.listed.add(path)
        for entry in entries:
            full = clean_path(posixpath.join(path, entry.name))
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in IGNORED_DIRS:
                    self.dirs.add(full)
            elif entry.is_file(follow_symlinks=False):
                self.texts.setdefault(full, None)

    # -- what may come next -------------------------------------------------------------------
    def failing(self) -> bool:
        """Whether a check has failed since the last change: the work needs repairing."""
        return any(self.ran.get(command) is False for command in self.checks)

    def checked(self) -> bool:
        """Whether a check has passed since the last change: what is left is to say so."""
        return any(self.ran.get(command) for command in self.checks)

    def unread(self) -> list[str]:
        return sorted(p for p in self.texts if p not in self.fresh)

    def unlisted(self) -> list[str]:
        return sorted(self.dirs - self.listed)

    def commands(self) -> list[str]:
        """The commands worth running now: the checks, and each script's run, but not one
        whose output since the last change the model has already seen."""
        scripts = [
            f"{_RUNNERS[suffix]} {path}"
            for path in sorted(self.texts)
            if (suffix := posixpath.splitext(path)[1]) in _RUNNERS
        ]
        return [c for c in dict.fromkeys([*self.checks, *scripts]) if c not in self.ran]

    def new_files(self) -> list[str] | None:
        """The files the task names that do not exist, or ``None`` when it names none (any new
        file then). A file in a directory not listed yet may exist: it is not offered until
        it is."""
        if not self.targets:
            return None
        unknown = self.dirs - self.listed
        new = [
            p
            for p in self.targets
            if p not in self.texts and (posixpath.dirname(p) or ".") not in unknown
        ]
        return new

    def editable(self) -> dict[str, list[str]]:
        """Each file whose text the model has seen, with the lines that can be ``old_text``:
        not blank, found once in the file (stripped of their indentation), and not its own
        unless a check fails since it wrote them."""
        out: dict[str, list[str]] = {}
        repairing = self.failing()
        for path, text in sorted(self.texts.items()):
            if text is None or path not in self.fresh:
                continue
            if self.targets and path not in self.targets and path not in self.mine:
                continue  # the task says which files change
            lines: list[str] = []
            for line in text.splitlines():
                stripped = line.strip()
                own = (path, stripped) in self.written and not repairing
                if stripped and text.count(stripped) == 1 and stripped not in lines and not own:
                    lines.append(stripped)
            if lines:
                out[path] = lines
        return out
