"""The endpoint pool: which server runs the next task.

- Each endpoint runs at most its slots' worth of tasks at once: the slots it was given, else
  what its server publishes (read by ``discover``), else 1 (``localhand.batch.slots``). A task
  holds its slot for its whole run, so it stays on one server and that server's prompt cache
  for it stays warm.
- The next task goes to the least busy endpoint (running tasks / slots) that has its model.
- An endpoint that stops answering is marked dead; tasks on it fail over (see
  :class:`~localhand.batch.pooled.PooledModel`). A dead endpoint is asked again after
  ``revive_after`` seconds, when a task needs it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from localhand.batch.endpoints import Endpoint
from localhand.batch.slots import SlotsFrom, published_slots
from localhand.errors import ConfigError, LocalhandError, ModelTimeout, ServerUnavailable
from localhand.models._ollama_wire import canonical
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel


def list_models(endpoint: Endpoint, timeout: float = 5.0) -> list[str]:
    """The models ``endpoint`` serves (``/api/tags`` or ``/v1/models``), asked once."""
    if endpoint.backend == "openai":
        with OpenAICompatModel(
            "-", endpoint.url, max_attempts=1, metadata_timeout=timeout
        ) as server:
            return server.list_models()

    with OllamaModel("-", endpoint.url, max_attempts=1, metadata_timeout=timeout) as ollama:
        return ollama.list_models()


@dataclass(frozen=True, slots=True)
class EndpointStatus:
    url: str
    busy: int
    slots: int
    alive: bool
    why: str = ""
    """Why it is taken as dead."""
    slots_from: SlotsFrom = "given"
    """Where ``slots`` came from: the configuration, the server, or the default of 1."""


class EndpointPool:
    """Hands out endpoints to tasks, one slot each; thread-safe."""

    def __init__(
        self,
        endpoints: Iterable[Endpoint],
        *,
        revive_after: float = 30.0,
    ) -> None:
        self.endpoints = list(endpoints)
        if not self.endpoints:
            raise ConfigError("the endpoint pool is empty: pass --host URL or configure [pool]")
        self.revive_after = revive_after
        self._busy = {e.url: 0 for e in self.endpoints}
        self._slots = {e.url: e.slots or 1 for e in self.endpoints}
        self._slots_from: dict[str, SlotsFrom] = {
            e.url: "given" if e.slots is not None else "default" for e in self.endpoints
        }
        self._models: dict[str, set[str] | None] = {
            e.url: None if e.models is None else {canonical(m) for m in e.models}
            for e in self.endpoints
        }
        self._dead: dict[str, tuple[float, str]] = {}
        self._cond = threading.Condition()

    # -- set-up ---------------------------------------------------------------------------
    def discover(self) -> None:
        """Ask every endpoint what it serves, and those whose slots were not given how many
        requests they serve at once, all at once; one that does not answer starts out dead
        (and is asked again later)."""
        threads = [threading.Thread(target=self.answers, args=(e,)) for e in self.endpoints]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def check_serves(self, models: Iterable[str]) -> None:
        """``ConfigError`` naming each model no endpoint has, and what each endpoint has."""
        missing = sorted({m for m in models if not self._serving(canonical(m), None)})
        if not missing:
            return
        lines = []
        for e in self.endpoints:
            known = self._models[e.url]
            if e.url in self._dead and known is None:
                lines.append(f"  {e.url}: did not answer ({self._dead[e.url][1]})")
            else:
                lines.append(f"  {e.url}: {', '.join(sorted(known or ())) or 'no models'}")
        raise ConfigError(
            f"no endpoint in the pool serves {', '.join(missing)}; the pool has:\n"
            + "\n".join(lines)
            + "\nPull the model on one of them (`ollama pull NAME`) or add an endpoint that "
            "has it (--host URL, or [pool] in localhand.toml)."
        )

    # -- leases ---------------------------------------------------------------------------
    def acquire(
        self, model: str, *, backend: str | None = None, timeout: float | None = None
    ) -> Endpoint:
        """A slot on the least busy live endpoint that has ``model``, waiting for one if all
        are busy. ``ServerUnavailable`` when every endpoint that has it is dead;
        ``ModelTimeout`` when no slot frees up within ``timeout`` seconds."""
        wanted = canonical(model)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                serving = self._serving(wanted, backend)
                if not serving:
                    raise ServerUnavailable(f"no endpoint in the pool serves {model}")
                alive = [e for e in serving if e.url not in self._dead]
                free = [e for e in alive if self._busy[e.url] < self._slots[e.url]]
                if free:
                    best = min(free, key=lambda e: self._busy[e.url] / self._slots[e.url])
                    self._busy[best.url] += 1
                    return best
                due = [e for e in serving if e.url in self._dead and self._due(e.url)]
                if due:
                    self._revive(due)
                    continue
                if not alive:
                    why = "; ".join(f"{e.url}: {self._dead[e.url][1]}" for e in serving)
                    raise ServerUnavailable(f"every endpoint that serves {model} is down ({why})")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise ModelTimeout(
                        f"no slot for {model} freed up on {', '.join(e.url for e in alive)} "
                        "within the task's time"
                    )
                self._cond.wait(timeout=min(left, 1.0) if left is not None else 1.0)

    def release(self, endpoint: Endpoint) -> None:
        with self._cond:
            self._busy[endpoint.url] = max(0, self._busy[endpoint.url] - 1)
            self._cond.notify_all()

    def mark_dead(self, endpoint: Endpoint, why: str) -> None:
        with self._cond:
            self._dead[endpoint.url] = (time.monotonic(), why)
            self._cond.notify_all()

    def status(self) -> list[EndpointStatus]:
        with self._cond:
            return [
                EndpointStatus(
                    e.url,
                    self._busy[e.url],
                    self._slots[e.url],
                    e.url not in self._dead,
                    self._dead.get(e.url, (0.0, ""))[1],
                    self._slots_from[e.url],
                )
                for e in self.endpoints
            ]

    def total_slots(self) -> int:
        """The tasks every endpoint together serves at once: the batch's default
        concurrency."""
        with self._cond:
            return sum(self._slots.values())

    # -- internals ------------------------------------------------------------------------
    def _serving(self, wanted: str, backend: str | None) -> list[Endpoint]:
        return [
            e
            for e in self.endpoints
            if (backend in (None, "auto") or e.backend == backend)
            and ((served := self._models[e.url]) is None or wanted in served)  # None: maybe
        ]

    def _due(self, url: str) -> bool:
        return time.monotonic() - self._dead[url][0] >= self.revive_after

    def _revive(self, due: list[Endpoint]) -> None:
        """Probe ``due`` endpoints without holding the lock; called with it held."""
        for e in due:  # restart their clocks so that other threads do not probe them too
            self._dead[e.url] = (time.monotonic(), self._dead[e.url][1])
        self._cond.release()
        try:
            for e in due:
                self.answers(e)
        finally:
            self._cond.acquire()

    def answers(self, endpoint: Endpoint) -> bool:
        """Ask the endpoint now; a dead one that answers is alive again."""
        try:
            names = list_models(endpoint)
        except (LocalhandError, OSError) as exc:
            with self._cond:
                since = self._dead.get(endpoint.url, (time.monotonic(), ""))[0]
                self._dead[endpoint.url] = (since, str(exc).split(". ")[0])
            return False
        published = None
        if self._slots_from[endpoint.url] == "default":  # not given, not read yet
            published = published_slots(endpoint)
        with self._cond:
            if endpoint.models is None:
                self._models[endpoint.url] = {canonical(n) for n in names}
            if published is not None:
                self._slots[endpoint.url], self._slots_from[endpoint.url] = published, "published"
            self._dead.pop(endpoint.url, None)
            self._cond.notify_all()
        return True
