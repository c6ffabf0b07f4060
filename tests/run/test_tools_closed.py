"""The loop closes its tools however the run leaves it, an exception included: closing is what
syncs the run's writes to disk (docs/architecture.md, "What is synced to disk, and when")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from localhand import Agent
from localhand.models.scripted import ScriptedModel, call
from localhand.tools import default_tools
from localhand.types import Message, Reply


class StoreFailed(Exception):
    """An error none of the loop's stops catches (a store whose disk filled up, a bug)."""


class FailsOnSecondTurn(ScriptedModel):
    def chat(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Reply:
        if len(self.calls) == 1:
            raise StoreFailed("no space left on the store's disk")
        return super().chat(messages, *args, **kwargs)


def test_the_tools_are_closed_when_the_run_leaves_by_an_exception(tmp_path: Path) -> None:
    tools = default_tools(tmp_path, policy="never")
    closed: list[bool] = []
    real_close = tools.close
    tools.close = lambda: (closed.append(True), real_close())[1]  # type: ignore[method-assign]
    model = FailsOnSecondTurn([call("write_file", path="a.txt", content="x\n"), "done"])
    with pytest.raises(StoreFailed):
        Agent(model, tmp_path, tools=tools).run("write a.txt")
    assert closed == [True]
    assert (tmp_path / "a.txt").read_text() == "x\n"


def test_the_tools_are_closed_once_when_the_run_ends(tmp_path: Path) -> None:
    tools = default_tools(tmp_path, policy="never")
    closed: list[bool] = []
    real_close = tools.close
    tools.close = lambda: (closed.append(True), real_close())[1]  # type: ignore[method-assign]
    model = ScriptedModel([call("write_file", path="a.txt", content="x\n"), "done"])
    result = Agent(model, tmp_path, tools=tools).run("write a.txt")
    assert result.termination_reason == "final_answer"
    assert closed == [True]
