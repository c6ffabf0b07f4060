"""A deterministic model that replays scripted replies: for tests, replay and demos."""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from localhand.models.base import BaseChatModel, ChatOptions, StreamChunk, Tools
from localhand.types import Message, Reply, ToolCall, Usage


@dataclass(frozen=True, slots=True)
class Streamed:
    """A scripted answer that ``stream`` hands out piece by piece, as a server would.

    A piece is text (a content delta), a ``StreamChunk`` (say, a thinking delta), or an
    exception raised at that point of the stream: a ``BadResponse`` for a connection dropped
    mid-answer, ``KeyboardInterrupt`` for Ctrl-C. ``chat`` gets the joined text (or the first
    exception)."""

    pieces: Sequence[str | StreamChunk | BaseException]
    done_reason: str = "stop"
    delay: float = 0.0
    """Seconds to wait before each piece after the first: a slow model."""

    def reply(self) -> Reply:
        chunks = []
        for piece in self.pieces:
            if isinstance(piece, BaseException):
                raise piece
            chunks.append(piece if isinstance(piece, StreamChunk) else StreamChunk(content=piece))
        return Reply(
            content="".join(c.content for c in chunks),
            thinking="".join(c.thinking for c in chunks),
            done_reason=self.done_reason,
        )


Step = (
    Reply | str | dict[str, Any] | Streamed | BaseException | Callable[[Sequence[Message]], Reply]
)
"""One scripted turn: a Reply, plain text (a final answer), an Ollama-style assistant message
dict (``content``/``thinking``/``tool_calls``), a :class:`Streamed` answer, an exception to
raise, or a function of the messages that returns a Reply."""


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """What the scripted model was asked, kept so tests can assert on it."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    options: ChatOptions | None


def reply_from_message(message: dict[str, Any], usage: Usage | None = None) -> Reply:
    """Build a Reply from an Ollama-style assistant message dict, keeping native calls as sent."""
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function", raw)
        calls.append(
            ToolCall(function.get("name", ""), function.get("arguments") or {}, raw.get("id"))
        )
    return Reply(
        content=message.get("content") or "",
        thinking=message.get("thinking") or "",
        tool_calls=tuple(calls),
        usage=usage or Usage(),
        done_reason=message.get("done_reason", "stop"),
    )


def call(name: str, /, **arguments: Any) -> Reply:
    """Shorthand for a reply that makes one native tool call."""
    return Reply(tool_calls=(ToolCall(name, arguments),), done_reason="stop")


class ScriptedModel(BaseChatModel):
    """Replays ``steps`` in order, one per ``chat`` or ``stream`` call, and records every call
    it received. ``stream`` splits a step's text into word-sized deltas (a :class:`Streamed`
    step gives its own pieces), so streaming code is tested without a server.

    Token usage is estimated from the text (about four characters a token) unless a step
    carries its own, so budget and accounting logic sees realistic numbers.
    """

    context_limit: int | None = None  # a test sets the window it wants the loop to see

    def __init__(self, steps: Iterable[Step], *, name: str = "scripted") -> None:
        self._steps = list(steps)
        self._name = name
        self.calls: list[RecordedCall] = []

    @property
    def remaining(self) -> int:
        return len(self._steps) - len(self.calls)

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        index = len(self.calls)
        self.calls.append(
            RecordedCall(copy.deepcopy(list(messages)), list(tools) if tools else None, options)
        )
        if index >= len(self._steps):
            raise AssertionError(f"ScriptedModel ran out of replies after {len(self._steps)} calls")
        step = self._steps[index]
        if isinstance(step, BaseException):
            raise step
        reply = step(messages) if callable(step) else step
        if isinstance(reply, Streamed):
            reply = reply.reply()
        if isinstance(reply, str):
            reply = Reply(content=reply, done_reason="stop")
        elif isinstance(reply, dict):
            reply = reply_from_message(reply)
        if reply.usage == Usage():
            reply = _with_estimated_usage(reply, messages)
        return reply

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """The next step as a stream: deltas, then a final chunk with usage and done_reason."""
        index = len(self.calls)
        step = self._steps[index] if index < len(self._steps) else None
        if not isinstance(step, Streamed):
            # Through chat(), so a subclass's checks (replay's "ran out") apply here too.
            reply = self.chat(messages, None, options)
            yield from _deltas(reply.thinking, thinking=True)
            yield from _deltas(reply.content, thinking=False)
            yield StreamChunk(
                done=True, usage=reply.usage, done_reason=reply.done_reason, model=self._name
            )
            return
        self.calls.append(RecordedCall(copy.deepcopy(list(messages)), None, options))
        for number, piece in enumerate(step.pieces):
            if number and step.delay:
                time.sleep(step.delay)
            if isinstance(piece, BaseException):
                raise piece
            yield piece if isinstance(piece, StreamChunk) else StreamChunk(content=piece)
        usage = _with_estimated_usage(step.reply(), messages).usage
        yield StreamChunk(done=True, usage=usage, done_reason=step.done_reason, model=self._name)

    def assert_exhausted(self) -> None:
        """Fail if some scripted replies were never asked for."""
        if self.remaining:
            raise AssertionError(f"ScriptedModel has {self.remaining} unused replies")


def _with_estimated_usage(reply: Reply, messages: Sequence[Message]) -> Reply:
    prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
    reply_chars = len(reply.content) + sum(len(c.canonical()) for c in reply.tool_calls)
    return replace(reply, usage=Usage(max(1, prompt_chars // 4), max(1, reply_chars // 4)))


def _deltas(text: str, *, thinking: bool) -> Iterator[StreamChunk]:
    """Word-sized pieces, as servers stream them (a token is often a word and its space)."""
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield StreamChunk(thinking=piece) if thinking else StreamChunk(content=piece)
