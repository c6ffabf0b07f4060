"""What an ``Agent`` is set up with, as data: one ``AgentConfig`` instead of a long list of
constructor arguments, and one ``Conversation`` per run for what the loop keeps between turns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localhand.events import ModelStatus
from localhand.evidence.adopt import ran_command
from localhand.evidence.answer_check import AnswerCheck
from localhand.models.tokens import estimate_prompt_tokens
from localhand.prompt.context import ContextWindow, expected_tokens
from localhand.run.cache_reuse import CacheWatch
from localhand.run.guardrails import Limits, RunState
from localhand.run.nudges import CutOff

if TYPE_CHECKING:
    from localhand.cancel import Cancellation
    from localhand.events import Event, EventBus
    from localhand.evidence.verify import Check
    from localhand.models.base import ChatModel
    from localhand.profiles import Profile
    from localhand.run.ledger import Ledger
    from localhand.run.lifecycle import Ending
    from localhand.run.routing import Route
    from localhand.run.tiny.policy import TinyPolicy
    from localhand.tools import ToolRegistry
    from localhand.types import Message, ToolCall, ToolResult, Usage


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How an ``Agent`` runs its tasks; every field has a default."""

    tools: ToolRegistry | None = None
    """The tools the model may call (default: the built-in file and shell tools)."""
    limits: Limits = field(default_factory=Limits)
    checks: Sequence[Check] = ()
    """Grade the workspace when the run ends; a final answer is taken only when they pass."""
    bus: EventBus | None = None
    """Receives every event."""
    task_id: str | None = None
    require_action: bool = True
    """Nudge once when the model answers before using any tool (small models often do)."""
    system_prompt: str | None = None
    routing: Route | None = None
    ledger: Ledger | None = None
    """Books each call in the token ledger and checks the daily budget."""
    context_files: Sequence[str] = ()
    instruction_files: Sequence[str] = ("AGENTS.md",)
    """Files that instruct agents, read when trusted (``run.instructions``); () reads none."""
    skill_list: str = ""
    """The skills' list for the first message (``localhand.skills``), "" for none."""
    watch_replies: bool | None = None
    """Read each reply as a stream and stop one that loops (``localhand.models.watch``);
    ``None``: as the backend was set up (``--watch-replies``)."""
    profile: Profile | None = None
    """The model family's profile; ``None``: the backend's, else the one of its name."""
    think_budget: int | None = None
    """Thinking tokens a reply may spend; ``None``: the backend's, else the profile's (with a
    stream); 0: none."""
    cancellation: Cancellation | None = None
    """The run's cancel switch (``localhand.cancel``), when someone else holds it too."""
    history: Sequence[Message] = ()
    """An earlier run's conversation to carry on (``localhand.session.continuing``): sent
    unchanged, the task after it as one more user message, instead of a new system prompt."""
    tests_before: Mapping[str, Any] | None = None
    """The tests the checks collected at the start of that run's chain, reused as they were."""


@dataclass(slots=True)
class Conversation:
    """One run's conversation and what the loop keeps of it between turns; ``ToolLoop.play``
    starts a new one, so one Agent can run several tasks in turn."""

    window: ContextWindow
    answer_check: AnswerCheck
    cut_off: CutOff
    """What a cut-off reply's nudge says (its tokens, the loop the watcher stopped)."""
    messages: list[Message] = field(default_factory=list)
    state: RunState = field(default_factory=RunState)
    tools_used: int = 0
    asked_to_act: bool = False
    last_content: str = ""
    """The last thing the model said, for the output of a run something else stopped."""
    thought: int | None = None
    """Thinking tokens of the last reply, when it was stopped at the think budget."""
    first_prompt_tokens: int | None = None
    """The first request's prompt tokens as the server counted them (0: it did not say)."""

    policy: TinyPolicy | None = None
    """A tiny model's policy (``localhand.run.tiny``): its prompt, tools and reply schemas."""
    cache_watch: CacheWatch = field(default_factory=CacheWatch)
    """Whether the server's own figures show its prompt cache thrown away turn after turn."""

    def plan_window(
        self, model: ChatModel, limits: Limits, definitions: list[dict[str, Any]]
    ) -> None:
        """Ollama's ``num_ctx`` chosen for the run before its first request (see the backend):
        the first prompt and what the run's iterations may add, within its token budget."""
        if model.plans_context:
            prompt = self.estimate_prompt(definitions)
            model.plan_context(expected_tokens(prompt, limits.max_iterations, limits.token_budget))

    def count(self, usage: Usage, warn: Callable[[str], None], model: str = "") -> None:
        """Add one reply's tokens to the run's (and the server's prefill figures); the first
        request's prompt is kept apart. Warns once when the server's figures show the growing
        prefix is not reused (a sliding-window model without ``--swa-full``, ...)."""
        self.state.tokens_in += usage.prompt_tokens
        self.state.tokens_out += usage.completion_tokens
        self.state.prefill.add(usage)
        if self.first_prompt_tokens is None:  # 0: the server did not say
            self.first_prompt_tokens = usage.prompt_tokens
        if warning := self.cache_watch.observe(usage.prompt_tokens, usage.cached_tokens, model):
            warn(warning)

    def hold(
        self,
        policy: TinyPolicy | None,
        definitions: list[dict[str, Any]],
        emit: Callable[[Event], None],
        task_id: str,
    ) -> list[dict[str, Any]]:
        """Hold ``policy`` for the run: its prompt in place of the system turn, and the tools
        it offers (returned); the events say what the model is shown."""
        self.policy = policy
        if policy is None:
            return definitions
        self.messages = policy.messages(self.messages)
        emit(ModelStatus(task_id=task_id, message=policy.summary()))
        return policy.definitions

    def reply_schema(self, fmt: dict[str, Any] | None) -> dict[str, Any] | None:
        """The policy's schema for the next reply (none with a ``format`` of the loop's)."""
        return self.policy.schema() if self.policy is not None and fmt is None else None

    def observe(self, call: ToolCall, result: ToolResult) -> None:
        """A call and its result, as the model will see them: the policy learns from them."""
        if (command := ran_command(call, result)) is not None:
            self.state.commands.append(command)
        self.state.waited |= result.progress
        if self.policy is not None:
            self.policy.observe(call, result)

    def output(self, ending: Ending) -> str:
        """The Result's output: the final answer, or the last thing the model said before
        something else stopped the run (else what stopped it)."""
        if ending.guardrail:
            return self.last_content or f"Stopped: {ending.message}"
        if ending.stop is not None:  # a final answer, or a stop that says why in words
            return ending.message
        if ending.error is not None:
            return self.last_content
        return self.last_content or ending.message or "Cancelled by the user."

    def estimate_prompt(self, definitions: list[dict[str, Any]]) -> int:
        """The next request's prompt tokens, estimated (see ``localhand.models.tokens``)."""
        return estimate_prompt_tokens(self.messages, definitions)

    def estimate_cost(self, prompt: int) -> int:
        """Tokens the next request will likely cost: the ``prompt``'s, plus an average reply."""
        iterations = self.state.iteration
        reply = self.state.tokens_out // iterations if iterations else 256
        return prompt + reply

    def keep_within(self, limit: int | None, definitions: list[dict[str, Any]]) -> int:
        """Compact older tool results near the window ``limit``; the prompt's tokens after."""
        self.messages, used = self.window.keep(self.messages, definitions, limit)
        return used
