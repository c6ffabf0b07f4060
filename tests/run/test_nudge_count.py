"""What the nudge limit counts: a reply cut off at the length limit counts whether it held a
call or prose; an objection to an answer does not, and an answer after objections ends the
run (seed 001)."""

from __future__ import annotations

from pathlib import Path

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck
from localhand.models.scripted import ScriptedModel, call
from localhand.run.guardrails import Limits
from localhand.types import Reply

PROSE_CUT = Reply(
    content="Let me explain at length what I am going to do " * 20, done_reason="length"
)


def run(workspace: Path, steps: list, **options: object) -> tuple[object, EventLog, ScriptedModel]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel(steps)
    agent = Agent(model, workspace, bus=bus, limits=Limits(max_iterations=20), **options)
    return agent.run("Explain, then fix"), log, model


def test_prose_cut_off_at_the_length_limit_stops_at_the_nudge_limit(tmp_path: Path) -> None:
    result, log, model = run(tmp_path, [call("list_directory", path="."), *[PROSE_CUT] * 19])
    assert result.termination_reason == "nudge_exhausted"
    assert result.iterations_used == 4 and len(model.calls) == 4  # not 20 (max_iterations)
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 2]
    assert result.iterations_used == 4
    assert "cut off" in log.of_type("nudge")[0].message


def test_a_cut_off_call_and_cut_off_prose_count_alike(tmp_path: Path) -> None:
    call_cut = Reply(content='{"name": "read_file", "arguments": {"pa', done_reason="length")
    result, log, _ = run(
        tmp_path, [call("list_directory", path="."), call_cut, PROSE_CUT, call_cut, "x"]
    )
    assert result.termination_reason == "nudge_exhausted"
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 2]
    assert result.iterations_used == 4


def test_an_answer_after_objections_ends_the_run(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text("exit 1\n")
    steps = ["Done already.", call("list_directory", path="."), "Done.", "Done, really."]
    result, log, model = run(tmp_path, steps, checks=[CommandCheck("sh check.sh")])
    assert result.termination_reason == "final_answer"  # graded by the failing check
    assert result.output == "Done, really."
    assert [e.nudge_number for e in log.of_type("nudge")] == [0, 0]  # objections: not counted
    model.assert_exhausted()
