"""Typed events and the bus every consumer subscribes to.

The loop never prints: it emits events. The terminal view, the store and the dashboard
each subscribe to the same stream. ``Event.to_dict()`` is the public JSON shape (DESIGN.md):
every event has ``type``, ``task_id`` and ``ts`` (seconds since the epoch).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, dataclass_transform

from localhand.types import Reply, ToolCall, ToolResult


@dataclass_transform(kw_only_default=True, frozen_default=True)
@dataclass(frozen=True, kw_only=True)
class Event:
    """Every event is a frozen dataclass of keyword-only fields: a subclass is made one by its
    header (``class Nudge(Event, type="nudge")``), which names its ``type`` in the JSON too."""

    type: ClassVar[str] = "event"
    task_id: str
    ts: float = field(default_factory=time.time)

    def __init_subclass__(cls, type: str) -> None:
        super().__init_subclass__()
        cls.type = type
        dataclass(frozen=True, kw_only=True)(cls)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


class TaskStarted(Event, type="task_started"):
    description: str
    model: str
    workspace: str
    max_iterations: int
    routing: dict[str, Any] | None = None
    """Whether the task runs the tool loop, and why (``{"agentic": true, "reason": "..."}``)."""


class ModelRequest(Event, type="model_request"):
    iteration: int
    messages: int
    constrained: bool = False
    """True when the request asks for a schema-constrained reply instead of offering tools."""


class ModelReply(Event, type="model_reply"):
    iteration: int
    content: str
    tool_calls: list[dict[str, Any]]
    """Native calls as sent on the wire (``{"function": {"name", "arguments"}}``)."""
    thinking: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    duration_ms: int = 0
    done_reason: str | None = None
    tokens_prefilled: int | None = None
    """Prompt tokens the server said it processed for this reply; None: it did not say."""
    tokens_cached: int | None = None
    """Prompt tokens the server said it reused from its cache; None: it did not say."""
    prefill_ms: float | None = None
    """The server's own prefill time for this reply; None: it did not say."""
    decode_ms: float | None = None
    """The server's own generation time for this reply; None: it did not say."""

    @classmethod
    def of(cls, reply: Reply, *, task_id: str, iteration: int, started: float) -> ModelReply:
        """The event for ``reply``, timed from ``started`` (a ``time.perf_counter()`` value)."""
        usage = reply.usage
        return cls(
            task_id=task_id,
            iteration=iteration,
            content=reply.content,
            tool_calls=[call.to_wire() for call in reply.tool_calls],
            thinking=reply.thinking,
            tokens_in=usage.prompt_tokens,
            tokens_out=usage.completion_tokens,
            duration_ms=round((time.perf_counter() - started) * 1000),
            done_reason=reply.done_reason,
            tokens_prefilled=usage.prefilled_tokens,
            tokens_cached=usage.cached_tokens,
            prefill_ms=usage.prefill_ms,
            decode_ms=usage.decode_ms,
        )


class ToolCallEvent(Event, type="tool_call"):
    tool_name: str
    args_summary: str
    result_summary: str
    iteration: int
    ok: bool
    duration_ms: int
    server: str | None = None
    """The MCP server whose tool it was; ``None`` for localhand's own tools."""
    call_id: str | None = None
    """The id the model (or its profile) gave the call; ``None``: the call had none."""

    @classmethod
    def of(
        cls,
        call: ToolCall,
        result: ToolResult,
        *,
        task_id: str,
        iteration: int,
        started: float,
        server: str | None = None,
        workspace: str = "",
    ) -> ToolCallEvent:
        """The event for ``call`` and its ``result``, timed from ``started``; the summaries are
        cut as if ``workspace`` were written ``<workspace>`` (``summarize``)."""
        return cls(
            task_id=task_id,
            tool_name=call.name,
            args_summary=summarize(
                json.dumps(call.arguments, ensure_ascii=False), ARGS_SUMMARY_CHARS, workspace
            ),
            result_summary=summarize(result.content, workspace=workspace),
            iteration=iteration,
            ok=result.ok,
            duration_ms=round((time.perf_counter() - started) * 1000),
            server=server,
            call_id=call.id,
        )


class Guardrail(Event, type="guardrail"):
    guardrail: str
    reason: str
    iteration: int


class ModelProgress(Event, type="model_progress"):
    """A reply the tool loop reads as a stream (``--watch-replies``), on its way: at most one
    a second, so that a long reply is never a silent minute."""

    iteration: int
    elapsed_s: float
    """Seconds since the request was sent."""
    tokens: int
    """Tokens received so far (servers stream about one a chunk)."""
    tokens_per_s: float | None = None
    """Generation speed since the first token; None until there are two."""


class Nudge(Event, type="nudge"):
    iteration: int
    nudge_number: int
    """Nudges in a row so far, this one included (1 to ``Limits.max_nudges``); a round of
    tool calls that run starts the count again."""
    message: str


class Warning(Event, type="warning"):
    message: str


class ModelStatus(Event, type="model_status"):
    message: str
    """Progress a person waits on: which backend was chosen, model loading, first-token time."""


class ApprovalNeeded(Event, type="approval_needed"):
    """A command waits for a person's yes (plan steps, and run_command in run mode)."""

    step_id: str
    command: str
    risk: str
    reasons: list[str]
    warning_message: str
    description: str = ""
    explanation: str = ""
    added_by_agent: bool = False
    """True for a step the model inserted or changed, and for every command in run mode."""


