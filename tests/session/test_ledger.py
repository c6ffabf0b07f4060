"""The token ledger: booked in the SQLite store, a daily budget shared by all tasks, money."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.store import Store
from localhand.types import Reply, ToolCall, Usage


def reply(name: str, prompt: int, completion: int, **arguments: object) -> Reply:
    return Reply(tool_calls=(ToolCall(name, arguments),), usage=Usage(prompt, completion))


def answer(prompt: int, completion: int) -> Reply:
    return Reply(content="done", usage=Usage(prompt, completion))


def test_calls_are_booked_and_money_is_shown_only_with_prices(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    task = Task("Look around", workspace=tmp_path)
    script = [reply("list_directory", 1000, 50), answer(1200, 20)]
    plain = run_task(task, Settings(), model=ScriptedModel(script), store=store)
    assert plain.cost is None
    assert store.ledger_spent(task_id=task.id).tokens == 2270

    priced = Settings(price_in=2.0, price_out=10.0)
    task2 = Task("Look around", workspace=tmp_path)
    result = run_task(task2, priced, model=ScriptedModel(script), store=store)
    assert result.cost == pytest.approx((2200 * 2.0 + 70 * 10.0) / 1e6)
    assert store.ledger_spent().tokens == 2 * 2270


def test_daily_budget_is_shared_by_tasks_through_the_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    settings = Settings(daily_token_budget=5000)
    first = run_task(
        Task("Look around", workspace=tmp_path),
        settings,
        # 3,100 + 100 spent leaves room for the second request's estimate (the first prompt
        # and the tools, delegate's and wait's among them), not for a third task's
        model=ScriptedModel([reply("list_directory", 3100, 100), answer(1000, 10)]),
        store=Store(db),
    )
    assert first.termination_reason == "final_answer"
    # Another task, with its own connection to the same file, sees what the first one spent.
    second_model = ScriptedModel([call("list_directory"), answer(10, 10)])
    second = run_task(
        Task("Look around again", workspace=tmp_path), settings, model=second_model, store=Store(db)
    )
    assert second.termination_reason == "budget"
    assert second.iterations_used == 0
    assert len(second_model.calls) == 0, "stopped before the call, not after"


def test_daily_budget_without_a_store_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="daily token budget needs the run store"):
        run_task(
            Task("x", workspace=tmp_path),
            Settings(daily_token_budget=10),
            model=ScriptedModel([]),
        )
