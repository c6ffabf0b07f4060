"""The ``delegate`` tool: a helper forked from the parent's conversation, which reads and
searches in a conversation of its own and hands back only its answer (docs/delegate.md).

Its first request is the parent's last one as sent (messages and tools, byte for byte: the
server's cached prefix), the parent's reply that called ``delegate``, and one user message with
the task; every call but a read is refused, ``delegate`` too. Its limits are a share of the
parent's, its tokens the parent's; it shares the parent's model, slot and cancel switch."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from localhand.errors import ToolError
from localhand.events import DelegateFinished, DelegateStarted, EventBus, TaskFinished
from localhand.evidence.changes import READ_ONLY_TOOLS
from localhand.models.base import ChatModel
from localhand.prompt.instructions import capped
from localhand.run.agent import ToolLoop
from localhand.run.agent_config import Conversation
from localhand.run.guardrails import Limits
from localhand.tools.registry import Tool, ToolRegistry, WrappedRegistry
from localhand.types import Message, ToolCall, ToolResult

ANSWER_TOKENS = 4000
"""Tokens of the helper's answer that come back, at most (about what run_command keeps)."""
INSTRUCTION = (
    "{task}\n\n[You are now a helper for the conversation above: do this task by reading and "
    "searching (read_file, list_directory, search_files and read_skill work; any other call is "
    "refused), then reply with your answer alone, complete but short: only it goes back.]"
)
REFUSED = (
    "Not run: a helper only reads (read_file, list_directory, search_files, read_skill). "
    "Use those, or give your answer."
)
OpenRun = Callable[[str], tuple[EventBus, "str | None"]]
"""Given a helper's task id: the bus its events go to, and its run's id where it is recorded."""


class Delegation:
    """One run's ``delegate`` tool; ``parent`` is the loop it serves, set once it is built."""

    def __init__(self, share: float, open_run: OpenRun | None = None) -> None:
        self.share = share
        self.open_run: OpenRun = open_run or (lambda _: (EventBus(), None))
        self.parent: ToolLoop | None = None
        self.helpers = 0

    def tools(self) -> list[Tool]:
        """``delegate``, unless the share is 0 (switched off)."""
        return [Tool.from_function(self.delegate)] if self.share > 0 else []

    def delegate(self, task: str) -> ToolResult:
        """Have a helper read and search in its own conversation and return only its answer:
        what it reads stays out of yours.

        Args:
            task: What to find out.
        """
        parent = self.parent
        if parent is None:
            raise ToolError("delegate is not set up in this run; do the task yourself")
        limits = self.limits(parent)
        self.helpers += 1
        helper_id = f"{parent.task_id}-helper{self.helpers}"
        bus, run_id = self.open_run(helper_id)
        ids: dict[str, Any] = dict(task_id=parent.task_id, helper_task=helper_id, helper_run=run_id)
        parent.emit(DelegateStarted(**ids, task=task))
        sent = parent._definitions  # as the loop sends them (sized to its window): the same bytes
        helper = _Helper(
            parent.model,
            parent.workspace,
            parent.config,
            tools=_ReadOnly(parent.tools, sent),
            limits=limits,
            checks=(),
            bus=bus,
            task_id=helper_id,
            history=forked(parent.messages),
            cancellation=parent.cancellation,  # the parent's Stop stops the helper too
        )
        result = helper.play(INSTRUCTION.format(task=task)).settle([])
        bus.emit(TaskFinished(task_id=helper_id, result=result.to_dict()))
        state = parent.state  # the helper's tokens are the parent's: its budget, its totals
        state.tokens_in += result.tokens_in
        state.tokens_out += result.tokens_out
        state.cost += result.cost or 0.0
        reason = result.termination_reason
        parent.emit(
            DelegateFinished(
                **ids,
                termination_reason=reason,
                iterations=result.iterations_used,
                tokens_in=result.tokens_in,
                tokens_out=result.tokens_out,
            )
        )
        if reason == "final_answer":
            return ToolResult(capped(result.output, ANSWER_TOKENS))
        said = result.output or "nothing"
        stopped = f"The helper stopped ({reason}) before it answered. It last said: {said}"
        return ToolResult(capped(stopped, ANSWER_TOKENS), ok=False)

    def limits(self, parent: ToolLoop) -> Limits:
        """The helper's limits: ``share`` of the parent's iterations and token budget (within
        what the parent has left of it), and what is left of the parent's wall clock."""
        given, state = parent.limits, parent.state
        iterations, budget = given.max_iterations, given.token_budget
        if iterations is not None:
            iterations = max(1, math.ceil(iterations * self.share))
        if budget is not None:
            left = budget - state.tokens_in - state.tokens_out
            budget = min(left, math.ceil(budget * self.share))
            if budget <= 0:
                raise ToolError("the run's token budget has nothing left for a helper")
        wall_clock = given.remaining_s(state)
        return replace(
            given, max_iterations=iterations, token_budget=budget, wall_clock_s=wall_clock
        )


def forked(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The parent's conversation up to its reply that called ``delegate``: the messages its
    last request sent, then that reply (not the results of calls made before it in the same
    reply). Copies: the helper's window may shorten its own."""
    last = max(n for n, message in enumerate(messages) if message.get("role") == "assistant")
    return tuple(copy.deepcopy(list(messages[: last + 1])))


class _ReadOnly(WrappedRegistry):
    """The parent's tools, sent as the parent sent them, refusing every call but a read."""

    def __init__(self, inner: ToolRegistry, sent: list[dict[str, Any]]) -> None:
        super().__init__(inner)
        self.sent = sent

    def definitions(self) -> list[dict[str, Any]]:
        return self.sent

    def execute(self, call: ToolCall) -> ToolResult:
        if call.name in READ_ONLY_TOOLS:
            return self.inner.execute(call)
        return ToolResult(REFUSED, ok=False)

    def close(self) -> None:
        """Nothing: they are the parent's, which closes them when its run ends."""


class _Forked(Conversation):
    def plan_window(
        self, model: ChatModel, limits: Limits, definitions: list[dict[str, Any]]
    ) -> None:
        """Nothing: the window the parent planned stays (a new ``num_ctx`` would have Ollama
        reload the model, and lose the cached prefix the helper is forked to reuse)."""


class _Helper(ToolLoop):
    def _reset(self) -> None:
        super()._reset()
        talk = self.talk
        self.talk = _Forked(talk.window, talk.answer_check, talk.cut_off)
