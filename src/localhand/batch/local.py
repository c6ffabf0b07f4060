"""The local executor: ``--concurrency N`` threads in this process, sharing one endpoint pool.

A thread takes the next task, waits for a slot on the pool (so the task's clock starts when
it can really run), makes its workspace and runs it. Threads are daemons: Ctrl-C or a kill
ends the batch at once, and resume reruns what was cut off.

Tasks on the same Ollama endpoint and model share one backend (``OllamaModel``): one set of
HTTP connections, and one ``num_ctx`` that only grows, since Ollama reloads the model whenever
a request asks for another context size. Its warnings reach the task on whose thread they occur.
On an OpenAI-compatible endpoint each task gets a backend of its own, closed when the task
ends: each backend keeps one llama-server slot (``id_slot``, ``models._slots``), so tasks that
shared one would share its slot and evict each other's cached prompt every turn.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.batch.endpoints import Endpoint
from localhand.batch.pool import EndpointPool
from localhand.batch.pooled import PooledModel
from localhand.batch.run_one import TaskOutcome, error_result, run_one
from localhand.batch.tasks import BatchTask
from localhand.config.settings import Settings
from localhand.errors import LocalhandError
from localhand.events import EventBus, ModelStatus, Warning
from localhand.models.base import ChatModel
from localhand.session.backend import select_backend
from localhand.session.kept_cache import warm_prefix

if TYPE_CHECKING:
    from localhand.store import Store

_log = logging.getLogger("localhand")


def run_local(
    items: list[BatchTask],
    *,
    pool: EndpointPool,
    settings: Settings,
    bus: EventBus,
    concurrency: int,
    root: Path,
    keep: bool = False,
    store: Store | None = None,
    on_endpoint: Callable[[str, Endpoint], None] | None = None,
) -> Iterator[tuple[BatchTask, TaskOutcome]]:
    """Run ``items`` on ``concurrency`` threads; yields each task's outcome as it ends."""
    todo: queue.Queue[BatchTask] = queue.Queue()
    for item in items:
        todo.put(item)
    done: queue.Queue[tuple[BatchTask, TaskOutcome]] = queue.Queue()
    backends = SharedBackends(settings)
    threads = max(1, min(concurrency, len(items)))
    first_wave = {item.id for item in items[:threads]}  # taken first: their slots are cold

    def work() -> None:
        while True:
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                outcome = _run(
                    item, pool, backends, settings, bus, root, keep, store, on_endpoint,
                    warm=item.id in first_wave,
                )  # fmt: skip
            except Exception as exc:  # a bug must cost one task, not the batch
                outcome = TaskOutcome(error_result(item.task, settings, f"internal error: {exc!r}"))
            done.put((item, outcome))

    for _ in range(threads):
        threading.Thread(target=work, daemon=True, name="localhand-batch").start()
    try:
        for _ in items:
            while True:  # a timeout keeps Ctrl-C working while we wait
                try:
                    yield done.get(timeout=0.5)
                    break
                except queue.Empty:
                    continue
    finally:
        backends.close()


class SharedBackends:
    """One backend per (endpoint, model), built on first use; on an OpenAI-compatible endpoint
    one per task instead (``per_task``: its own slot). Thread-safe."""

    _task = threading.local()  # the calling thread's task: where warnings go

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._models: dict[tuple[str, str, str], ChatModel] = {}
        self._lock = threading.Lock()

    def serve(self, warn: Callable[[str], None], status: Callable[[str], None]) -> None:
        """Send the backends' warnings on this thread to ``warn`` and ``status``."""
        self._task.warn, self._task.status = warn, status

    def get(self, endpoint: Endpoint, model: str) -> ChatModel:
        if endpoint.backend == "openai":
            return self._build(endpoint, model)
        key = (endpoint.url, endpoint.backend, model)
        with self._lock:
            if key not in self._models:
                self._models[key] = self._build(endpoint, model)
            return self._models[key]

    def per_task(self, model: ChatModel) -> bool:
        """Whether ``model`` is one task's own (the task closes it), not shared."""
        with self._lock:
            return all(model is not shared for shared in self._models.values())

    def _build(self, endpoint: Endpoint, model: str) -> ChatModel:
        at = self.settings.with_overrides(model=model, host=endpoint.url, backend=endpoint.backend)
        return select_backend(at, self._warn, on_status=self._status)

    def close(self) -> None:
        with self._lock:
            models, self._models = list(self._models.values()), {}
        for model in models:
            if hasattr(model, "close"):
                model.close()

    def _warn(self, message: str) -> None:
        getattr(self._task, "warn", _log.warning)(message)

    def _status(self, message: str) -> None:
        getattr(self._task, "status", _log.info)(message)


def _run(
    item: BatchTask,
    pool: EndpointPool,
    backends: SharedBackends,
    settings: Settings,
    bus: EventBus,
    root: Path,
    keep: bool,
    store: Store | None,
    on_endpoint: Callable[[str, Endpoint], None] | None,
    *,
    warm: bool = False,
) -> TaskOutcome:
    """``item`` on a slot of the pool; with ``warm``, the prefix its run opens with is sent to
    that slot while its workspace is copied (llama-server: ``session.kept_cache.warm_prefix``)."""
    task = item.task
    name = task.model or settings.model

    def warn(message: str) -> None:
        bus.emit(Warning(task_id=task.id, message=message))

    def status(message: str) -> None:
        bus.emit(ModelStatus(task_id=task.id, message=message))

    backends.serve(warn, status)

    def placed(endpoint: Endpoint) -> None:
        status(f"running on {endpoint.url}")
        if on_endpoint is not None:
            on_endpoint(task.id, endpoint)

    backend = task.backend if task.backend not in (None, "auto") else None
    model = PooledModel(
        pool,
        name,
        lambda endpoint: backends.get(endpoint, name),
        backend=backend,
        on_warning=warn,
        on_endpoint=placed,
        close_models=backends.per_task,
    )
    try:
        model.open()
    except LocalhandError as exc:
        return TaskOutcome(error_result(task, settings, str(exc)))
    warming = None
    if warm and model.server_kind == "openai" and not task.is_plan:  # a plan opens otherwise
        warming = threading.Thread(target=warm_prefix, args=(settings, task.workspace, model))
        warming.start()
    try:
        outcome = run_one(
            task, settings, model=model, bus=bus, root=root, keep=keep, store=store,
            copied=warming.join if warming is not None else None,
        )  # fmt: skip
    finally:
        if warming is not None:
            warming.join()  # never two requests at once on one backend
        model.close()
    outcome.where = list(model.endpoints_used)
    return outcome