class ApprovalDecided(Event, type="approval_decided"):
    """The answer to the ``approval_needed`` just before it."""

    step_id: str
    command: str
    approved: bool
    by: str
    """Who decided: ``terminal``, ``page`` (the dashboard), ``timeout`` (nobody answered in
    time), ``shutdown`` (the dashboard stopped), ``stop`` (the run was stopped on the
    dashboard), ``cancelled`` (the run was cancelled while the terminal's question waited),
    ``nobody`` (no one to ask: refused) or ``approver`` (any other)."""
    reason: str = ""
    """With a no: the words the person gave with it (the terminal's ``n WORDS``, the
    dashboard's text box), which the model reads in the refusal; ``""`` when none."""


class HookRan(Event, type="hook_ran"):
    """One of the user's hooks ran (``[hooks]`` in the user's config, ``localhand.hooks``)."""

    hook: str
    """Its kind: ``pre_tool``, ``post_tool``, ``post_edit`` or ``stop``."""
    command: str
    """The command as it ran, ``{path}`` and ``{tool}`` filled in."""
    exit_code: int | None
    """None when it timed out or could not run."""
    duration_ms: int
    blocked: bool = False
    """A ``pre_tool`` hook that exited 2: the call did not run."""
    timed_out: bool = False
    output_summary: str = ""
    """Its output (stdout, then stderr), cut at ``SUMMARY_CHARS``."""
    tool_name: str | None = None
    """The call it ran for; None for a ``stop`` hook."""


class SkillLoaded(Event, type="skill_loaded"):
    """The model loaded a skill's instructions with ``read_skill`` (``localhand.skills``)."""

    name: str
    path: str  # its SKILL.md
    allowed_tools: tuple[str, ...] | None = None
    """The tools it allows from now on (its ``allowed-tools``); None: it restricts none."""


class DelegateStarted(Event, type="delegate_started"):
    """The model handed ``task`` to a helper (``localhand.run.delegate``): a task of its own,
    recorded as a run (``helper_run``; None unrecorded) linked to this one."""

    helper_task: str
    helper_run: str | None
    task: str


class DelegateFinished(Event, type="delegate_finished"):
    """The helper ended; its answer is the ``delegate`` call's result, its tokens the parent's."""

    helper_task: str
    helper_run: str | None
    termination_reason: str
    iterations: int
    tokens_in: int
    tokens_out: int


class Verification(Event, type="verification"):
    checks: list[dict[str, Any]]


class TaskFinished(Event, type="task_finished"):
    result: dict[str, Any]


class AnswerDelta(Event, type="answer_delta"):
    text: str
    """New text of the answer being streamed (the simple path), in order; several server
    chunks are coalesced into one event (see ``localhand.run.simple``)."""
    thinking: bool = False
    """True when the text is the model's thinking, which is not part of the answer."""


Subscriber = Callable[[Event], None]


class EventBus:
    """Delivers each event to every subscriber, in order, on the emitting thread.

    A subscriber that raises is reported on stderr-free terms: it is dropped from that
    delivery only, so one broken consumer (say, a closed dashboard socket) cannot stop a run.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self.errors: list[tuple[Subscriber, BaseException]] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def emit(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception as exc:  # a consumer's bug must not end the run
                self.errors.append((subscriber, exc))


_holds: ContextVar[list[Callable[[], None]] | None] = ContextVar("localhand_holds", default=None)


def hold(wait: Callable[[], None]) -> None:
    """For a subscriber that records the workspace as the run found it (the store's copy for
    replay) in the background: ``wait`` is called before the first tool may change anything
    (``localhand.evidence.baseline``); where no run collects holds, at once."""
    pending = _holds.get()
    if pending is None:
        wait()
    else:
        pending.append(wait)


def collect_holds(pending: list[Callable[[], None]]) -> Token[list[Callable[[], None]] | None]:
    """Holds made on this thread from now on go to ``pending`` (until the token is reset)."""
    return _holds.set(pending)


def release_holds(token: Token[list[Callable[[], None]] | None]) -> None:
    _holds.reset(token)


class EventLog:
    """A subscriber that keeps every event, for tests and for the Result's timeline."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, type_: str) -> list[Event]:
        return [event for event in self.events if event.type == type_]


SUMMARY_CHARS = 120
"""How long a summary in the timeline is (a tool call's result, a nudge's span)."""

ARGS_SUMMARY_CHARS = 200
"""How long a tool call's ``args_summary`` is: seed 001 cuts the arguments' JSON at 200."""


WORKSPACE = "<workspace>"
"""How a summary's workspace path is counted, and how ``replay`` writes it to compare."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize(text: str, limit: int = SUMMARY_CHARS, workspace: str = "") -> str:
    """One line, at most ``limit`` characters, for the timeline. Each ``workspace`` path in it
    counts as ``WORKSPACE`` and is never cut, so a summary is cut at the same place whatever
    the folder's length: a replay elsewhere reads the same once the path is written so."""
    flat = " ".join(text.split())
    pieces = flat.split(workspace) if workspace else [flat]
    if sum(map(len, pieces)) + (len(pieces) - 1) * len(WORKSPACE) <= limit:
        return flat
    kept, room = [], limit - 1
    for number, piece in enumerate(pieces):
        if number:
            kept.append(workspace)
            room -= len(WORKSPACE)
        kept.append(piece[: max(room, 0)])
        room -= len(piece)
        if room <= 0:
            break
    return "".join(kept) + "…"
