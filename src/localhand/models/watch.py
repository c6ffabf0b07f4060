"""Watching a reply as it streams, to stop one that loops (``--watch-replies``).

Small models fall into loops inside a reply: the same sentence, line or call, over and over,
until the reply ceiling or the context window ends it, minutes later. Read as a stream, such a
reply shows itself within a few seconds: its latest text is one span repeated. This module
reads the tool loop's reply through the backend's ``stream_reply``, hands out progress (tokens
so far, tokens a second) for the live view, and closes the stream as soon as the reply loops;
closing the connection stops Ollama and llama-server generating. The reply it returns is what
the server had sent by then, marked ``done_reason: length`` like any reply cut before its end,
so the loop never runs a call in it and nudges the model instead.

The detector (:class:`LoopDetector`) looks at the last ``window`` characters of each channel
(answer, thinking, a call's arguments) every ``every`` new characters, and asks for the longest
suffix that is periodic: the prefix function of the reversed window gives, in one pass, the
smallest period ``p`` of every suffix of length ``m`` (``m - pi[m - 1]``). The reply loops when
some suffix repeats its period at least ``min_repeats`` times over at least ``min_run``
characters: a tight loop (``"0000..."``, a blank line, a short phrase) is caught after
``min_run`` characters, a long one (a paragraph, a whole call) after ``min_repeats`` copies, up
to a period of ``window / min_repeats``. Each check costs ``O(window)``, and there is one every
``every`` characters, so watching a reply of ``n`` characters costs ``O(n * window / every)``:
linear in the reply, about 32 steps a character with the defaults.

What it will not catch: a loop whose copies differ (a counter that goes up, a path that
changes); a loop inside a call that a server only sends whole (Ollama). The reply ceiling
bounds those. What it may stop that was not a loop: ``min_run`` characters of exactly
repeated text, such as a file of identical lines; the model is then asked to do it another way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from localhand.events import clip
from localhand.models.base import ChatOptions, StreamChunk, Tools
from localhand.models.tokens import estimate_prompt_tokens
from localhand.types import Message, Reply, Usage

__all__ = ["Loop", "LoopDetector", "Progress", "Watched", "watch_reply"]


@dataclass(frozen=True, slots=True)
class Loop:
    """A reply found looping: in which channel, what it repeated, over how many characters."""

    channel: str
    """``content``, ``thinking`` or ``arguments`` (a call's, as the server streamed them)."""
    span: str
    """One copy of what repeats."""
    run: int
    """Characters at the end of the channel that are copies of ``span``."""

    @property
    def repeats(self) -> float:
        return self.run / len(self.span)


class LoopDetector:
    """Whether a text fed to it piece by piece has fallen into a loop (see the module doc).

    Args:
        window: characters looked at; the longest period caught is ``window // min_repeats``.
        min_run: characters a loop must cover before it counts (a short period's bar).
        min_repeats: copies a loop must show (a long period's bar).
        every: new characters between two checks.
    """

    def __init__(
        self, window: int = 4096, min_run: int = 512, min_repeats: int = 4, every: int = 128
    ) -> None:
        if not 0 < min_run <= window or min_repeats < 2 or every < 1:
            raise ValueError("need 0 < min_run <= window, min_repeats >= 2, every >= 1")
        self.window, self.min_run = window, min_run
        self.min_repeats, self.every = min_repeats, every
        self._tail = ""
        self._unchecked = 0

    def feed(self, text: str) -> Loop | None:
        """Add ``text``; the loop it completes, if a check falls due and finds one."""
        if not text:
            return None
        self._tail = (self._tail + text)[-self.window :]
        self._unchecked += len(text)
        if self._unchecked < self.every:
            return None
        self._unchecked = 0
        return self.check()

    def check(self) -> Loop | None:
        """Look now: the longest looping suffix of the window, or None."""
        tail = self._tail
        if len(tail) < self.min_run:
            return None
        period, run = longest_periodic_suffix(tail, self.min_repeats, self.min_run)
        if not run:
            return None
        return Loop("", readable(tail[len(tail) - period :]), run)


def readable(span: str) -> str:
    """The copy of a repeating ``span`` to show: the same cycle, rotated to start where a
    sentence or a word does (a suffix's period starts wherever the text happened to end)."""
    starts = [i for i in range(len(span)) if span[i - 1].isspace() and not span[i].isspace()]
    sentences = [i for i in starts if span[i - 2] in ".!?:;\n"]
    start = (sentences or starts or [0])[0]
    return span[start:] + span[:start]


def longest_periodic_suffix(text: str, min_repeats: int, min_run: int) -> tuple[int, int]:
    """``(period, length)`` of the longest suffix of ``text`` that is at least ``min_run``
    characters long and ``min_repeats`` copies of its smallest period; ``(0, 0)`` if none.

    One pass of the prefix function over ``text`` reversed: for the reversed prefix of length
    ``m`` (the suffix of length ``m``), ``pi[m - 1]`` is its longest border, so its smallest
    period is ``m - pi[m - 1]``. ``O(len(text))``."""
    reverse = text[::-1]
    pi = [0] * len(reverse)
    best = (0, 0)
    for i in range(1, len(reverse)):
        k = pi[i - 1]
        while k and reverse[i] != reverse[k]:
            k = pi[k - 1]
        if reverse[i] == reverse[k]:
            k += 1
        pi[i] = k
        m = i + 1
        period = m - k
        if m >= min_run and m >= min_repeats * period:
            best = (period, m)
    return best


@dataclass(frozen=True, slots=True)
class Progress:
    """How a reply is coming along, for the live view."""

    elapsed_s: float
    """Since the request was sent."""
    tokens: int
    """Deltas received: servers stream about one token each."""
    tokens_per_s: float | None
    """Since the first token (so the prompt's evaluation is left out); None before two."""


@dataclass(frozen=True, slots=True)
class Watched:
    """The reply, and the loop it was stopped for (None when it ended on its own)."""

    reply: Reply
    loop: Loop | None
    tokens: int
    elapsed_s: float
    thought: int | None = None
    """Thinking tokens when the reply was stopped for passing the think budget, else None."""

    def stopped(self) -> str:
        """What was stopped and why, for a warning a person reads."""
        if self.loop is None:
            return ""
        span = clip(json.dumps(self.loop.span, ensure_ascii=False), 60)
        return (
            f"the reply kept repeating {span} ({self.loop.repeats:.0f} times in its "
            f"{self.loop.channel}): stopped it after {self.tokens} tokens and "
            f"{self.elapsed_s:.1f} s; nothing in it is run"
        )


ReplyStream = Callable[[Sequence[Message], Tools, ChatOptions | None], Iterator[StreamChunk]]


def watch_reply(
    stream_reply: ReplyStream,
    messages: Sequence[Message],
    tools: Tools,
    options: ChatOptions | None,
    *,
    model_name: str,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every_s: float = 1.0,
    detector: Callable[[], LoopDetector] = LoopDetector,
    clock: Callable[[], float] = time.monotonic,
    think_budget: int | None = None,
) -> Watched:
    """Read the reply from ``stream_reply`` (a backend's), stopping it if it loops, or if it
    thinks for more than ``think_budget`` tokens (thinking deltas: servers stream about one
    token each).

    ``on_progress`` gets a :class:`Progress` at most every ``progress_every_s`` seconds. A
    reply stopped is closed at once (its connection with it) and returned as far as it came,
    with ``done_reason`` ``length``, no tool calls, and the prompt's tokens estimated (the
    server's count comes only with the end the reply never reached)."""
    started = clock()
    first: float | None = None
    last_progress = started
    detectors = {"content": detector(), "thinking": detector(), "arguments": detector()}
    content: list[str] = []
    thinking: list[str] = []
    tokens = thought = 0
    chunks = stream_reply(messages, tools, options)

    def cut() -> Reply:
        usage = Usage(estimate_prompt_tokens(messages, tools), tokens)
        text, thoughts = "".join(content), "".join(thinking)
        return Reply(text, thoughts, usage=usage, done_reason="length", model=model_name)

    try:
        for chunk in chunks:
            now = clock()
            if chunk.done:
                reply = chunk.reply or Reply("".join(content), "".join(thinking))
                return Watched(reply, None, tokens, now - started)
            tokens += 1
            first = first if first is not None else now
            content.append(chunk.content)
            thinking.append(chunk.thinking)
            thought += bool(chunk.thinking)
            if think_budget is not None and thought > think_budget:
                return Watched(cut(), None, tokens, now - started, thought)
            for channel, text in (
                ("content", chunk.content),
                ("thinking", chunk.thinking),
                ("arguments", chunk.arguments),
            ):
                loop = detectors[channel].feed(text)
                if loop is not None:
                    found = Loop(channel, loop.span, loop.run)
                    return Watched(cut(), found, tokens, now - started)
            if on_progress is not None and now - last_progress >= progress_every_s:
                last_progress = now
                rate = (tokens - 1) / (now - first) if tokens > 1 and now > first else None
                on_progress(Progress(now - started, tokens, rate))
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # a looping reply: the connection goes, and the server stops
    raise AssertionError("a reply stream must end with a done chunk")  # pragma: no cover
