"""Every task of a batch is a run in the store, whichever executor ran it and however it ended.

Subscribe the :class:`RunBook` to the bus *before* the store's recorder: it opens a task's run
(with the task's spec, so ``localhand replay`` can rerun it) at the task's first event, opens a
new one when a task starts over (Ray ran it again after a node died), and closes a run that
never got its ``task_finished`` (the task could not start, or its worker died) with the
Result the batch settled on.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from localhand.events import Event, EventBus, TaskFinished
from localhand.store.recorder import close_unfinished
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.run.task import Task
    from localhand.store import Store


class RunBook:
    def __init__(self, store: Store | None, bus: EventBus, tasks: dict[str, Task]) -> None:
        self.store, self.bus, self.tasks = store, bus, tasks
        self._open: dict[str, bool] = {}
        """Tasks with a run open: whether it has seen its ``task_started``."""
        self._finished: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        task_id = event.task_id
        if self.store is None or task_id not in self.tasks:
            return
        with self._lock:
            started = self._open.get(task_id)
            if event.type == "task_finished":
                self._open.pop(task_id, None)
                self._finished.add(task_id)
                return
            restart = event.type == "task_started" and started is True
            if restart:
                del self._open[task_id]
        if restart:  # the same task from the top: Ray ran it again after its worker died
            died = Result.failed(
                task_id, "the worker running this task died; the task was started again"
            )
            self.bus.emit(TaskFinished(task_id=task_id, result=died.to_dict()))
        if started is None or restart:
            task = self.tasks[task_id]
            self.store.begin_run(task, model=task.model or "")
        with self._lock:
            self._open[task_id] = self._open.get(task_id) or event.type == "task_started"
            self._finished.discard(task_id)

    def close(self, task_id: str, result: dict[str, Any]) -> None:
        """Make sure the task's run is closed, with ``result`` if it is still open."""
        if self.store is None:
            return
        with self._lock:
            is_open, finished = task_id in self._open, task_id in self._finished
        if is_open:  # through the bus, so that the recorder closes the run it has open
            self.bus.emit(TaskFinished(task_id=task_id, result=result))
        elif not finished:  # it never got to an event
            task = self.tasks[task_id]
            close_unfinished(self.store, self.store.begin_run(task, model=task.model or ""), result)
