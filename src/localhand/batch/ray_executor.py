"""``--executor ray``: each task is a Ray task on a node that serves its model.

Routing is Ray's own: a node that serves a model says so with a custom resource named
``localhand/<model>`` whose amount is its server's slots::

    OLLAMA_NUM_PARALLEL=4 ollama serve &
    ray start --address=HEAD:6379 --resources='{"localhand/qwen3:8b": 4}'

and each task asks for one unit of its model's resource, so Ray runs it next to its model and
never more tasks on a node than its server has slots. On the node the task talks to the local
server: ``LOCALHAND_HOST`` if set in ``ray start``'s environment, else ``OLLAMA_HOST``, else
``127.0.0.1:11434``. localhand must be installed on every node (``pip install
'localhand[ray]'``), and a task's workspace must be at the same path there (a shared or
identical checkout).

Results come back as the tasks' return values; events come back while they happen through a
Ray queue, and the driver writes both to its own run store. Retries are explicit:
``max_retries`` reruns a task whose worker process or node died (from scratch, in a fresh
workspace, as a new run); an exception inside a task is never retried (``retry_exceptions``
off), since the task already turns every error it expects into a Result.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from localhand.batch.run_one import TaskOutcome, error_result, run_one
from localhand.batch.tasks import BatchTask
from localhand.config.settings import Settings
from localhand.errors import ConfigError, LocalhandError
from localhand.events import EventBus, ModelStatus, Warning
from localhand.models._ollama_wire import canonical
from localhand.run.task import Task
from localhand.session.backend import select_backend

RESOURCE_PREFIX = "localhand/"
INSTALL_HINT = "the Ray executor needs Ray: pip install 'localhand[ray]'"


def model_resource(model: str) -> str:
    """The Ray resource a node offers for ``model``: ``localhand/qwen3:8b``."""
    return RESOURCE_PREFIX + canonical(model)


def run_on_ray(
    items: list[BatchTask],
    *,
    settings: Settings,
    bus: EventBus,
    root: Path,
    keep: bool = False,
    address: str | None = None,
    max_retries: int = 2,
    concurrency: int | None = None,
    on_node: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[BatchTask, TaskOutcome]]:
    """Run ``items`` on the Ray cluster; yields each outcome as it ends, after its events."""
    ray = _import_ray()
    started_here = _connect(ray, address)
    try:
        from ray.util.queue import Queue  # the ray extra

        offered = {k for k in ray.cluster_resources() if k.startswith(RESOURCE_PREFIX)}
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # the ray extra

        # The queue lives on the driver's node: a worker node that dies must not take it along.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        events = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": here})
        relay = Relay(events, bus, on_node)
        remote = ray.remote(_run_on_node)
        retries = {"num_cpus": 0, "max_retries": max_retries, "retry_exceptions": False}
        worker_settings = replace(settings, daily_token_budget=None)  # booked by the driver
        waiting: deque[BatchTask] = deque()
        for item in items:
            resource = model_resource(item.task.model or settings.model)
            if resource in offered:
                waiting.append(item)
            else:
                why = _no_node(resource, offered)
                yield item, TaskOutcome(error_result(item.task, settings, why))
        pending: dict[Any, BatchTask] = {}
        while waiting or pending:
            while waiting and (concurrency is None or len(pending) < concurrency):
                item = waiting.popleft()
                resource = model_resource(item.task.model or settings.model)
                ref = remote.options(resources={resource: 1}, **retries).remote(
                    item.task, worker_settings, str(root), keep, events
                )
                pending[ref] = item
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.25)
            relay.drain()  # a task's events are queued before it returns
            for ref in ready:
                item = pending.pop(ref)
                yield item, _outcome(ray, ref, item.task, settings, max_retries)
    finally:
        if started_here:
            ray.shutdown()


def _run_on_node(task: Task, settings: Settings, root: str, keep: bool, events: Any) -> dict:
    """The Ray task: run one task against this node's model server."""
    import ray  # the ray extra

    context = ray.get_runtime_context()
    where = f"ray node {context.get_node_id()[:8]}"
    attempt = uuid.uuid4().hex[:8]
    bus = EventBus()
    bus.subscribe(lambda e: events.put({"event": e.to_dict(), "attempt": attempt, "where": where}))
    name = task.model or settings.model
    backend = task.backend or settings.backend
    host = os.environ.get("LOCALHAND_HOST") or None
    at = settings.with_overrides(
        model=name, host=host, backend="ollama" if backend == "auto" else backend
    )

    def warn(message: str) -> None:
        bus.emit(Warning(task_id=task.id, message=message))

    try:
        model = select_backend(at, warn)
    except LocalhandError as exc:
        return asdict(TaskOutcome(error_result(task, settings, str(exc)), [where]))
    server = host or os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"
    bus.emit(ModelStatus(task_id=task.id, message=f"running on {where}, model server {server}"))
    try:
        outcome = run_one(task, at, model=model, bus=bus, root=Path(root), keep=keep)
    finally:
        if hasattr(model, "close"):
            model.close()
    outcome.where = [where]
    return asdict(outcome)


