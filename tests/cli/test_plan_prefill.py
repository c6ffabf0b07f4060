"""A plan run's Result carries the model server's own prefill and cache figures, summed over
the plan's model requests (the draft's and the brain's), as a run's Result does; ``localhand
show`` of a plan run prints them, and a plan's closing line, without failing on a Result that
has no files or iterations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand import run_plan
from localhand.cli import main
from localhand.config.settings import Settings
from localhand.models import ScriptedModel
from localhand.testing import FakeOllama
from localhand.types import Reply, Usage
from plan_helpers import fix
from workspaces import example_copy

SETTINGS = Settings(sandbox="off")
FAILING_THEN_REPAIRED = {
    "goal": "make out/ready",
    "steps": [{"id": "ready", "description": "mark ready", "command": "touch out/ready"}],
}
REPAIR = fix("insert_steps", new_steps=[{"description": "make out/", "command": "mkdir -p out"}])


def served(content: str, prefilled: int, cached: int) -> Reply:
    """A reply whose server said what it prefilled and reused."""
    usage = Usage(prefilled + cached, 10, prefilled, cached, prefill_ms=prefilled / 2)
    return Reply(content=content, usage=usage, done_reason="stop")


def test_the_brains_requests_are_summed_in_the_plan_result(tmp_path: Path) -> None:
    script = [served(REPAIR, 300, 0), served("summary", 40, 260)] * 2
    model = ScriptedModel(list(script))
    result = run_plan(FAILING_THEN_REPAIRED, tmp_path, SETTINGS, model=model, mode="agentic")
    assert result.status == "pass", result.error
    prefill = result.prefill
    calls = len(model.calls)
    assert calls >= 1 and prefill.requests == prefill.reported == calls
    answered = [reply.usage for reply in script[:calls]]
    assert prefill.tokens_prefilled == sum(u.prefilled_tokens or 0 for u in answered)
    assert prefill.tokens_reused == sum(u.cached_tokens or 0 for u in answered)
    assert prefill.prefill_s == round(sum(u.prefill_ms or 0 for u in answered) / 1000, 3)
    assert result.to_dict()["prefill"]["tokens_prefilled"] == prefill.tokens_prefilled


def test_a_plan_without_a_model_has_unknown_figures(tmp_path: Path) -> None:
    data = {"goal": "greet", "steps": [{"description": "say", "command": "true"}]}
    prefill = run_plan(data, tmp_path, SETTINGS).to_dict()["prefill"]
    assert prefill == {
        "requests": 0,
        "reported": 0,
        "tokens_prefilled": None,
        "tokens_reused": None,
        "prefill_s": None,
    }


def test_show_of_a_drafted_plan_run_prints_the_servers_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = example_copy("plan", tmp_path / "demo")
    draft = {"goal": "List the notes", "steps": [{"description": "List", "command": "ls notes"}]}
    # as Ollama says it: the whole prompt, and the part of it that came from its cache
    said = {"prompt_eval_count": 500, "prompt_eval_cached_count": 200}
    with FakeOllama([{"content": json.dumps(draft), **said}], models={"qwen3:8b": {}}) as server:
        where = ["--workspace", str(demo), "--model", "qwen3:8b", "--host", server.url]
        code = main(["plan", "--goal", "List the notes", "--yes", "--json", *where])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and result["status"] == "pass"
    prefill = result["prefill"]
    assert (prefill["requests"], prefill["reported"]) == (1, 1)  # the draft's request
    assert (prefill["tokens_prefilled"], prefill["tokens_reused"]) == (300, 200)
    assert main(["show", "last"]) == 0
    shown = capsys.readouterr().out
    assert "■ pass (completed) · 1/1 steps done" in shown
    assert "server: prefilled 300 tok" in shown and "cache hit 40%" in shown
