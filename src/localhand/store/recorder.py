"""The bus subscriber that writes every event to the store the moment it is emitted.

What is stored is kept, and shown on the dashboard: every string of an event has its secrets
redacted first (``localhand.safety.secrets.scrub``), the Result's answer included.

Events are queued in order on the emitting thread and committed behind it by the store's writer
(``localhand.store.behind``: what a kill can lose), a ``task_finished`` with everything before it.
Several tasks may share one bus and emit from several threads: the recorder maps each
``task_id`` to its open run under a lock, and the store serialises writes.
"""

from __future__ import annotations

import contextvars
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.events import Event, TaskFinished, hold
from localhand.safety.secrets.scrub import scrub_data
from localhand.store import archive
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.store.db import Store


class Recorder:
    """``bus.subscribe(store.recorder())``: one run per task, opened by ``Store.begin_run`` or,
    failing that, at the task's first event; closed by its ``task_finished``.

    With ``ledger=True`` every ``model_reply`` is also booked in the token ledger (leave it
    off when something else, such as the budget check, books the calls itself).
    """

    def __init__(
        self,
        store: Store,
        *,
        ledger: bool = False,
        archive_bytes: int = archive.MAX_BYTES,
        archive_secrets: bool = False,
    ) -> None:
        self.store = store
        self.ledger = ledger
        self.archive_bytes = archive_bytes
        """Keep the workspace with the run when it is at most this big (0: never)."""
        self.archive_secrets = archive_secrets
        """Keep secret-looking files (``.env``, keys) in that copy too."""
        self._runs: dict[str, str] = {}
        self._finished: dict[str, str] = {}
        """Runs closed by their ``task_finished``, for events that come after it (a plan's
        memory summary still being written, say): they join that run, not a new one."""
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        raw = event.to_dict()  # a copy: scrubbed and written on the store's writer thread,
        read = event.type in ("task_started", "task_finished")  # but for these, read here
        data = scrub_data(raw) if read else raw
        with self._lock:
            run_id = self._runs.get(event.task_id)
            if event.type == "task_started":  # the same task run again starts a run of its own
                self._finished.pop(event.task_id, None)
            late = run_id is None and event.task_id in self._finished
            if late:
                run_id = self._finished[event.task_id]
            elif run_id is None:
                run_id = self.store.open_run_for(event.task_id) or self.store.begin_run(
                    event.task_id
                )
                self._runs[event.task_id] = run_id
            if event.type == "task_finished" and not late:
                self._finished[event.task_id] = self._runs.pop(event.task_id)
        if event.type == "task_started" and not late:
            self.store.note_start(run_id, event.task_id, data)
            self._keep_workspace(run_id, str(raw.get("workspace") or ""))
        self.store.append_event(run_id, data, None if read else scrub_data)
        if event.type == "model_reply" and self.ledger:
            self.store.ledger_add(
                event.task_id,
                int(data.get("tokens_in") or 0),
                int(data.get("tokens_out") or 0),
                run_id=run_id,
                ts=float(data["ts"]),
            )
        elif event.type == "task_finished" and not late:  # a late event leaves the Result be
            self.store.finish_run(run_id, dict(data.get("result") or {}))

    def _keep_workspace(self, run_id: str, workspace: str) -> None:
        # Taken at task_started, before any tool has run: the files as the run found them.
        if self.archive_bytes <= 0 or not workspace or not Path(workspace).is_dir():
            return
        # Packed in a thread while the first request goes out (150 ms for 2,000 files); the run
        # waits for it before its first tool can change a file (``hold``), then it is saved here.
        packed: list[archive.Archive] = []
        context = contextvars.copy_context()
        worker = threading.Thread(
            target=context.run,
            args=(lambda: packed.append(archive.pack(
                Path(workspace), self.archive_bytes, include_secrets=self.archive_secrets
            )),),
            name="localhand-archive",
            daemon=True,
        )  # fmt: skip
        worker.start()

        def saved() -> None:
            worker.join()
            if packed:  # a pack that failed leaves the run without a copy, as before
                self.store.save_archive(run_id, packed[0])

        hold(saved)


def close_unfinished(store: Store, run_id: str, result: dict[str, Any] | None = None) -> None:
    """Close ``run_id`` when it is still running: a run that never got its ``task_finished``
    (an exception ended it first, a batch's worker died), with ``result`` (default: an error,
    "the run ended without a result"). That Result is kept as its ``task_finished`` too, so
    ``localhand show`` says why; never announced on a bus (the door says it to the person,
    once). A run already closed is left as it is."""
    info = store.run(run_id)
    if info.status != "running":
        return
    if result is None:
        ended = Result.failed(info.task_id, "the run ended without a result", model=info.model)
        result = ended.to_dict()
    event = scrub_data(TaskFinished(task_id=info.task_id, result=result).to_dict())
    store.append_event(run_id, event)
    store.finish_run(run_id, dict(event["result"]))
