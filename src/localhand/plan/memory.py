"""Rolling memory of what the plan's steps did, for the brain to read when one fails.

At most ``STEP_LIMIT`` detailed entries. When ``SUMMARIZE_TRIGGER`` are held, the oldest
``SUMMARIZE_BATCH`` are condensed into one sentence by the model. The seed awaited that call
inside the executor, adding a model round trip every few steps; here it runs on a worker
thread and the entries stay readable, in full, until their sentence replaces them. If
condensing fails, the batch is dropped: a shorter memory beats a stalled plan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from localhand.models.base import ChatModel, ChatOptions
from localhand.parsing.thinking import split_thinking

STEP_LIMIT = 10
SUMMARIZE_TRIGGER = 5
SUMMARIZE_BATCH = 3
MAX_SUMMARIES = 5
"""Sentences kept; older ones go, so a long plan cannot grow the brain's prompt without end."""
OUTPUT_CHARS = 600
SUMMARY_CHARS = 400


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One run of one step, as the brain will read it."""

    step_id: str
    command: str
    ok: bool
    exit_code: int | None = None
    output_tail: str = ""
    note: str = ""

    def text(self) -> str:
        if self.ok:
            result = "ok"
        elif self.exit_code is None and self.note:
            result = "NOT RUN"
        else:
            result = f"FAILED (exit code {self.exit_code})"
        lines = [f"- step {self.step_id}: `{self.command}` -> {result}"]
        if self.note:
            lines.append(f"  note: {self.note}")
        tail = self.output_tail.strip()[-OUTPUT_CHARS:]
        if tail:
            lines.append("  output: " + tail.replace("\n", "\n  "))
        return "\n".join(lines)


Condenser = Callable[[Sequence[MemoryEntry]], str]
"""Turns entries into one sentence; may raise, and may be slow (it runs on a worker)."""


class RollingMemory:
    """Thread-safe: ``add`` is called by the executor, condensing finishes on a worker."""

    def __init__(self, condense: Condenser | None = None) -> None:
        self._condense = condense
        self._lock = threading.Lock()
        self._entries: list[MemoryEntry] = []
        self._summaries: list[str] = []
        self._worker: threading.Thread | None = None
        self._closed = False
        self.dropped = 0
        """Entries lost to the limit or to a failed condensing."""
        self.condense_failures = 0

    def add(self, entry: MemoryEntry) -> None:
        """Record a step's run; never waits for the model."""
        with self._lock:
            self._entries.append(entry)
            excess = len(self._entries) - STEP_LIMIT
            if excess > 0:  # condensing lags behind: keep the newest
                del self._entries[:excess]
                self.dropped += excess
            if self._should_condense():
                self._worker = threading.Thread(
                    target=self._condense_loop, name="plan-memory", daemon=True
                )
                self._worker.start()

    @property
    def entries(self) -> list[MemoryEntry]:
        with self._lock:
            return list(self._entries)

    @property
    def summaries(self) -> list[str]:
        with self._lock:
            return list(self._summaries)

    @property
    def condensing(self) -> bool:
        with self._lock:
            return self._worker is not None

    def to_text(self) -> str:
        """Summaries, then the detailed entries, oldest first."""
        with self._lock:
            summaries, entries = list(self._summaries), list(self._entries)
        parts = [f"Earlier: {sentence}" for sentence in summaries]
        parts += [entry.text() for entry in entries]
        return "\n".join(parts) if parts else "(no steps have run yet)"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until condensing in progress ends; True if nothing is left running."""
        with self._lock:
            worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return not self.condensing

    def close(self) -> None:
        """Start no more condensing (a finished plan needs no summary); nothing waits."""
        with self._lock:
            self._closed = True

    def _should_condense(self) -> bool:
        return (
            self._condense is not None
            and self._worker is None
            and not self._closed
            and len(self._entries) >= SUMMARIZE_TRIGGER
        )

    def _condense_loop(self) -> None:
        assert self._condense is not None
        while True:
            with self._lock:
                batch = self._entries[:SUMMARIZE_BATCH]
            try:
                sentence = _one_sentence(self._condense(batch))
            except Exception:  # any failure: drop the batch, as the seed does
                sentence = ""
            with self._lock:
                self._entries = [e for e in self._entries if not any(e is b for b in batch)]
                if sentence:
                    self._summaries = [*self._summaries, sentence][-MAX_SUMMARIES:]
                else:
                    self.condense_failures += 1
                    self.dropped += len(batch)
                # Steps may have run meanwhile: catch up before the worker ends.
                if self._closed or len(self._entries) < SUMMARIZE_TRIGGER:
                    self._worker = None
                    return


def _one_sentence(text: str) -> str:
    visible, _ = split_thinking(text or "")
    flat = " ".join(visible.split())
    return flat[:SUMMARY_CHARS]


CONDENSE_PROMPT = (
    "You summarise the history of a running plan of shell commands. Reply with ONE short "
    "sentence saying what these steps did and what was learned (what failed and why). "
    "No preamble, no list."
)


def model_condenser(model: ChatModel) -> Condenser:
    """A condenser that asks ``model`` for the sentence."""

    def condense(entries: Sequence[MemoryEntry]) -> str:
        history = "\n".join(entry.text() for entry in entries)
        reply = model.chat(
            [
                {"role": "system", "content": CONDENSE_PROMPT},
                {"role": "user", "content": history},
            ],
            options=ChatOptions(),
        )
        sentence = _one_sentence(reply.content)
        if not sentence:
            raise ValueError("the model returned an empty summary")
        return sentence

    return condense
