"""The loop's per-iteration costs: the workspace is walked only after calls that may write
without saying so, and the prompt is estimated once a request; the results stay the same."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.changes import READ_ONLY_TOOLS
from localhand.evidence.snapshot import ChangeTracker
from localhand.models.scripted import ScriptedModel, Step, call
from localhand.prompt import context as context_module
from localhand.run import agent_config as agent_module
from localhand.run.guardrails import Limits
from localhand.tools import FileTools, ShellTool, ToolRegistry, Workspace
from localhand.types import Reply, ToolCall


class Recording(Agent):
    """Records whether each round of calls changed a file."""

    def _reset(self) -> None:
        super()._reset()
        self.flags: list[bool] = []

    def files_changed(self, calls: Sequence[ToolCall]) -> bool:
        changed = super().files_changed(calls)
        self.flags.append(changed)
        return changed


class Walking(Recording):
    """Decides as the loop did before the file tools reported their writes: a walk of the
    whole workspace after every round with a call other than a read."""

    def files_changed(self, calls: Sequence[ToolCall]) -> bool:
        self._written.take()  # what the tools reported is set aside: this one walks
        wrote = any(call.name not in READ_ONLY_TOOLS for call in calls)
        changed = wrote and bool(self.tracker.new_changes())
        self.flags.append(changed)
        return changed


def together(*calls: Reply) -> Reply:
    return Reply(tool_calls=tuple(c for reply in calls for c in reply.tool_calls))


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each whole-workspace walk after the start, counted."""
    counted: list[int] = []
    original = ChangeTracker.new_changes

    def counting(self: ChangeTracker, *written: object) -> set[str]:
        counted.append(1)
        return original(self, *written)

    monkeypatch.setattr(ChangeTracker, "new_changes", counting)
    return counted


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "notes.txt").write_text("first\n")
    (root / "cache").mkdir()
    return root


def run(kind: type[Recording], workspace: Path, script: list[Step], **limits: object):
    log = EventLog()
    bus = EventBus()
    bus.subscribe(log)
    model = ScriptedModel(script)
    agent = kind(model, workspace, bus=bus, limits=Limits(max_iterations=30, **limits))
    result = agent.run("Work")
    return agent, result, log


def test_only_rounds_with_a_command_walk_the_workspace(demo: Path, walks: list[int]) -> None:
    script: list[Step] = [
        call("read_file", path="calc.py"),
        call("write_file", path="new.py", content="x = 1\n"),
        call("edit_file", path="calc.py", old_text="a - b", new_text="a + b"),
        together(call("write_file", path="b.py", content="y = 2\n"), call("list_directory")),
        call("write_file", path="b.py", content="y = 2\n"),  # the same bytes: no progress
        call("run_command", command="echo more >> notes.txt"),
        call("search_files", pattern="add"),
        "done",
    ]
    agent, result, _ = run(Recording, demo, script)
    assert result.termination_reason == "final_answer"
    assert len(walks) == 1, "only after run_command"
    assert agent.flags == [False, True, True, True, False, True, False]
    assert result.files_modified == ["b.py", "calc.py", "new.py", "notes.txt"]


def test_a_write_then_a_command_changing_another_file_is_seen_both_ways(demo: Path) -> None:
    script: list[Step] = [
        call("write_file", path="a.txt", content="a\n"),
        call("run_command", command="printf 'b\\n' > b.txt"),
        call("run_command", command="cat a.txt b.txt"),  # reads only: no progress
        together(
            call("write_file", path="c.txt", content="c\n"),
            call("run_command", command="printf 'x' >> calc.py"),
        ),
        call("run_command", command="rm a.txt"),
        call("write_file", path="a.txt", content="a\n"),  # back: a change since the rm
        "done",
    ]
    flags, results = compare(demo, script)
    assert flags == [True, True, False, True, True, True]
    assert results["files_modified"] == ["a.txt", "b.txt", "c.txt", "calc.py"]


