"""The token ledger: every model call booked in the store, and a daily budget checked on it.

The per-task budget is checked by ``Limits.check_budget`` on the run's own counts; the ledger
adds the budget per day, shared by every task that runs at the same time, in this process or
another, because the totals live in the SQLite store. Money is computed only when the user
sets a price per million tokens; local models cost none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Protocol

from localhand.errors import BudgetExceeded
from localhand.types import Usage


class Totals(Protocol):
    @property
    def tokens(self) -> int: ...


class Books(Protocol):
    """What the ledger needs of the run store (``localhand.store.Store`` has it): the run's
    spine books its calls without knowing the store."""

    def ledger_add(
        self, task_id: str, tokens_in: int, tokens_out: int, *, model: str = "", cost: float = 0.0
    ) -> None: ...

    def ledger_spent(self, task_id: str | None = None, day: date | str | None = None) -> Totals: ...


@dataclass(slots=True)
class Ledger:
    store: Books
    daily_budget: int | None = None
    """Tokens (prompt + reply) all tasks together may spend per local calendar day."""
    price_in: float | None = None
    """Price per million prompt tokens; ``None`` shows no money."""
    price_out: float | None = None
    """Price per million reply tokens."""

    def check(self, estimated_cost: int) -> None:
        """Stop before a call that would take today's total over the daily budget."""
        if self.daily_budget is None:
            return
        spent = self.store.ledger_spent(day=date.today()).tokens
        if spent + estimated_cost > self.daily_budget:
            raise BudgetExceeded(
                f"the next request (about {estimated_cost} tokens) would exceed today's budget "
                f"of {self.daily_budget} tokens ({spent} already spent by all tasks)",
                guardrail="daily_token_budget",
            )

    def book(self, task_id: str, usage: Usage, model: str) -> None:
        self.store.ledger_add(
            task_id,
            usage.prompt_tokens,
            usage.completion_tokens,
            model=model,
            cost=self.cost(usage),
        )

    def cost(self, usage: Usage) -> float:
        if self.price_in is None and self.price_out is None:
            return 0.0
        return (
            usage.prompt_tokens * (self.price_in or 0.0)
            + usage.completion_tokens * (self.price_out or 0.0)
        ) / 1_000_000

    @property
    def priced(self) -> bool:
        return self.price_in is not None or self.price_out is not None
