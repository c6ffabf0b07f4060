"""The values that flow through localhand: calls, replies, results.

Conversation messages stay plain dicts in Ollama's shape (``role``, ``content``,
optional ``thinking``, ``tool_calls``, ``tool_name``): that is what goes on the
wire, so the history can be sent unchanged and the server's prompt cache stays warm.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, Self, TypeVar

_N = TypeVar("_N", int, float)
Message = dict[str, Any]
"""One chat message in Ollama's shape."""

Status = Literal["pass", "partial_pass", "fail", "error", "unverified"]
"""How a run ended (docs/results.md, "The Result"). ``unverified``: a tool-loop run that ended
with a final answer but had no checks, so nothing shows its work is right; it never counts as a
pass."""
TerminationReason = Literal[
    "final_answer",
    "max_iterations",
    "repetition",
    "stall",
    "nudge_exhausted",
    "timeout",
    "budget",
    "cancelled",
    "error",
]

TIER_ITERATIONS: dict[str, int] = {"trivial": 5, "standard": 10, "complex": 20}
"""Iteration limits by complexity tier (seed 002)."""


class Closing:
    """What a ``with`` block closes when it ends: ``__enter__`` gives the object itself and
    ``__exit__`` calls its ``close`` (a client, a model, the tools, a state file)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A request from the model to run one tool."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def canonical(self) -> str:
        """The call as canonical JSON, for comparing calls across turns."""
        return json.dumps([self.name, self.arguments], sort_keys=True, default=str)

    def to_wire(self) -> dict[str, Any]:
        """The call as it appears in an Ollama assistant message."""
        function: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        return {"function": function} if self.id is None else {"id": self.id, "function": function}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, as text the model reads, and whether it succeeded."""

    content: str
    ok: bool = True
    progress: bool = False
    """Something new came though no file changed (a ``wait`` that brought output): the
    loop's stall and repetition checks count it as progress."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts the server reported for one request, and what it said of its prompt cache.

    The cache figures are the server's own (llama-server's ``timings``, ``usage.
    prompt_tokens_details.cached_tokens``, Ollama's ``prompt_eval_cached_count`` and durations;
    ``localhand.models._served_figures``); ``None`` where it said nothing, never a guess."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefilled_tokens: int | None = None
    """Prompt tokens the server processed for this request: the part it did not reuse."""
    cached_tokens: int | None = None
    """Prompt tokens the server reused from its cache (a warm prefix is not prefilled again)."""
    prefill_ms: float | None = None
    """Milliseconds the server spent prefilling ``prefilled_tokens``."""
    decode_ms: float | None = None
    """Milliseconds the server spent generating ``completion_tokens``."""
    draft_tokens: int | None = None
    draft_accepted: int | None = None
    """Speculative decoding's drafted tokens, and those accepted (``timings.draft_n``...)."""

    def __add__(self, other: Usage) -> Usage:
        """Each figure summed: unknown (None) only where both requests left it unknown."""
        sums: dict[str, Any] = {
            f.name: _plus(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
        }
        return Usage(**sums)


def lean(prefill: dict[str, Any]) -> dict[str, Any]:
    """``Prefill`` as JSON: its added keys (a restore, speculative decoding) only when said."""
    added = ("restored_tokens", "draft_tokens", "draft_accepted", "draft_acceptance")
    return {key: value for key, value in prefill.items() if value is not None or key not in added}


def _plus(a: _N | None, b: _N | None) -> _N | None:
    """A sum of figures that may be unknown: unknown only when both are."""
    if a is None:
        return b
    return a if b is None else a + b


@dataclass(slots=True)
class Prefill:
    """What the model server itself said about prompt processing over a run (docs/results.md,
    "The Result"): the cost that matters on a local machine, and whether its prompt cache held."""

    requests: int = 0
    """Model requests the run made."""
    reported: int = 0
    """Of those, the ones whose server said what it prefilled and reused; the figures below
    add up these only, and are ``None`` (unknown) when no request said."""
    tokens_prefilled: int | None = None
    """Prompt tokens the server processed."""
    tokens_reused: int | None = None
    """Prompt tokens it took from its cache instead."""
    prefill_s: float | None = None
    """Seconds it spent prefilling (where it said)."""
    restored_tokens: int | None = None
    """Tokens of the continued run's cache restored into the slot (``--slot-save-path``)."""
    draft_tokens: int | None = None
    draft_accepted: int | None = None
    draft_acceptance: float | None = None
    """Speculative decoding's (``--spec-type``) drafted tokens, those accepted, their share."""

    def add(self, usage: Usage) -> None:
        """Count one request's ``usage``."""
        self.requests += 1
        if usage.draft_tokens is not None and usage.draft_accepted is not None:
            self.draft_tokens = (self.draft_tokens or 0) + usage.draft_tokens
            self.draft_accepted = (self.draft_accepted or 0) + usage.draft_accepted
            self.draft_acceptance = round(self.draft_accepted / max(1, self.draft_tokens), 4)
        if usage.prefilled_tokens is not None and usage.cached_tokens is not None:
            self.reported += 1
            self.tokens_prefilled = (self.tokens_prefilled or 0) + usage.prefilled_tokens
            self.tokens_reused = (self.tokens_reused or 0) + usage.cached_tokens
        if usage.prefill_ms is not None:
            self.prefill_s = round((self.prefill_s or 0.0) + usage.prefill_ms / 1000, 3)


@dataclass(frozen=True, slots=True)
class Reply:
    """One assistant reply, normalised from whichever backend produced it."""

    content: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    done_reason: str | None = None
    """``stop``, ``length`` (cut off at the token limit) or whatever the server said."""
    model: str = ""

    def to_message(self) -> Message:
        """The assistant message to append to the history, in Ollama's shape."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.thinking:
            message["thinking"] = self.thinking
        if self.tool_calls:
            message["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        return message


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one verification check."""

    name: str
    passed: bool
    output_tail: str = ""
    exit_code: int | None = None
    evidence: str | None = None
    """What the verdict rests on: ``report`` (a test runner's report, ``tests``), ``exit_code``
    (a command that ran no runner localhand reads), None for a check that runs no command."""
    tests: dict[str, Any] | None = None
    """With a report: ``collected_before`` (the tests the check collected on the workspace as
    it was), ``collected_after``, ``passed``, ``failed``, ``skipped`` and ``missing`` (tests
    from before that did not run and pass), see ``localhand.evidence.reports``."""


@dataclass(slots=True)
class Result:
    """What a run produced. ``to_dict`` gives the public JSON contract (see DESIGN.md)."""

    task_id: str
    status: Status
    output: str
    model_used: str
    tokens_in: int
    tokens_out: int
    termination_reason: TerminationReason
    iterations_used: int
    files_modified: list[str] = field(default_factory=list)
    check_files_changed: list[str] = field(default_factory=list)
    """The checks' own files (tests, the verify script, test configuration) the run created,
    changed or deleted: its checks ran against them as they were before the run, or did not
    count as passed where they could not (``localhand.evidence.checkguard``)."""
    sensitive_changes: list[str] = field(default_factory=list)
    """Changes ``files_modified`` leaves out or does not single out: code that runs later
    under ignored folders (``.venv`` start-up hooks and scripts, ``node_modules/.bin``,
    ``.git/hooks``, ``.git/config``) and files that instruct agents (``AGENTS.md``...)."""
    verification: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    completed: list[str] = field(default_factory=list)
    """Names of the checks that pass."""
    remaining: list[str] = field(default_factory=list)
    """Names of the checks that still fail: the work left to do."""
    follow_up_task: str | None = None
    """A task file that picks up what remains: ``localhand run --task-file FILE``."""
    cost: float | None = None
    """Money spent, only when a price per million tokens is configured."""
    routing: dict[str, Any] | None = None
    """Whether the task ran the tool loop or the simple path, and why."""
    git: dict[str, str] | None = None
    """In a git workspace: the commit of the state before the run, how to restore it, the diff."""
    suggested_check: str | None = None
    """For an ``unverified`` run: the command that would check the work, told from the
    project's files (``localhand.evidence.project_checks``; ``--verify auto`` runs it), or None
    when they do not say."""
    profile: dict[str, Any] | None = None
    """Which model-family profile applied (``localhand.profiles``): its name, thinking,
    sampling, history choices and think budget. None when no model was asked (a run that
    ended before, or a plan)."""
    prefill: Prefill = field(default_factory=Prefill)
    """The model server's own prefill and cache figures over the run (``Prefill``)."""
    sandbox: dict[str, Any] | None = None
    """How the run's commands were boxed (``Sandbox.report``): ``mode``, ``enforced`` (false:
    they ran unsandboxed), ``why`` not, and the ``limits`` in force. None where no sandbox
    was set up (a run that ended before)."""
    answer_json: Any = None
    """With ``--output-schema``: the final answer as JSON, validated against the schema
    (``localhand.session.structured``); None without one, or when the run gave no answer."""
    first_prompt_tokens: int | None = None
    """The first request's prompt tokens as the server counted them: the fixed cost of every
    request (system prompt, tools, task). None when no server said (added key, left out)."""
    adopted_check: str | None = None
    """Given no check, the project's check the model ran, which graded the run
    (``localhand.evidence.adopt``). None otherwise (added key, left out)."""
    jobs: list[dict[str, Any]] | None = None
    """The background commands the run started (``localhand.tools.jobs``): each one's
    number, command, how it ``ended`` and ``exit_code``. None where it started none (added
    key, left out)."""

    @classmethod
    def failed(
        cls, task_id: str, message: str, *, model: str = "", reason: TerminationReason = "error"
    ) -> Result:
        """The Result of a run that never started (bad input, cancelled before its loop, a
        crash in its prologue): the same from every way in (``localhand.session``)."""
        return cls(
            task_id=task_id,
            status="error",
            output="",
            model_used=model,
            tokens_in=0,
            tokens_out=0,
            termination_reason=reason,
            iterations_used=0,
            error=message,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for added in ("profile", "sandbox", "answer_json", "first_prompt_tokens", "adopted_check",
                      "jobs"):  # fmt: skip
            if data[added] is None:  # added keys, left out where the run has none (profile:
                del data[added]  # the tool loop's; sandbox: one set up; answer_json: a schema)
        data["prefill"] = lean(data["prefill"])
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)