def test_edge_cases_report_exactly_what_a_walk_reports(demo: Path) -> None:
    (demo / "real.txt").write_text("real\n")
    (demo / "alias.txt").symlink_to("real.txt")
    (demo / "linked").symlink_to(demo / "cache", target_is_directory=True)
    script: list[Step] = [
        call("write_file", path="alias.txt", content="through the link\n"),  # real.txt changes
        call("write_file", path="linked/inside.txt", content="in\n"),  # cache/inside.txt
        call("write_file", path="__pycache__/m.txt", content="ignored\n"),
        call("write_file", path="m.pyc", content="ignored too\n"),
        together(  # an edit and its undo in one reply: nothing changed
            call("edit_file", path="notes.txt", old_text="first", new_text="second"),
            call("edit_file", path="notes.txt", old_text="second", new_text="first"),
        ),
        call("edit_file", path="notes.txt", old_text="absent", new_text="x"),  # fails
        call("write_file", path="cache", content="a directory"),  # refused
        call("write_file", path="../outside.txt", content="refused"),
        "done",
    ]
    flags, results = compare(demo, script, stall_iterations=None)
    assert flags == [True, True, False, False, False, False, False, False]
    assert results["files_modified"] == ["cache/inside.txt", "real.txt"]
    assert not (demo.parent / "outside.txt").exists()


def test_the_stall_guardrail_trips_at_the_same_iteration(demo: Path) -> None:
    script: list[Step] = [
        call("write_file", path="notes.txt", content="second\n"),
        call("write_file", path="notes.txt", content="second\n"),  # the bytes it has
        call("read_file", path="notes.txt"),
        call("write_file", path="notes.txt", content="first\n"),  # a real change back
        call("write_file", path="notes.txt", content="first\n"),
        call("run_command", command="touch notes.txt"),
        call("edit_file", path="notes.txt", old_text="first", new_text="first"),
        "never reached",
    ]
    flags, results = compare(demo, script, stall_iterations=3)
    assert flags == [True, False, False, True, False, False, False]
    assert results["termination_reason"] == "stall"
    assert results["iterations_used"] == 7
    assert results["files_modified"] == []


def compare(workspace: Path, script: list[Step], **limits: object) -> tuple[list[bool], dict]:
    """Runs ``script`` with the reported writes and with a walk every time, in two copies of
    ``workspace``; asserts the two runs tell the same story and returns it."""
    copies = []
    for kind, parent in ((Recording, "a"), (Walking, "b")):
        copy = workspace.parent / parent / workspace.name  # paths of the same length
        shutil.copytree(workspace, copy, symlinks=True)
        if (workspace / "linked").is_symlink():  # keep the link inside its own copy
            (copy / "linked").unlink()
            (copy / "linked").symlink_to(copy / "cache", target_is_directory=True)
        copies.append(run(kind, copy, list(script), **limits))
    (reported, result, log), (walked, walked_result, walked_log) = copies
    assert reported.flags == walked.flags
    mine, theirs = result.to_dict(), walked_result.to_dict()
    for data in (mine, theirs):
        data.pop("duration_s")
        data.pop("task_id")
    assert mine == theirs
    assert story(log) == story(walked_log)
    return reported.flags, mine


def story(log: EventLog) -> list[tuple]:
    """The events, without times, ids and paths of the copy."""
    keep = {"tool_call", "guardrail", "nudge", "warning"}
    return [
        (e.type, getattr(e, "tool_name", None), getattr(e, "ok", None), getattr(e, "reason", None))
        for e in log.events
        if e.type in keep
    ]


def test_writes_by_tools_that_do_not_report_them_are_found_by_a_walk(demo: Path) -> None:
    class Formatting(FileTools):
        def write_file(self, path: str, content: str) -> str:  # also touches another file
            (self.workspace.root / "formatted.log").write_text(path)
            return super().write_file(path, content)

    space = Workspace(demo)
    tools = ToolRegistry([*Formatting(space).functions(), *ShellTool(space).functions()])
    model = ScriptedModel(
        [call("write_file", path="notes.txt", content="first\n"), call("list_directory"), "ok"]
    )
    agent = Recording(model, demo, tools=tools)
    result = agent.run("Write")
    assert agent.flags == [True, False], "the override's other file counts, as a walk sees it"
    assert result.files_modified == ["formatted.log"]


def test_the_prompt_is_estimated_once_a_request(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    estimates: list[int] = []
    original = agent_module.estimate_prompt_tokens  # the conversation estimates

    def counting(messages: list, tools: list | None = None) -> int:
        estimates.append(len(messages))
        return original(messages, tools)

    monkeypatch.setattr(agent_module, "estimate_prompt_tokens", counting)
    monkeypatch.setattr(context_module, "estimate_prompt_tokens", counting)  # the window's
    model = ScriptedModel([call("read_file", path="calc.py"), call("list_directory"), "ok"])
    model.context_limit = 100_000  # compaction is checked, and needs the estimate too
    result = Agent(model, demo, limits=Limits(token_budget=1_000_000)).run("Look")
    assert result.termination_reason == "final_answer"
    assert estimates == [2, 4, 6], "one estimate per request, not one per use"
