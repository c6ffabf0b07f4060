"""Approving commands from the dashboard: a run's thread waits here until the page answers.

    approvals = PageApprovals()
    run_task(task, settings, approver=approvals.approver(run_id))   # in the run's thread
    approvals.pending(run_id)          # what the page shows, with Approve / Deny
    approvals.decide(request_id, True)  # the page's answer wakes the run
    approvals.decide(request_id, False, reason="write it under build/")  # read by the model

Nobody answering within the timeout is a refusal, and so is everything once the registry is
closed (the server stopping): a run thread never hangs on a page that is gone.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from localhand.safety.approval.approver import BaseApprover, clean_reason, refused_saying

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Risk

DEFAULT_TIMEOUT_S = 300.0

Answer = Literal["approved", "denied", "timeout", "closed", "stopped"]


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A command waiting for the page's yes or no."""

    id: str
    run_id: str
    command: str
    risk: str
    reasons: tuple[str, ...]
    asked_at: float
    """Seconds since the epoch."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons)}


@dataclass(slots=True)
class _Waiter:
    request: PendingApproval
    answered: threading.Event = field(default_factory=threading.Event)
    answer: Answer = "closed"
    reason: str = ""


class PageApprovals:
    """The pending requests of every run the dashboard started; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiter] = {}
        self._closed = False
        self._stopped: set[str] = set()
        """Runs stopped on the page: what they ask from now on is refused at once."""

    def approver(self, run_id: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> PageApprover:
        """An approver for ``run_id`` that asks through this registry."""
        return PageApprover(self, run_id, timeout_s=timeout_s)

    def ask(self, run_id: str, command: str, risk: Risk, timeout_s: float) -> tuple[Answer, str]:
        """Wait for the page's answer (``approved``, ``denied``), ``timeout`` when nobody
        gave one in time, ``closed`` (at once, or when it happens) once the registry closes;
        with the reason the page gave for a denial (``""``: none)."""
        request = PendingApproval(
            id=secrets.token_hex(8),
            run_id=run_id,
            command=command,
            risk=risk.level,
            reasons=tuple(risk.reasons),
            asked_at=time.time(),
        )
        waiter = _Waiter(request)
        with self._lock:
            if self._closed:
                return "closed", ""
            if run_id in self._stopped:
                return "stopped", ""
            self._waiting[request.id] = waiter
        waiter.answered.wait(timeout_s)
        with self._lock:  # an answer that lands as the time runs out still counts
            self._waiting.pop(request.id, None)
            if not waiter.answered.is_set():
                return "timeout", ""
            return waiter.answer, waiter.reason

    def pending(self, run_id: str | None = None) -> list[PendingApproval]:
        """Requests still waiting, oldest first; only ``run_id``'s when given."""
        with self._lock:
            requests = [waiter.request for waiter in self._waiting.values()]
        found = [r for r in requests if run_id is None or r.run_id == run_id]
        return sorted(found, key=lambda r: r.asked_at)

    def decide(self, request_id: str, approve: bool, reason: str = "") -> bool:
        """Answer a pending request, a denial with the person's ``reason`` if they gave one
        (one line, inert, cut: ``clean_reason``); False when there is none by that id
        (unknown, already decided or timed out)."""
        with self._lock:
            waiter = self._waiting.pop(request_id, None)
            if waiter is None:
                return False
            waiter.answer = "approved" if approve else "denied"
            waiter.reason = "" if approve else clean_reason(reason)
            waiter.answered.set()
        return True

    def withdraw(self, run_id: str) -> int:
        """Refuse what ``run_id`` waits for, and all it asks later (the page's Stop: a run
        blocked on an answer would reach its cancel check only once somebody answered);
        returns how many were waiting."""
        with self._lock:
            self._stopped.add(run_id)
            mine = [key for key, w in self._waiting.items() if w.request.run_id == run_id]
            for key in mine:
                waiter = self._waiting.pop(key)
                waiter.answer = "stopped"
                waiter.answered.set()
        return len(mine)

    def close(self) -> None:
        """Refuse every pending request and every later one (the server is stopping)."""
        with self._lock:
            self._closed = True
            for waiter in self._waiting.values():
                waiter.answered.set()  # its answer stays "closed"
            self._waiting.clear()


class PageApprover(BaseApprover):
    """The ``Approver`` of a run started from the dashboard: the page approves or denies.

    Args:
        approvals: the registry the page reads and answers through.
        run_id: the run whose timeline shows the request.
        timeout_s: refuse after this long without an answer.
    """

    def __init__(
        self, approvals: PageApprovals, run_id: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.approvals = approvals
        self.run_id = run_id
        self.timeout_s = timeout_s
        self.refusal = "the user denied it on the dashboard"
        self.decided_by = "page"
        """Who gave the last answer, for the ``approval_decided`` event."""

    def approve(self, command: str, risk: Risk) -> bool:
        answer, self.reason = self.approvals.ask(self.run_id, command, risk, self.timeout_s)
        self.decided_by = {"timeout": "timeout", "closed": "shutdown", "stopped": "stop"}.get(
            answer, "page"
        )
        self.refusal = {
            "timeout": f"nobody answered on the dashboard within {self.timeout_s:g} s",
            "closed": "the dashboard stopped before anyone answered",
            "stopped": "the run was stopped on the dashboard",
        }.get(answer, refused_saying("the user denied it on the dashboard", self.reason))
        return answer == "approved"
