"""A check the run changed does not count: checks run against their files as they were.

``CheckGuard`` keeps the check's own files (``localhand.evidence.checkfiles``) as they were
when the run started, read in the baseline's thread from the files its snapshot walked (no
second walk). Before checks run, it compares them with the disk, content against content, so
a change through a file tool and one through a command count alike. When the run changed
some, each command check runs in the sandbox with the files from before laid read-only over
the workspace's (bubblewrap binds; a check file the run created is hidden under
``/dev/null``, which pytest and Python's import pass by), and its output says so. Where that
cannot be done (no sandbox; a check script that did not exist before; a file too large to
keep, or a special one), or the comparison itself cannot be trusted (``Snapshot.unvouched``:
a walk cut short, a check file behind a new link), the check is not counted as passed and
says why; ``changed_files`` names them for the Result and a warning.

What this cannot catch: code under test that fakes its own success (a function that returns
what the test expects only under test), or a check that reads files no rule here names.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.evidence.checkfiles import CheckFiles, check_part
from localhand.evidence.hidden import (
    Entry,
    HiddenState,
    differs,
    is_instruction_file,
    kept_entry,
    read_entry,
    runs_in_checks,
)
from localhand.evidence.snapshot import ChangeTracker, Snapshot
from localhand.evidence.taskwords import written_tests
from localhand.evidence.verify import Check, CommandCheck, run_checks
from localhand.safety.box.bound import Bound
from localhand.safety.box.sandbox import available, current_sandbox
from localhand.types import CheckResult, Result

if TYPE_CHECKING:
    from localhand.evidence.reports import Collected

CAPTURE_TIMEOUT_S = 120


class CheckGuard:
    """The check files of one run's ``checks`` in ``workspace``, as they were at its start."""

    def __init__(
        self, workspace: Path, checks: Sequence[Check] = (), task: str = "", adoptable: str = ""
    ) -> None:
        self.workspace = Path(workspace)
        self.commands = [check.command for check in checks if isinstance(check, CommandCheck)]
        self.commands += [adoptable] if adoptable else []  # kept alike (evidence/adopt.py)
        files = CheckFiles.of(self.commands)
        files.work = written_tests(task)  # tests the task asks for are its work
        self.files = files.inside(self.workspace)
        self._originals: dict[str, Entry] = {}
        self._hidden: HiddenState | None = None
        self._tracker: ChangeTracker | None = None
        self._captured = threading.Event()
        self.last_changed: list[str] = []
        """The changed check files the last ``run`` found (at the end: the Result's)."""
        self.collected: dict[str, Collected] = {}
        """Each command's tests before the run (``evidence.baseline`` collects them)."""

    # -- the start -------------------------------------------------------------------------

    def capture(self, tracker: ChangeTracker | None) -> None:
        """Keep the check files ``tracker``'s baseline lists, and the hidden places. Called
        once, in the baseline's thread, also when the tracker could not be made (None)."""
        try:
            if tracker is not None:
                self._tracker = tracker
                self._hidden = HiddenState.take(self.workspace)
                if self.commands:
                    self._keep(tracker)
        finally:
            self._captured.set()

    def _keep(self, tracker: ChangeTracker) -> None:
        """The check files of the baseline: their contents from what the tracker read to hash
        them (``keeps``); links, files too large and those past its limit one by one."""
        self.files.trace_ways(tracker.baseline.files)
        for relpath in filter(self.files.holds, tracker.baseline.files):
            data = tracker.kept.get(relpath)
            if data is None:  # a link (kept with what it leads to), or past the limit
                entry = read_entry(self.workspace / relpath)
                if entry is not None and tracker.baseline.files[relpath].regular:
                    entry = dataclasses.replace(entry, data=None)  # past the limit: not kept
            else:  # the mode only matters to a script run as ./check.sh
                named = relpath in self.files.named
                entry = kept_entry(data, _mode(self.workspace / relpath) if named else 0o644)
            if entry is not None:
                self._originals[relpath] = entry
        self._keep_run_by(tracker.baseline)

    def _keep_run_by(self, baseline: Snapshot) -> None:
        """What ``npm test``'s script or ``make test``'s recipe runs is the check's too."""
        kept = {p: e.data for p, e in self._originals.items() if e.data is not None}
        while self.files.include(kept):  # what the Makefiles include, and it includes
            kept |= self._keep_also(baseline, self.files.included)
        commands = self.files.run_by(kept)
        if not commands:
            return
        more = CheckFiles.of(commands).inside(self.workspace)
        self.files.merge(more)
        if more.named:
            self._keep_also(baseline, lambda p: p in more.named or p.startswith(more.folders()))

    def _keep_also(self, baseline: Snapshot, wanted: Callable[[str], bool]) -> dict[str, bytes]:
        """Keep the files of ``baseline`` not kept yet that are ``wanted``; their contents."""
        found: dict[str, bytes] = {}
        for relpath in baseline.files:
            new = relpath not in self._originals and wanted(relpath)
            if new and (entry := read_entry(self.workspace / relpath)) is not None:
                self._originals[relpath] = entry
                found[relpath] = entry.data or b""
        return found

    @property
    def keeps(self) -> Callable[[str], bool] | None:
        """Which files' contents the change tracker keeps for this guard (None: none): the
        check files, and every ``__init__.py``, which may be one (``CheckFiles.ways`` is known
        once the tracker's walk is)."""
        return self._keeps if self.commands else None

    def _keeps(self, relpath: str) -> bool:
        return relpath.endswith("__init__.py") or self.files.holds(relpath)

    # -- what changed ----------------------------------------------------------------------

    def modified(self) -> list[str] | None:
        """The files the run created, changed or deleted so far (None: no tracker to tell)."""
        return self._tracker.files_modified() if self._ready() and self._tracker else None

    def shadows(self, relpaths: Iterable[str], files: CheckFiles) -> set[str]:
        """Those of ``relpaths`` the run created that shadow a module ``files``' Python imports."""
        # deferred: asked only when checks run, never on the way to the first request
        from localhand.evidence.shadowing import created_shadows

        if not self._ready() or self._tracker is None:
            return set()
        baseline = self._tracker.baseline
        return created_shadows(self.workspace, relpaths, baseline, files.import_homes())

    def changed_files(self) -> list[str]:
        """The check files the run created, changed or deleted so far."""
        return sorted(self._changes()[0])

    def _changes(self) -> tuple[dict[str, Entry | None], list[str], str | None]:
        """Changed check files → their entry from before the run (None: the run created it),
        the workspace's compiled Python, and why the checks cannot be vouched for at all."""
        if not self.commands or not self._ready() or self._tracker is None:
            return {}, [], None
        baseline = self._tracker.baseline
        current = Snapshot.take(self.workspace, self._tracker.own)
        originals = self._originals
        # Only files whose stat changed (or was too recent to vouch for them) are read.
        maybe = current.changed_since(baseline)
        candidates = {p for p in maybe if p in originals or self.files.holds(p)}
        candidates |= self.shadows(current.files.keys() - baseline.files.keys(), self.files)
        changes: dict[str, Entry | None] = {}
        for relpath in candidates:
            before = originals.get(relpath)
            after = read_entry(self.workspace / relpath) if relpath in current.files else None
            if _changed(relpath, before, after):
                changes[relpath] = before
        if self._hidden is not None:
            now = HiddenState.take(self.workspace)
            for relpath in filter(runs_in_checks, now.changed_since(self._hidden)):
                changes[relpath] = self._hidden.entries.get(relpath)
        return changes, current.bytecode, current.unvouched(baseline, changes)

    def sensitive_changes(self, files_modified: Sequence[str]) -> list[str]:
        """Changes under ignored folders that run code later (``localhand.evidence.hidden``), and
        to instruction files among ``files_modified``."""
        if not self._ready() or self._hidden is None:
            return []
        hidden = HiddenState.take(self.workspace).changed_since(self._hidden)
        return sorted({*hidden, *filter(is_instruction_file, files_modified)})

    def noted(self, result: Result) -> Result:
        """``result`` with the check files the last checks found changed, and the sensitive
        changes of the run."""
        result.check_files_changed = list(self.last_changed)
        result.sensitive_changes = self.sensitive_changes(result.files_modified)
        return result

    def _ready(self) -> bool:
        return self._captured.wait(CAPTURE_TIMEOUT_S)

    # -- running the checks ----------------------------------------------------------------

    def run(self, checks: Sequence[Check]) -> tuple[list[CheckResult], list[str]]:
        """Run ``checks``; those that run commands against the check files from before the
        run when it changed them. Returns the results and the changed check files."""
        try:
            changes, bytecode, refusal = self._changes()
        except Exception as error:  # a check that cannot be vouched for fails
            why = f"its own files could not be compared with the run's start ({error})"
            return self._refused(checks, why), []
        if refusal is not None:
            self.last_changed = sorted(changes)
            return self._refused(checks, refusal), sorted(changes)
        if not _boxed():
            bytecode = []  # without the sandbox nothing can be hidden
        self.last_changed = sorted(changes)
        if not changes and not bytecode:
            return run_checks(checks, self.workspace, self.collected), []
        guarded = [
            _Guarded(check, self, changes, bytecode) if isinstance(check, CommandCheck) else check
            for check in checks
        ]
        return run_checks(guarded, self.workspace, self.collected), sorted(changes)

    def _refused(self, checks: Sequence[Check], why: str) -> list[CheckResult]:
        """Command checks not counted, for ``why``; the others run."""
        return [
            CheckResult(name=check.command, passed=False, output_tail=f"Not counted: {why}.")
            if isinstance(check, CommandCheck)
            else run_checks([check], self.workspace)[0]
            for check in checks
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class _Guarded:
    """A command check run with the check files from before the run laid over, and compiled
    Python hidden (a ``.pyc`` stamped as its source's runs in its place, and the change tracker
    does not look in ``__pycache__``): Python compiles the sources again instead."""

    check: CommandCheck
    guard: CheckGuard
    changes: dict[str, Entry | None]
    bytecode: list[str]

    def __str__(self) -> str:
        return self.check.command

    def run(self, workspace: Path) -> CheckResult:
        listed = ", ".join(sorted(self.changes))
        why = self._why_not() if self.changes else None
        if why is not None:
            return CheckResult(
                name=self.check.command,
                passed=False,
                output_tail=f"Not counted: the run changed the check's own files ({listed}), "
                f"and {why}. Restore them (git checkout, or undo) and run the check again.",
            )
        with tempfile.TemporaryDirectory(prefix="localhand-check-") as kept:
            overlays = _overlays(workspace, self.changes, Path(kept))
            empty = str(Path(kept) / "empty.d")
            for compiled in map(str, map(workspace.joinpath, self.bytecode)):
                overlays.append((empty if os.path.isdir(compiled) else os.devnull, compiled))
            made = _missing(workspace, [target for _, target in overlays])
            box = Bound.over(current_sandbox(), [("--ro-bind", *pair) for pair in overlays])
            note = f"[ran with the check files from before the run: {listed}]\n" if listed else ""
            before = self.guard.collected.get(self.check.command)
            try:
                return self.check.run(workspace, sandbox=box, note=note, before=before)
            finally:
                _remove_mount_points(made)

    def _why_not(self) -> str | None:
        if not _boxed():
            return "without the sandbox they cannot be laid back for the check"
        for relpath, before in self.changes.items():
            if before is None and relpath in self.guard.files.named:  # none runs no check
                return f"{relpath} did not exist before the run"
            folder = os.path.isdir(self.guard.workspace / relpath)
            if before is not None and before.kind == "file" and folder:
                return f"{relpath} was a file and is a folder now, which cannot be laid back"
            if before is not None and before.kind == "other":
                return f"{relpath} was a special file (a FIFO, a socket, a device), not laid back"
            if before is not None and before.kind == "file" and before.data is None:
                return f"{relpath} was too large to keep"
            gone = before is not None and before.data is None and not os.path.exists(before.target)
            if before is not None and before.kind == "link" and gone:
                return f"{relpath} was a link to {before.target}, which is gone"
        return None


def changed_warning(changed: Sequence[str], results: Sequence[CheckResult]) -> str:
    """The warning for a run that changed its checks' own files."""
    if all("Not counted:" not in result.output_tail[:200] for result in results):
        how = "the checks ran against them as they were before the run"
    else:
        how = "checks that could not run against them as they were are not counted as passed"
    return f"the run changed the checks' own files ({', '.join(changed)}): {how}"


def _boxed() -> bool:
    """Whether commands run in the sandbox here (where files can be laid over)."""
    box = current_sandbox()
    return box.on and available() is None


def _mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0o644


def _changed(relpath: str, before: Entry | None, after: Entry | None) -> bool:
    """``differs``, but a file kept whole on both sides by its part the test runners read."""
    if before is None or after is None or before.kind != after.kind:
        return differs(before, after)
    if before.kind == "file" and before.data is not None and after.data is not None:
        return bool(check_part(relpath, before.data) != check_part(relpath, after.data))
    return differs(before, after)


def _overlays(
    workspace: Path, changes: dict[str, Entry | None], kept: Path
) -> list[tuple[str, str]]:
    """``(source, target)`` binds that show each changed check file as it was."""
    empty_dir = kept / "empty.d"
    empty_dir.mkdir()
    overlays = []
    for number, (relpath, before) in enumerate(sorted(changes.items())):
        target = str(workspace / relpath)
        if before is None:
            created_dir = os.path.isdir(target) and not os.path.islink(target)
            # /dev/null is no regular file: pytest takes no configuration from it, Python
            # imports no module from it (as if it were not there), anything else reads nothing
            overlays.append((str(empty_dir) if created_dir else os.devnull, target))
        elif before.kind == "link" and before.data is None:
            overlays.append((before.target, target))
        elif before.kind == "dir":
            overlays.append((str(empty_dir), target))  # a folder it replaced: shown empty
        elif before.data is not None:
            source = kept / str(number)
            source.write_bytes(before.data)
            source.chmod(before.mode & 0o555 or 0o444)
            overlays.append((str(source), target))
    return overlays


def _missing(workspace: Path, targets: Sequence[str]) -> list[str]:
    """The targets, and their folders inside ``workspace``, that do not exist: bubblewrap
    makes them as mount points in the workspace, and they are removed after the check."""
    missing: list[str] = []
    for target in targets:
        path = Path(target)
        while path != workspace and workspace in path.parents and not os.path.lexists(path):
            missing.append(str(path))
            path = path.parent
    return missing


def _remove_mount_points(paths: Sequence[str]) -> None:
    for path in sorted(set(paths), key=len, reverse=True):  # files and deepest folders first
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                # what Python compiled there while the check ran (unless told not to)
                shutil.rmtree(os.path.join(path, "__pycache__"), ignore_errors=True)
                os.rmdir(path)
            elif os.path.isfile(path) and os.path.getsize(path) == 0:
                os.unlink(path)
        except OSError:
            pass  # something was written there meanwhile: not ours to remove


__all__ = ["CheckGuard", "changed_warning"]
