"""Exceptions, in one tree.

    LocalhandError                 base of everything raised on purpose
    ├── ConfigError                bad flags, settings or task files (CLI exit code 2)
    ├── ModelError                 the model server failed in a way a person can act on
    │   ├── ServerUnavailable      nothing answers at the host (names OLLAMA_HOST / --host)
    │   ├── ModelNotFound          the server does not have the model (says how to pull it)
    │   ├── ToolsUnsupported       the model cannot take tools (says to pick one that can)
    │   ├── ModelTimeout           one request took longer than its timeout
    │   └── BadResponse            the server answered with something that is not a reply
    └── StopRun                    the model or a guardrail ended the run; carries the reason
        ├── FinalAnswer            the model answered without a call: the normal end
        ├── MaxIterations
        ├── Repetition
        ├── Stall
        ├── NudgeExhausted
        ├── WallClockTimeout
        ├── BudgetExceeded
        ├── Cancelled
        └── WorkspaceGone          the workspace was removed mid-run (status ``error``)

    ToolError                      a tool refused or failed; becomes a tool result the model
                                   reads, never ends the run (not a LocalhandError on purpose)

Only ``StopRun`` is caught by the loop to end a run normally; ``ModelError`` ends it with
``termination_reason="error"`` and a message in ``Result.error``.
"""

from __future__ import annotations


class LocalhandError(Exception):
    """Base for every error localhand raises on purpose; ``str()`` is a message for people."""


class ConfigError(LocalhandError):
    """Bad usage or configuration: the message says what to change."""


def positive_seconds(value: object, default: float, said: str) -> float:
    """A timeout from a settings file (``default`` where it is unset, ``None``): a number above
    0, not ``true``; else a ``ConfigError`` that ``said`` (the key and its file) must be one."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{said} must be a positive number of seconds, not {value!r}")
    return float(value)


class ModelError(LocalhandError):
    """The model server failed. ``retryable`` errors may succeed when sent again."""

    retryable: bool = False


class ServerUnavailable(ModelError):
    retryable = True


class ModelNotFound(ModelError):
    pass


class ToolsUnsupported(ModelError):
    pass


class ModelTimeout(ModelError):
    retryable = True


class BadResponse(ModelError):
    """A 5xx, a body that is not JSON, or a connection cut mid-reply.

    ``status`` is the HTTP status when the server answered with one (503: its queue is full),
    None when it did not answer properly."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class StopRun(LocalhandError):
    """Ends the loop; the subclass names the termination reason (``reason=`` in its header)."""

    reason: str = "error"

    def __init_subclass__(cls, reason: str | None = None) -> None:
        super().__init_subclass__()
        if reason is not None:
            cls.reason = reason

    def __init__(self, message: str = "", *, guardrail: str | None = None) -> None:
        super().__init__(message)
        self.guardrail = guardrail


class FinalAnswer(StopRun, reason="final_answer"): ...


class MaxIterations(StopRun, reason="max_iterations"): ...


class Repetition(StopRun, reason="repetition"): ...


class Stall(StopRun, reason="stall"): ...


class NudgeExhausted(StopRun, reason="nudge_exhausted"): ...


class WallClockTimeout(StopRun, reason="timeout"): ...


class BudgetExceeded(StopRun, reason="budget"): ...


class Cancelled(StopRun, reason="cancelled"): ...


class WorkspaceGone(StopRun): ...


class ToolError(Exception):
    """A tool could not do what was asked; the message is shown to the model so it can fix it."""
