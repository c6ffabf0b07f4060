"""The simple path: one streamed answer, without tools, for tasks that change nothing.

A question about the code or a commit message to draft needs no loop: the task, the workspace
context and the named context files go to the model once, and its answer streams live as
``answer_delta`` events (the terminal writes them to stdout, the dashboard to the run view).
The run keeps the agent's contract: the same events around the answer (``task_started``,
``model_request``, ``model_reply``, then, once the session finishes it, ``verification`` and
``task_finished``) and the same Result.

How a simple run ends:

- ``final_answer``: the answer streamed to its end. If the model was cut off at its output
  limit (``done_reason`` ``length``) or said nothing, the answer is kept in ``output`` but is
  not a pass: a warning says so, ``remaining`` names what is missing (so a follow-up task
  asks for it), and the status is graded as for a forced stop (``partial_pass`` when checks
  pass, else ``fail``).
- ``timeout``: the task's wall clock (default 10 minutes) ran out mid-answer.
- ``cancelled``: Ctrl-C. No traceback; the Result is returned as for any other end.
- ``error``: the server failed (an ``{"error"}`` line mid-stream, a dropped connection, a
  server gone quiet past its idle timeout).
- ``budget``: the request would have gone over the task's or the day's token budget.

Whatever the end, the text that arrived is kept in ``output`` (it was already shown), the
checks run, and a stream that ended early has its tokens estimated from the text, since the
server sends its counts only with the last chunk.

Deltas are coalesced before they become events: the store writes each event as it happens,
and a server sends one per token. A delta is emitted when 50 ms have passed since the last
one or 200 characters are waiting, when the stream switches between thinking and answer, and
when it ends, however it ends. The first delta goes out at once, so the wait for the first
token is visible; a piece can wait for the next chunk at most, which for a steady stream is
one token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

from localhand.cancel import Cancellation
from localhand.errors import BadResponse, WallClockTimeout
from localhand.events import AnswerDelta, EventBus, ModelReply, ModelRequest
from localhand.evidence.verify import grade
from localhand.models.base import ChatModel, ChatOptions, PlainChatModel, StreamChunk, declared
from localhand.models.tokens import CHARS_PER_TOKEN, CODE_CHARS_PER_TOKEN, estimate_prompt_tokens
from localhand.prompt.instructions import DEFAULT_NAMES, with_instructions
from localhand.prompt.system import CONTEXT_FILES_CHARS, SIMPLE_SYSTEM_PROMPT, build_messages
from localhand.run.ledger import Ledger
from localhand.run.lifecycle import Ending, Outcome, Run
from localhand.run.routing import Route
from localhand.run.task import Task
from localhand.types import CheckResult, Message, Prefill, Reply, Result, Status, Usage

__all__ = ["DeltaCoalescer", "run_simple", "simple_messages"]

FLUSH_S = 0.05
FLUSH_CHARS = 200
REPLY_ESTIMATE = 512
"""Tokens an answer is assumed to cost when checking the budget before asking."""
TRUNCATED = "a complete answer (the model was cut off at its output-token limit)"
EMPTY = "an answer (the model's reply was empty)"


class DeltaCoalescer:
    """Joins a stream's deltas into fewer events (see the module docstring for when)."""

    def __init__(
        self,
        emit: Callable[[str, bool], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit, self._clock = emit, clock
        self._pending: list[str] = []
        self._size = 0
        self._thinking = False
        self._last = -math.inf

    def add(self, text: str, thinking: bool = False) -> None:
        if not text:
            return
        if self._pending and thinking != self._thinking:
            self.flush()  # thinking and answer never share an event
        self._thinking = thinking
        self._pending.append(text)
        self._size += len(text)
        if self._size >= FLUSH_CHARS or self._clock() - self._last >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        text, self._pending, self._size = "".join(self._pending), [], 0
        self._last = self._clock()
        self._emit(text, self._thinking)


def run_simple(
    model: ChatModel | PlainChatModel,
    task: Task,
    *,
    bus: EventBus | None = None,
    routing: Route | None = None,
    ledger: Ledger | None = None,
    cancellation: Cancellation | None = None,
    instruction_files: Sequence[str] = DEFAULT_NAMES,
    messages: Sequence[Message] | None = None,
) -> Outcome[Result]:
    """Answer ``task`` with one streamed reply; model errors end up in the Result. What
    happened comes back as an ``Outcome`` for the session to finish
    (``localhand.session.finish``: the checks, the Result, its announcement).

    The request is ``simple_messages``: the task, the workspace context, the context files and
    the trusted instruction file (``AGENTS.md``, or ``instruction_files``), as the agentic path
    sends them; ``messages`` when the caller built them (to keep the conversation).

    ``model`` streams when it has a ``stream`` method (every backend here does); otherwise its
    one ``chat`` reply is handed out as a single delta. ``ledger`` books the call and checks
    the daily budget. The Outcome's conversation is the request and the answer.
    """
    simple = _SimpleRun(model, task, bus or EventBus(), routing, ledger, cancellation)
    if messages is None:
        messages = simple_messages(task, simple.model, simple.life.warn, instruction_files)
    return simple.run(list(messages))


def simple_messages(
    task: Task,
    model: ChatModel | PlainChatModel,
    warn: Callable[[str], None],
    instruction_files: Sequence[str] = DEFAULT_NAMES,
) -> list[Message]:
    """The simple path's one request: its system prompt, the task, the workspace context and
    context files, then the trusted instruction file, which is read as the agentic path reads
    it (``run.instructions``: only when the user trusted that content)."""
    workspace = Path(task.workspace).resolve()
    messages = build_messages(
        task.description,
        workspace,
        SIMPLE_SYSTEM_PROMPT,
        task.context_files,
        context_chars=context_chars(declared(model)),
    )
    files, names = task.context_files, instruction_files
    return with_instructions(messages, workspace, warn, files=files, names=names)


class _SimpleRun:
    def __init__(
        self,
        model: ChatModel | PlainChatModel,
        task: Task,
        bus: EventBus,
        routing: Route | None,
        ledger: Ledger | None,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.model, self.task = declared(model), task
        self.routing, self.ledger = routing, ledger  # the bus is the Run's
        self.workspace = Path(task.workspace).resolve()
        self.limits = task.limits(agentic=False)
        self.life = Run(
            task.id,
            self.workspace,
            self.limits,
            bus,
            checks=task.checks,
            cancellation=cancellation,
        )
        self.state = self.life.state
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.final: StreamChunk | None = None
        self.usage = Usage()
        self.asked = False

    def run(self, messages: list[Message]) -> Outcome[Result]:
        self.life.start(
            self.task.description,
            self.model.name,
            max_iterations=1,
            routing=self.routing.to_dict() if self.routing else None,
        )
        ending = self.life.drive(
            lambda: self.ask(messages), done="final_answer", iteration=lambda: 1
        )
        said: Message = {"role": "assistant", "content": "".join(self.answer)}
        missing = self.incomplete(ending.reason, said["content"])  # warned before the checks
        settle = partial(self.settle, ending, missing)
        return Outcome(self.life, settle, [*messages, said], self.model)

    def ask(self, messages: list[Message]) -> None:
        cost = estimate_prompt_tokens(messages) + REPLY_ESTIMATE
        self.limits.check_budget(self.state, cost)
        if self.ledger is not None:
            self.ledger.check(cost)
        self.life.emit(ModelRequest(task_id=self.task.id, iteration=1, messages=len(messages)))
        self.asked = True
        started = time.perf_counter()
        deltas = DeltaCoalescer(self.emit_delta)
        # For a model that cannot stream, ``BaseChatModel.stream`` is its reply as one delta.
        options = ChatOptions(timeout=self.life.remaining_s())
        chunks = iter(self.model.stream(messages, options))
        try:
            with self.life.deadline_stops():
                self.read(chunks, deltas)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # a generator left mid-stream releases its connection now
            deltas.flush()
            self.account(messages)
        if self.final is None:
            raise BadResponse(f"{self.model.name}'s stream ended without its final chunk.")
        answer, thinking = "".join(self.answer), "".join(self.thinking)
        reply = Reply(answer, thinking, usage=self.usage, done_reason=self.final.done_reason)
        self.life.emit(ModelReply.of(reply, task_id=self.task.id, iteration=1, started=started))

    def read(self, chunks: Iterator[StreamChunk], deltas: DeltaCoalescer) -> None:
        """The answer and the thinking from the stream, as they come, up to its final chunk."""
        for chunk in chunks:
            self.check_wall_clock()
            self.life.check_cancelled()  # between chunks: Stop or Ctrl-C ends the answer here
            if chunk.done:
                self.final = chunk
                break
            if chunk.thinking:
                self.thinking.append(chunk.thinking)
                deltas.add(chunk.thinking, thinking=True)
            if chunk.content:
                self.answer.append(chunk.content)
                deltas.add(chunk.content)

    def check_wall_clock(self) -> None:
        """Backends stop at the deadline themselves; this catches a model that does not."""
        left = self.life.remaining_s()
        if left is not None and left <= 0:
            raise WallClockTimeout(
                f"the answer took longer than the task's {self.limits.wall_clock_s:g} s wall clock",
                guardrail="wall_clock",
            )

    def account(self, messages: Sequence[Message]) -> None:
        """The server's counts, or (a stream cut short) estimates: those tokens were spent."""
        if self.final is not None and self.final.usage is not None:
            self.usage = self.final.usage
        elif self.answer or self.thinking:
            chars = sum(map(len, self.answer)) + sum(map(len, self.thinking))
            self.usage = Usage(estimate_prompt_tokens(messages), max(1, chars // CHARS_PER_TOKEN))
        self.state.tokens_in = self.usage.prompt_tokens
        self.state.tokens_out = self.usage.completion_tokens
        self.state.prefill = Prefill()
        self.state.prefill.add(self.usage)
        if self.ledger is not None and self.usage != Usage():
            self.ledger.book(self.task.id, self.usage, self.model.name)

    def settle(self, ending: Ending, missing: list[str], results: list[CheckResult]) -> Result:
        """The Result of the answer (lacking ``missing``), given what the checks found."""
        reason, error, output = ending.reason, ending.error, "".join(self.answer)
        return Result(
            task_id=self.task.id,
            status=grade_answer(reason, results, error, complete=not missing),
            output=output,
            model_used=self.model.name,
            tokens_in=self.usage.prompt_tokens,
            tokens_out=self.usage.completion_tokens,
            prefill=self.state.prefill,
            termination_reason=reason,  # type: ignore[arg-type]
            iterations_used=1 if self.asked else 0,
            verification=results,
            error=error,
            duration_s=self.life.duration_s(),
            completed=[r.name for r in results if r.passed],
            remaining=[r.name for r in results if not r.passed] + missing,
            routing=self.routing.to_dict() if self.routing else None,
            cost=self.cost(),
        )

    def incomplete(self, reason: str, output: str) -> list[str]:
        """What a finished answer lacks, said once as a warning and kept in ``remaining``."""
        if reason != "final_answer" or self.final is None:
            return []
        if self.final.done_reason == "length":
            self.life.warn(
                "The answer was cut off at the model's output-token limit (done_reason "
                "'length'), so it is incomplete. Ask for less, or raise the model's limit "
                "(Ollama: options num_predict; llama.cpp: -n or max_tokens)."
            )
            return [TRUNCATED]
        if not output.strip():
            only_thought = " (it only thought)" if self.thinking else ""
            self.life.warn(f"The model's answer was empty{only_thought}.")
            return [EMPTY]
        return []

    def cost(self) -> float | None:
        if self.ledger is None or not self.ledger.priced:
            return None
        return round(self.ledger.cost(self.usage), 6)

    def emit_delta(self, text: str, thinking: bool) -> None:
        self.life.emit(AnswerDelta(task_id=self.task.id, text=text, thinking=thinking))


def grade_answer(
    reason: str, results: Sequence[CheckResult], error: str | None, *, complete: bool
) -> Status:
    """``verify.grade``, with an incomplete answer graded as a forced stop: never a pass."""
    status = grade(reason, results, error, answer_only=True)  # an answer, not a change
    if status == "pass" and not complete:
        return "partial_pass" if results else "fail"
    return status


def context_chars(model: ChatModel) -> int:
    """Characters of context files that fit: at most half the model's window, when known,
    leaving the rest for the system prompt, the task and the answer."""
    limit = model.context_limit
    if not isinstance(limit, int) or limit <= 0:
        return CONTEXT_FILES_CHARS
    return min(CONTEXT_FILES_CHARS, limit // 2 * CODE_CHARS_PER_TOKEN)
