"""What a batch has finished, kept in localhand's data directory so the same command can resume.

``tasks.jsonl`` → ``batch-state/tasks-<hash of its real path>.jsonl`` in the data directory:
one JSON line per finished task (its id, the hash of its line, the Result), appended and
flushed the moment the task ends. Never beside the batch file, where a task's model could
write a ``pass`` for a task that then never runs: a ``tasks.jsonl.state`` there (the old
place) is ignored, with a warning (``stale_state``).
A batch that is killed loses only the tasks that were running; run the same command again and
it skips every task whose Result is ``pass``, ``unverified``, ``partial_pass`` or ``fail``
(and whose line is unchanged), and runs the rest, ``error`` ones included (a server that was
down), each in a fresh workspace.

A file lock says one batch at a time per state file; the kernel drops it when a batch dies.
The state is a file and not the run store on purpose: it belongs to the batch file (pass
``--fresh`` to start over), while the store keeps every run's events wherever
``LOCALHAND_DB`` points.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import IO, Any

from localhand.batch.tasks import BatchTask
from localhand.errors import ConfigError
from localhand.paths import data_dir, private_dir
from localhand.types import Closing

DONE = ("pass", "unverified", "partial_pass", "fail")

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, a second batch is not detected
    fcntl = None  # type: ignore[assignment]


def state_path(tasks_file: Path) -> Path:
    """Where the state of ``tasks_file`` lives: keyed by its real path, so the same file reached
    by another name resumes the same batch, and another file of that name does not."""
    real = os.path.realpath(tasks_file)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return private_dir(data_dir() / "batch-state") / f"{Path(real).stem[:60]}-{digest}.jsonl"


def stale_state(tasks_file: Path, state: Path) -> str | None:
    """The warning for a state file beside ``tasks_file``, which is not read; else ``None``."""
    old = tasks_file.with_name(tasks_file.name + ".state")
    return (
        f"{old} is ignored: a resume state beside its batch file could be written by a task's "
        f"model. The state of this batch lives now in {state}; remove {old.name}"
        if old.is_file()
        else None
    )


class BatchState(Closing):
    """The finished tasks of one batch file, and the lock that keeps it to one batch."""

    def __init__(self, path: Path, *, fresh: bool = False) -> None:
        self.path = path
        try:
            self._file: IO[str] = open(path, "a+", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise ConfigError(
                f"cannot write the batch state {path}: {exc}; pass --state FILE elsewhere"
            ) from None
        self._lock()
        if fresh:
            self._file.truncate(0)
        self._records = self._read()

    def finished(self, task: BatchTask) -> dict[str, Any] | None:
        """The record of an earlier run of this task (``result``, ``where``...), if it finished
        and its line is unchanged."""
        record = self._records.get(task.id)
        if record and record.get("key") == task.key and record["result"].get("status") in DONE:
            return record
        return None

    def record(self, task: BatchTask, result: dict[str, Any], **extra: Any) -> None:
        """Append a task's Result and flush it to disk."""
        record = {"id": task.id, "key": task.key, "line": task.line, **extra, "result": result}
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self._records[task.id] = record

    def close(self) -> None:
        self._file.close()

    def _lock(self) -> None:
        if fcntl is None:
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise ConfigError(
                f"another `localhand batch` is running this batch (its state {self.path} is "
                "locked); wait for it to end, or pass --state FILE to run a separate copy"
            ) from None

    def _read(self) -> dict[str, dict[str, Any]]:
        self._file.seek(0)
        records: dict[str, dict[str, Any]] = {}
        text = self._file.read()
        if text and not text.endswith("\n"):  # cut short by a crash: start the next line clean
            self._file.write("\n")
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record["result"]["status"], str):
                    raise TypeError("status")
                records[str(record["id"])] = record
            except (ValueError, KeyError, TypeError):
                if number == len(lines):  # a line cut short by a crash: that task reruns
                    continue
                raise ConfigError(
                    f"{self.path}:{number} is not a batch state record; delete the file "
                    "(or pass --fresh) to run every task again"
                ) from None
        return records
