"""Guardrails: small declarative checks, run around every iteration, that end a run safely.

They sit outside the loop's logic (seed 000): the loop calls ``check_*`` at fixed points and
a tripped guardrail raises a ``StopRun`` subclass naming itself; the loop turns that into a
``guardrail`` event and a Result with the matching ``termination_reason``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from localhand.errors import (
    BudgetExceeded,
    MaxIterations,
    NudgeExhausted,
    Repetition,
    Stall,
    WallClockTimeout,
)
from localhand.events import clip
from localhand.nesting import depth
from localhand.types import TIER_ITERATIONS, Prefill, ToolCall


@dataclass(frozen=True, slots=True)
class Limits:
    """When a run must stop. ``None`` switches a check off."""

    max_iterations: int | None = TIER_ITERATIONS["standard"]
    """Model turns allowed (trivial 5, standard 10, complex 20 by default)."""
    repetition: int | None = 3
    """Stop when the same calls with the same arguments come this many rounds in a row."""
    stall_iterations: int | None = 5
    """Stop after this many iterations without a new file modification (counted from the first)."""
    wall_clock_s: float | None = 30 * 60
    """Seconds the whole run may take; the request in flight is cut off at the deadline."""
    token_budget: int | None = None
    """Prompt plus reply tokens the task may spend; checked before each call against its cost."""
    max_nudges: int = 2
    """Unusable replies in a row (empty, cut off, a call only in the thinking...) that get a
    nudge; the next one stops the run. A round whose tool calls run starts the count again."""
    nudges_per: str = "streak"
    """``run``: ``max_nudges`` counts the whole run instead (seed 001's "2 per run")."""

    def check_iterations(self, state: RunState) -> None:
        if self.max_iterations is not None and state.iteration >= self.max_iterations:
            raise MaxIterations(
                f"reached the limit of {self.max_iterations} iterations without a final answer",
                guardrail="iterations",
            )

    def check_nudges(self, state: RunState) -> None:
        """Stop a run whose model has had ``max_nudges`` nudges in a row and still gives no
        usable reply."""
        if self.nudges_per == "run" and state.nudges_counted >= self.max_nudges:
            raise NudgeExhausted(
                f"the model gave no usable reply after {state.nudges_counted} nudges in this run",
                guardrail="nudges",
            )
        if state.nudges >= self.max_nudges:
            more = state.nudges_total - state.nudges
            raise NudgeExhausted(
                f"the model gave no usable reply after {state.nudges} nudges in a row"
                + (f" ({more} more earlier in the run)" if more else ""),
                guardrail="nudges",
            )

    def check_wall_clock(self, state: RunState) -> None:
        remaining = self.remaining_s(state)
        if remaining is not None and remaining <= 0:
            raise self.out_of_time()

    def out_of_time(self) -> WallClockTimeout:
        """The stop for a run whose wall clock has run out."""
        return WallClockTimeout(
            f"the run took longer than its {self.wall_clock_s:g} s wall clock",
            guardrail="wall_clock",
        )

    def remaining_s(self, state: RunState) -> float | None:
        if self.wall_clock_s is None:
            return None
        return self.wall_clock_s - (time.monotonic() - state.started)

    def check_budget(self, state: RunState, estimated_cost: int) -> None:
        """Stop before a call whose estimated cost would take the task over its budget."""
        if self.token_budget is None:
            return
        spent = state.tokens_in + state.tokens_out
        if spent + estimated_cost > self.token_budget:
            raise BudgetExceeded(
                f"the next request (about {estimated_cost} tokens) would exceed the task's "
                f"budget of {self.token_budget} tokens ({spent} spent)",
                guardrail="token_budget",
            )

    def check_repetition(self, state: RunState, calls: Sequence[ToolCall]) -> None:
        """Record this round's calls; stop when the last ``repetition`` rounds are identical."""
        state.rounds.append(tuple(sorted(_canonical(call) for call in calls)))
        n = self.repetition
        if n is None or len(state.rounds) < n:
            return
        last = state.rounds[-n:]
        if all(round_ == last[0] for round_ in last):
            names = ", ".join(f"{c.name}({_short_args(c)})" for c in calls)
            raise Repetition(
                f"the same tool calls came {n} rounds in a row: {names}", guardrail="repetition"
            )

    def check_progress(self, state: RunState, changed: bool) -> None:
        """Record whether this iteration modified files; stop after too many without. A round
        that ``waited`` for new output and got it (``ToolResult.progress``) repeats no other
        round (``check_repetition``) and counts, once the stall clock has started."""
        waited, state.waited = state.waited, False
        if waited and state.rounds:
            state.rounds[-1] = (*state.rounds[-1], f"progress {state.iteration}")
        if changed or (waited and state.last_change_iteration is not None):
            state.last_change_iteration = state.iteration
            return
        n = self.stall_iterations
        if n is None or state.last_change_iteration is None:
            return  # seed 004: the stall clock starts at the first modification
        idle = state.iteration - state.last_change_iteration
        if idle >= n:
            raise Stall(f"no file was modified in the last {idle} iterations", guardrail="stall")


@dataclass(slots=True)
class RunState:
    """What the guardrails need to know about a run so far."""

    started: float = field(default_factory=time.monotonic)
    iteration: int = 0
    """Model turns completed."""
    tokens_in: int = 0
    tokens_out: int = 0
    prefill: Prefill = field(default_factory=Prefill)
    """The server's own prefill and cache figures, request by request."""
    cost: float = 0.0
    """Money spent, when the user set prices."""
    nudges: int = 0
    """Nudges since the model's last round of tool calls (what ``max_nudges`` limits)."""
    nudges_total: int = 0
    """Nudges in the whole run."""
    nudges_counted: int = 0
    """Nudges in the whole run that the limit counts (not the objections to an answer)."""
    rounds: list[tuple[str, ...]] = field(default_factory=list)
    last_change_iteration: int | None = None
    commands: list[str] = field(default_factory=list)
    """The commands ``run_command`` ran: a check among them may be adopted (evidence/adopt)."""
    waited: bool = False
    """A tool result of this round brought something new (``ToolResult.progress``)."""


def _canonical(call: ToolCall) -> str:
    """The call as canonical JSON; the parser cuts arguments nested too deep for that (see
    ``nesting``), and a call that reached here some other way must not end the run either."""
    try:
        return call.canonical()
    except (RecursionError, ValueError):  # nested past the recursion limit, or circular
        return f"{call.name}: arguments nested {depth(call.arguments)} levels deep"


def _short_args(call: ToolCall, limit: int = 60) -> str:
    try:
        text = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    except RecursionError:
        text = f"arguments nested {depth(call.arguments)} levels deep"
    return clip(text, limit)
