"""The simple path (one answer, no tools) gets the project's instruction file as the agentic
path does: the trusted ``AGENTS.md`` nearest to the work, after the task in its one message;
an untrusted one is left out with a warning that says how to trust it."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.events import EventBus, EventLog
from localhand.models.scripted import ScriptedModel
from localhand.run.simple import run_simple
from localhand.run.task import Task
from localhand.session.finish import finish
from trust_helpers import pin


def _workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "AGENTS.md").write_text("Answer in French.\n")
    (root / "CLAUDE.md").write_text("Claude rules.\n")
    return root


def _ask(root: Path, **kw: object) -> tuple[ScriptedModel, EventLog]:
    model = ScriptedModel(["Bonjour."])
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    task = Task(description="What does this project do?", workspace=root, agentic=False)
    result = finish(run_simple(model, task, bus=bus, **kw))  # type: ignore[arg-type]
    assert result.status == "pass", result.error
    return model, log


def test_a_trusted_agents_md_reaches_the_simple_path(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    pin(root / "AGENTS.md")
    model, _log = _ask(root)
    system, user = model.calls[0].messages
    assert user["content"].startswith("Task: What does this project do?")
    assert user["content"].endswith("Project instructions (AGENTS.md):\nAnswer in French.")
    assert "French" not in system["content"]  # the system prompt is every project's


def test_an_untrusted_agents_md_is_left_out_with_how_to_trust_it(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    model, log = _ask(root)
    assert "French" not in model.calls[0].messages[1]["content"]
    warnings = [str(getattr(e, "message", "")) for e in log.events if e.type == "warning"]
    assert any("localhand trust" in w and "AGENTS.md" in w for w in warnings)


def test_no_instruction_files_means_none(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    pin(root / "AGENTS.md")
    model, _log = _ask(root, instruction_files=())
    assert "Project instructions" not in model.calls[0].messages[1]["content"]


def test_the_door_sends_the_files_the_setting_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from localhand import run_task
    from localhand.config.settings import load_settings

    root = _workspace(tmp_path / "ws")
    pin(root / "CLAUDE.md")
    monkeypatch.setenv("LOCALHAND_INSTRUCTION_FILES", "CLAUDE.md")
    model = ScriptedModel(["Claude says hi."])
    task = Task(description="What does this project do?", workspace=root, agentic=False)
    result = run_task(task, load_settings(), model=model)
    assert result.status == "pass", result.error
    sent = model.calls[0].messages
    assert sent[1]["content"].endswith("Project instructions (CLAUDE.md):\nClaude rules.")