class RelayedEvent:
    """An event that came from a Ray worker as its JSON: what subscribers ask of an Event."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.type: str = str(data.get("type"))
        self.task_id: str = str(data.get("task_id"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self._data)


class Relay:
    """Moves the workers' events from the queue to the driver's bus. Losing the queue costs
    the live events (the Results still come back), never the batch."""

    def __init__(
        self, events: Any, bus: EventBus, on_node: Callable[[str, str], None] | None
    ) -> None:
        self.events, self.bus, self.on_node = events, bus, on_node
        self.broken: str | None = None

    def drain(self) -> None:
        if self.broken:
            return
        import ray  # the ray extra

        try:
            while count := self.events.qsize():
                for item in self.events.get_nowait_batch(count):
                    self._emit(item)
        except ray.exceptions.RayError as exc:
            self.broken = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"

    def _emit(self, item: dict[str, Any]) -> None:
        event = RelayedEvent(item["event"])
        if self.on_node is not None and event.type == "task_started":
            self.on_node(event.task_id, item["where"])
        self.bus.emit(event)  # type: ignore[arg-type]  # has all of an Event its subscribers use


def _outcome(ray: Any, ref: Any, task: Task, settings: Settings, retries: int) -> TaskOutcome:
    try:
        return TaskOutcome(**ray.get(ref))
    except ray.exceptions.RayTaskError as exc:
        why = f"the task raised {exc.cause!r}" if exc.cause is not None else str(exc)
    except ray.exceptions.RayError as exc:
        why = (
            f"its Ray worker died and Ray's {retries} retries (--ray-max-retries) are used up: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        )
    return TaskOutcome(error_result(task, settings, f"Ray could not run the task: {why}"))


def _no_node(resource: str, offered: set[str]) -> str:
    example = json.dumps({resource: 4})
    have = ", ".join(sorted(offered)) or "no localhand/* resources"
    return (
        f"no Ray node offers the resource {resource} (the cluster has {have}); on a node that "
        f"serves the model, start Ray with --resources='{example}' (the amount is the "
        "server's slots, OLLAMA_NUM_PARALLEL)"
    )


def _import_ray() -> Any:
    try:
        import ray  # the ray extra
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def _connect(ray: Any, address: str | None) -> bool:
    """Join the cluster; True when this call connected (and so should disconnect)."""
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address or "auto", log_to_driver=False, logging_level="WARNING")
    except ConnectionError as exc:
        raise ConfigError(
            f"cannot join a Ray cluster at {address or 'RAY_ADDRESS / this machine'} ({exc}). "
            "Start one with `ray start --head --resources='{\"localhand/MODEL\": SLOTS}'` where "
            "the model server runs, then pass --ray-address HOST:6379 or set RAY_ADDRESS."
        ) from None
    return True
