"""The plan's model, under the task's limits as in run mode.

Every call (diagnosis, condensing, drafting) first checks the wall clock and the token
budget, is cut off at the deadline, books its tokens and emits ``model_request`` and
``model_reply``, so the store's ledger and the dashboard see plan mode like run mode.
Thread-safe, because memory condensing calls it from its worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from localhand.errors import ModelTimeout, WallClockTimeout
from localhand.events import Event, ModelReply, ModelRequest
from localhand.models.base import BaseChatModel, ChatModel, ChatOptions, Tools
from localhand.models.tokens import estimate_prompt_tokens
from localhand.run.guardrails import Limits, RunState
from localhand.types import Message, Reply

REPLY_ESTIMATE = 256
"""Tokens assumed for a reply when estimating a call's cost before it is made."""


@dataclass(eq=False)
class MeteredModel(BaseChatModel):
    """Wraps ``model``; ``state`` holds the tokens spent and the start of the wall clock."""

    model: ChatModel
    limits: Limits
    state: RunState
    emit: Callable[[Event], None]
    task_id: str
    calls: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.model.name

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        options = options or ChatOptions()
        with self._lock:
            self.limits.check_wall_clock(self.state)
            self.limits.check_budget(self.state, estimate(messages))
            self.calls += 1
            number = self.calls
        remaining = self.limits.remaining_s(self.state)
        if remaining is not None:
            cap = remaining if options.timeout is None else min(options.timeout, remaining)
            options = replace(options, timeout=max(cap, 0.1))
        self.emit(
            ModelRequest(
                task_id=self.task_id,
                iteration=number,
                messages=len(messages),
                constrained=options.format is not None,
            )
        )
        started = time.perf_counter()
        try:
            reply = self.model.chat(messages, tools, options)
        except ModelTimeout as exc:
            left = self.limits.remaining_s(self.state)
            if left is not None and left <= 1:
                raise WallClockTimeout(str(exc), guardrail="wall_clock") from exc
            raise
        with self._lock:
            self.state.tokens_in += reply.usage.prompt_tokens
            self.state.tokens_out += reply.usage.completion_tokens
            self.state.prefill.add(reply.usage)
        self.emit(ModelReply.of(reply, task_id=self.task_id, iteration=number, started=started))
        return reply


def estimate(messages: Sequence[Message]) -> int:
    """The prompt's tokens, roughly, plus a typical reply."""
    return estimate_prompt_tokens(messages) + REPLY_ESTIMATE
