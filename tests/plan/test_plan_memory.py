"""Rolling memory: condensed in the background, bounded, and dropped when condensing fails."""

from __future__ import annotations

import threading

from localhand.models import ScriptedModel
from localhand.plan import MemoryEntry, RollingMemory
from localhand.plan.memory import (
    STEP_LIMIT,
    SUMMARIZE_BATCH,
    SUMMARIZE_TRIGGER,
    model_condenser,
)


def entry(n: int, ok: bool = True) -> MemoryEntry:
    return MemoryEntry(f"s{n}", f"echo {n}", ok, 0 if ok else 1, f"output {n}")


def test_the_seed_numbers() -> None:
    assert (STEP_LIMIT, SUMMARIZE_TRIGGER, SUMMARIZE_BATCH) == (10, 5, 3)


def test_at_five_entries_the_oldest_three_become_one_sentence() -> None:
    seen: list[list[str]] = []

    def condense(entries):
        seen.append([e.step_id for e in entries])
        return "Steps 0 to 2 echoed numbers."

    memory = RollingMemory(condense)
    for n in range(SUMMARIZE_TRIGGER - 1):
        memory.add(entry(n))
    assert not memory.condensing and not seen
    memory.add(entry(4))
    assert memory.wait(5)
    assert seen == [["s0", "s1", "s2"]]
    assert memory.summaries == ["Steps 0 to 2 echoed numbers."]
    assert [e.step_id for e in memory.entries] == ["s3", "s4"]
    text = memory.to_text()
    assert text.startswith("Earlier: Steps 0 to 2 echoed numbers.")
    assert "echo 4" in text and "echo 0" not in text


def test_condensing_does_not_block_adding_and_entries_stay_readable_meanwhile() -> None:
    release = threading.Event()
    started = threading.Event()

    def slow(entries):
        started.set()
        release.wait(5)
        return "condensed"

    memory = RollingMemory(slow)
    for n in range(5):
        memory.add(entry(n))
    assert started.wait(5)
    memory.add(entry(5))  # returns at once although the condenser is still waiting
    assert memory.condensing
    assert "echo 0" in memory.to_text()  # not yet replaced: still visible in full
    release.set()
    assert memory.wait(5)
    assert memory.summaries == ["condensed"]
    assert [e.step_id for e in memory.entries] == ["s3", "s4", "s5"]


def test_when_condensing_fails_the_oldest_entries_are_dropped() -> None:
    def broken(entries):
        raise RuntimeError("model down")

    memory = RollingMemory(broken)
    for n in range(5):
        memory.add(entry(n))
    assert memory.wait(5)
    assert memory.summaries == []
    assert [e.step_id for e in memory.entries] == ["s3", "s4"]
    assert (memory.dropped, memory.condense_failures) == (3, 1)


def test_without_a_condenser_at_most_ten_entries_are_kept() -> None:
    memory = RollingMemory(None)
    for n in range(13):
        memory.add(entry(n))
    assert len(memory.entries) == STEP_LIMIT
    assert memory.entries[0].step_id == "s3"
    assert memory.dropped == 3


def test_the_model_condenser_asks_for_one_sentence() -> None:
    model = ScriptedModel(["<think>hmm</think>The build failed twice, then passed.\n"])
    memory = RollingMemory(model_condenser(model))
    for n in range(5):
        memory.add(entry(n, ok=n > 1))
    assert memory.wait(5)
    assert memory.summaries == ["The build failed twice, then passed."]
    prompt = model.calls[0].messages[-1]["content"]
    assert "echo 0" in prompt and "echo 2" in prompt and "echo 3" not in prompt


def test_a_closed_memory_starts_no_condensing() -> None:
    calls: list[int] = []
    memory = RollingMemory(lambda entries: calls.append(1) or "x")
    memory.close()
    for n in range(6):
        memory.add(entry(n))
    assert not memory.condensing and calls == []
