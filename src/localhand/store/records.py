"""What the store hands back: runs, recorded events, ledger totals."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as the runs list shows it. ``status`` is ``running``, ``interrupted`` or a
    Result status."""

    id: str
    task_id: str
    kind: str
    replay_of: str | None
    description: str
    workspace: str
    model: str
    status: str
    termination_reason: str | None
    iterations: int
    tokens_in: int
    tokens_out: int
    error: str | None
    started_at: float
    finished_at: float | None
    heartbeat_at: float
    result: dict[str, Any] | None
    continues: str | None = None
    """The run this one carries on (``localhand run --continue``), if any."""

    @property
    def duration_s(self) -> float:
        end = self.finished_at if self.finished_at is not None else self.heartbeat_at
        if self.status == "running":
            end = time.time()
        return max(0.0, end - self.started_at)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration_s": round(self.duration_s, 3)}


@dataclass(frozen=True, slots=True)
class RunMatch:
    """The run ``Store.find_run`` found for what a user typed, and how it was found: a task id
    can have several runs, and the user should know which one they are looking at."""

    run: RunInfo
    task_runs: int = 0
    """Found by task id: how many runs that task has (``run`` is the newest). 0: found by
    run id or ``last``."""
    prefix_too: bool = False
    """Found by task id, though some run ids also start with what was typed."""

    @property
    def note(self) -> str | None:
        """What to tell the user about the choice, or None when there was none to make."""
        notes = []
        if self.task_runs > 1:
            notes.append(
                f"task {self.run.task_id!r} has {self.task_runs} runs: this is the latest, "
                f"run {self.run.id} (`localhand runs` lists the others)"
            )
        if self.prefix_too:
            notes.append(
                f"{self.run.task_id!r} is a task id and also the start of a run id; "
                "give the whole run id to see that run"
            )
        return "; ".join(notes) or None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as recorded: its public JSON (``data``) plus where it sits in the store."""

    seq: int
    run_id: str
    data: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data.get("type", ""))

    def to_dict(self) -> dict[str, Any]:
        """The event's JSON with ``seq`` and ``run_id`` added: what the WebSocket sends."""
        return {**self.data, "seq": self.seq, "run_id": self.run_id}


@dataclass(frozen=True, slots=True)
class Spent:
    """Ledger totals."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    calls: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


SELECT_RUNS = (
    "SELECT r.id, r.task_id, r.kind, r.replay_of, COALESCE(t.description, ''), "
    "COALESCE(t.workspace, ''), r.model, r.status, "
    "r.termination_reason, r.iterations, r.tokens_in, r.tokens_out, r.error, r.started_at, "
    "r.finished_at, r.heartbeat_at, r.result, r.continues, r.pid, r.pid_token, r.hostname "
    "FROM runs r LEFT JOIN tasks t ON t.id = r.task_id"
)
"""The columns a ``RunInfo`` is read from (``Store._run_info``)."""
