"""A task's checks are run when the model says it is done: a false "done" is told what fails."""

from __future__ import annotations

from pathlib import Path

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck, FileContains
from localhand.models.scripted import ScriptedModel, call


def run(workspace: Path, script: list, checks: list) -> tuple:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel(script)
    result = Agent(model, workspace, checks=checks, bus=bus).run("Write greeting.txt")
    return result, log, model


def test_a_false_done_is_told_what_fails_and_the_model_finishes_the_work(tmp_path: Path) -> None:
    script = [
        call("write_file", path="greeting.txt", content="helo\n"),
        "Done: greeting.txt says hello.",
        call("write_file", path="greeting.txt", content="hello\n"),
        "Done now.",
    ]
    result, log, model = run(tmp_path, script, [FileContains("greeting.txt", "hello")])
    assert (result.status, result.termination_reason, result.output) == (
        "pass",
        "final_answer",
        "Done now.",
    )
    (nudge,) = log.of_type("nudge")
    assert "1 of the task's checks fail" in nudge.message
    assert "greeting.txt" in nudge.message
    model.assert_exhausted()


def test_a_failing_check_shows_the_model_what_it_printed(tmp_path: Path) -> None:
    check = CommandCheck("echo 'AssertionError: expected 5, got -1'; exit 1")
    script = [call("write_file", path="x.txt", content="x"), "All tests pass.", "They pass."]
    result, log, _ = run(tmp_path, script, [check])
    (nudge,) = log.of_type("nudge")
    assert "expected 5, got -1" in nudge.message
    # Answered again with nothing changed: the answer is taken, and graded as it is.
    assert (result.status, result.termination_reason) == ("fail", "final_answer")


def test_without_checks_an_answer_is_taken_at_once(tmp_path: Path) -> None:
    script = [call("write_file", path="x.txt", content="x"), "Done."]
    result, log, _ = run(tmp_path, script, [])
    # Taken at once, but with no check it is the model's word only: unverified, not pass.
    assert (result.status, log.of_type("nudge")) == ("unverified", [])
