"""The brain: a correction from JSON or plain text, validated; any failure is an abort."""

from __future__ import annotations

import json

import pytest

from localhand.errors import ServerUnavailable
from localhand.models import ScriptedModel
from localhand.plan import Brain, Plan, Step, parse_correction
from localhand.plan.brain import CORRECTION_SCHEMA, CorrectionError
from localhand.plan.runstep import StepOutcome

STEP = Step("build", "Build it", "make all", status="failed", attempts=1)
PLAN = Plan("Ship the thing", (STEP, Step("test", "Test it", "make test")))
FAILED = StepOutcome(ok=False, exit_code=2, output="make: *** No rule to make target 'all'.")


def diagnose(*replies: object) -> tuple[object, ScriptedModel, Brain]:
    model = ScriptedModel(list(replies))
    brain = Brain(model)
    return brain.diagnose(PLAN, STEP, FAILED, "- step x: ok"), model, brain


def test_every_action_parses() -> None:
    retry = parse_correction('{"action": "retry", "reason": "flaky"}')
    assert (retry.action, retry.reason, retry.new_command) == ("retry", "flaky", None)
    modify = parse_correction('{"action": "modify", "reason": "r", "new_command": "make"}')
    assert (modify.action, modify.new_command) == ("modify", "make")
    insert = parse_correction(
        json.dumps(
            {
                "action": "insert_steps",
                "reason": "r",
                "new_steps": [{"description": "configure", "command": "./configure"}],
            }
        )
    )
    assert insert.action == "insert_steps"
    assert [(s.description, s.command) for s in insert.new_steps] == [("configure", "./configure")]
    assert parse_correction('{"action": "skip", "reason": "r"}').action == "skip"
    assert parse_correction('{"action": "abort", "reason": "r"}').action == "abort"


def test_at_most_three_new_steps_are_kept() -> None:
    steps = [{"description": f"s{i}", "command": f"echo {i}"} for i in range(5)]
    fix = parse_correction(
        json.dumps({"action": "insert_steps", "reason": "r", "new_steps": steps})
    )
    assert [s.command for s in fix.new_steps] == ["echo 0", "echo 1", "echo 2"]
    assert fix.dropped_steps == 2


@pytest.mark.parametrize(
    "text",
    [
        'Sure! Here is my decision:\n```json\n{"action": "modify", "reason": "typo", '
        '"new_command": "make build"}\n```\nGood luck.',
        "<think>the target is wrong</think>"
        '{"action": "modify", "reason": "typo", "newCommand": "make build"}',
        "{'action': 'modify', 'reason': 'typo', 'new_command': 'make build'}",
        '{"action": "modify", "reason": "typo", "new_command": "make build"',  # cut off
        "action: modify\nreason: typo\nnew_command: `make build`",
        "**Action**: modify\n**Reason**: typo\n**new_command**: make build",
    ],
)
def test_a_correction_is_accepted_from_plain_text(text: str) -> None:
    fix = parse_correction(text)
    assert (fix.action, fix.new_command) == ("modify", "make build")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think you should try again.", "not valid JSON"),
        ("", "not valid JSON"),
        ('{"action": "explode", "reason": "r"}', "unknown action 'explode'"),
        ('{"action": "modify", "reason": "r"}', "needs a non-empty new_command"),
        ('{"action": "insert_steps", "reason": "r", "new_steps": []}', "at least one step"),
    ],
)
def test_unusable_replies_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(CorrectionError, match=message):
        parse_correction(text)


def test_the_brain_asks_with_the_schema_and_sends_step_output_and_memory() -> None:
    fix, model, _ = diagnose('{"action": "skip", "reason": "not needed"}')
    assert fix.action == "skip"
    call = model.calls[0]
    assert call.options is not None and call.options.format == CORRECTION_SCHEMA
    prompt = call.messages[-1]["content"]
    assert "make all" in prompt
    assert "No rule to make target" in prompt
    assert "Exit code: 2" in prompt
    assert "- step x: ok" in prompt
    assert "Ship the thing" in prompt


def test_a_reply_that_is_not_json_becomes_an_abort_with_the_reason() -> None:
    fix, _, brain = diagnose("Hmm, that looks bad. Maybe check the Makefile?")
    assert fix.action == "abort"
    assert "not valid JSON" in fix.reason
    assert "Makefile" in fix.reason
    assert isinstance(brain.last_error, CorrectionError)


def test_a_model_failure_becomes_an_abort_and_never_raises() -> None:
    fix, _, brain = diagnose(ServerUnavailable("nothing answers at http://127.0.0.1:9"))
    assert fix.action == "abort"
    assert "nothing answers" in fix.reason
    assert isinstance(brain.last_error, ServerUnavailable)


def test_a_correction_in_the_thinking_is_used_when_the_content_has_none() -> None:
    fix, _, _ = diagnose({"content": "", "thinking": '{"action": "retry", "reason": "flaky"}'})
    assert fix.action == "retry"
