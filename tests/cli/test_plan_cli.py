"""``localhand plan`` against the fake Ollama server over a real socket: in a subprocess, and
in process through ``main`` (fast)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from localhand.cli import main
from localhand.errors import ServerUnavailable
from localhand.models import ScriptedModel
from localhand.session import plans
from localhand.store import open_store
from localhand.testing import FakeOllama
from trust_helpers import pin
from workspaces import example_copy


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return example_copy("plan", tmp_path / "demo")


def localhand_plan(*args: str, host: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return localhand("plan", *args, host=host, cwd=cwd)


def last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


def brain_or_summary(brain_reply: dict[str, Any]):
    """One script item for any request: the brain gets its correction (once), memory
    condensing gets a sentence. Condensing runs in the background, so the order of the two
    kinds of request is not fixed; routing by the system prompt keeps the test exact."""
    given: list[int] = []

    def route(body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"]
        if system.startswith("You repair a plan") and not given:
            given.append(1)
            return {"content": json.dumps(brain_reply)}
        if system.startswith("You summarise"):
            return {"content": "The notes were counted and packed."}
        return {"content": "unexpected request"}

    return route


def test_agentic_plan_repairs_a_failed_step_with_an_inserted_one(demo: Path) -> None:
    repair = {
        "action": "insert_steps",
        "reason": "tar cannot create build/notes.tar.gz: the build directory is missing",
        "new_steps": [{"description": "Create the build directory", "command": "mkdir -p build"}],
    }
    route = brain_or_summary(repair)
    with FakeOllama([route] * 4, models={"qwen3:8b": {}}) as server:
        done = localhand_plan(
            "plan.yaml",
            "--mode",
            "agentic",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--json",
            host=server.url,
            cwd=demo,
        )
        brain_requests = [
            r
            for r in server.chat_requests
            if r.body["messages"][0]["content"].startswith("You repair a plan")
        ]
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1, "--json prints only the Plan Result"
    result = last_json(done.stdout)
    assert (result["status"], result["termination_reason"]) == ("pass", "completed")
    assert [(s["id"], s["status"], s["attempts"]) for s in result["steps"]] == [
        ("count", "done", 1),
        ("fix-1", "done", 1),
        ("pack", "done", 2),
        ("check", "done", 1),
    ]
    assert result["steps"][1]["command"] == "mkdir -p build"
    assert (result["corrections_used"], result["steps_added"]) == (1, 1)
    assert result["model_used"] == "qwen3:8b"
    assert result["tokens_in"] > 0
    assert (demo / "build" / "notes.tar.gz").is_file()
    (request,) = brain_requests
    assert request.body["format"]["properties"]["action"]["enum"] == [
        "retry",
        "modify",
        "insert_steps",
        "skip",
        "abort",
    ]
    assert "build/notes.tar.gz" in request.body["messages"][-1]["content"]
    assert "Traceback" not in done.stderr
    # The plan run is recorded like any run, with its plan events, for `show` and the dashboard.
    store = open_store()
    (run,) = store.runs()
    assert (run.task_id, run.status) == (result["task_id"], "pass")
    types = {event.type for event in store.events(run.id)}
    assert {"plan_revised", "step_started", "step_finished", "task_finished"} <= types


def test_planner_mode_stops_at_the_failure_and_shows_it_live(demo: Path) -> None:
    done = localhand_plan(
        "plan.yaml", "--workspace", str(demo), host="http://127.0.0.1:9", cwd=demo
    )
    assert done.returncode == 1, done.stderr
    assert "step_failed" in done.stdout
    for text in ("count", "pack", "Cannot open", "plan stopped"):
        assert text in done.stderr
    assert "Traceback" not in done.stderr


# -- in process (fast): drafting, approval of a draft, usage errors ---------------------------


@dataclass
class Done:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str]) -> Callable[..., Done]:
    """``localhand plan ARGS`` in this process: its exit code and what it printed."""

    def plan(*args: str) -> Done:
        capsys.readouterr()
        code = main(["plan", *args])
        out, err = capsys.readouterr()
        return Done(code, out, err)

    return plan


def test_a_goal_is_drafted_then_run_with_yes(demo: Path, invoke: Callable[..., Done]) -> None:
    draft = {
        "goal": "List the notes",
        "steps": [{"description": "List", "command": "ls notes", "explanation": "see them"}],
    }
    with FakeOllama([{"content": json.dumps(draft)}], models={"qwen3:8b": {}}) as server:
        done = invoke(
            "--goal",
            "List the notes",
            "--yes",
            "--json",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--host",
            server.url,
        )
        request = server.chat_requests[0]
    assert done.exit_code == 0, done.stderr
    result = last_json(done.stdout)
    assert result["status"] == "pass"
    assert result["steps"][0]["command"] == "ls notes"
    assert result["tokens_in"] > 0  # the draft's tokens count
    assert "steps" in request.body["format"]["properties"]
    assert "notes/" in request.body["messages"][-1]["content"]


def test_a_drafted_plan_does_not_run_without_approval(
    demo: Path, invoke: Callable[..., Done]
) -> None:
    draft = {"goal": "g", "steps": [{"description": "mark", "command": "touch ran.txt"}]}
    with FakeOllama([{"content": json.dumps(draft)}], models={"qwen3:8b": {}}) as server:
        done = invoke(
            "--goal",
            "g",
            "--json",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--host",
            server.url,
        )
    assert done.exit_code == 1
    result = last_json(done.stdout)
    assert result["termination_reason"] == "not_approved"
    assert result["steps"][0]["status"] == "pending"
    assert not (demo / "ran.txt").exists()
    assert "--yes" in done.stderr
    assert "touch ran.txt" in done.stderr  # the draft is shown


def test_a_draft_that_is_no_plan_is_an_error_result(
    demo: Path, invoke: Callable[..., Done]
) -> None:
    with FakeOllama(["I cannot help with that."] * 2, models={"qwen3:8b": {}}) as server:
        done = invoke(
            "--goal",
            "g",
            "--yes",
            "--json",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--host",
            server.url,
        )
        assert len(server.chat_requests) == 2  # asked again once, with the problem
    assert done.exit_code == 2
    result = last_json(done.stdout)
    assert (result["status"], result["termination_reason"]) == ("error", "error")
    assert "did not draft a usable plan" in result["error"]


def test_a_model_server_that_is_down_is_an_error_result(
    demo: Path, monkeypatch: pytest.MonkeyPatch, invoke: Callable[..., Done]
) -> None:
    def down(settings: Any, on_warning: Any = None) -> ScriptedModel:
        return ScriptedModel([ServerUnavailable("nothing answers at http://127.0.0.1:9")])

    monkeypatch.setattr(plans, "select_backend", down)
    shown = invoke("--goal", "anything", "--yes", "--workspace", str(demo))
    assert shown.exit_code == 2
    assert "nothing answers" in shown.stderr
    as_json = invoke("--goal", "anything", "--yes", "--json", "--workspace", str(demo))
    assert as_json.exit_code == 2
    result = last_json(as_json.stdout)
    assert (result["status"], result["goal"]) == ("error", "anything")
    assert "nothing answers" in result["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a plan FILE or --goal"),
        (["plan.yaml", "--goal", "x"], "not both"),
        (["missing.yaml"], "cannot read plan file"),
        (["bad.yaml"], "steps.0.command: required field is missing"),
        (["plan.yaml", "--workspace", "nowhere"], "not a directory"),
        (["plan.yaml", "--mode", "wild"], "wild"),
    ],
)
def test_bad_usage_exits_2_with_a_clear_message(
    demo: Path,
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    invoke: Callable[..., Done],
) -> None:
    monkeypatch.chdir(demo)
    (demo / "bad.yaml").write_text("goal: g\nsteps:\n  - description: d\n")
    done = invoke(*args)
    assert done.exit_code == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_usage_in_a_real_process_shows_no_traceback(demo: Path) -> None:
    (demo / "bad.yaml").write_text("goal: g\nsteps: nope\n")
    done = localhand_plan("bad.yaml", host="http://127.0.0.1:9", cwd=demo)
    assert done.returncode == 2
    assert "steps" in done.stderr
    assert "Traceback" not in done.stderr


# -- the default mode from the settings (seed 003's settings.defaultMode) --------------------


@pytest.fixture(autouse=True)
def _no_plan_mode_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """A LOCALHAND_PLAN_MODE in the developer's shell must not change these tests' mode."""
    monkeypatch.delenv("LOCALHAND_PLAN_MODE", raising=False)


def test_without_mode_the_plan_table_s_default_mode_is_used(
    demo: Path, monkeypatch: pytest.MonkeyPatch, invoke: Callable[..., Done]
) -> None:
    monkeypatch.chdir(demo)
    (demo / "localhand.toml").write_text('[plan]\ndefault_mode = "teacher"\n')
    pin(demo / "localhand.toml")  # as `localhand trust --yes` does
    done = invoke("plan.yaml", "--json")
    # Teacher mode asks before the first step; with no terminal, nobody can say yes.
    result = last_json(done.stdout)
    assert (result["mode"], result["termination_reason"]) == ("teacher", "refused")
    assert result["steps"][0]["status"] == "failed"
    assert done.exit_code == 1
    monkeypatch.setenv("LOCALHAND_PLAN_MODE", "planner")
    from_env = last_json(invoke("plan.yaml", "--json").stdout)
    assert (from_env["mode"], from_env["termination_reason"]) == ("planner", "step_failed")
    from_flag = last_json(invoke("plan.yaml", "--json", "--mode", "teacher").stdout)
    assert from_flag["mode"] == "teacher"


def test_agentic_as_the_default_mode_repairs_the_plan(
    demo: Path, monkeypatch: pytest.MonkeyPatch, invoke: Callable[..., Done]
) -> None:
    repair = {
        "action": "insert_steps",
        "reason": "build/ is missing",
        "new_steps": [{"description": "Create build/", "command": "mkdir -p build"}],
    }

    def reply(messages: Any) -> str:
        if messages[0]["content"].startswith("You repair a plan"):
            return json.dumps(repair)
        return "The notes were counted and packed."  # memory condensing, in the background

    monkeypatch.setattr(
        plans, "select_backend", lambda settings, on_warning=None: ScriptedModel([reply] * 3)
    )
    monkeypatch.chdir(demo)
    (demo / "localhand.toml").write_text('[plan]\ndefault_mode = "agentic"\n')
    pin(demo / "localhand.toml")  # as `localhand trust --yes` does
    done = invoke("plan.yaml", "--json")
    assert done.exit_code == 0, done.stderr
    result = last_json(done.stdout)
    assert (result["mode"], result["status"], result["steps_added"]) == ("agentic", "pass", 1)
    assert (demo / "build" / "notes.tar.gz").is_file()


def test_a_bad_default_mode_is_a_clear_error_without_a_traceback(
    demo: Path, monkeypatch: pytest.MonkeyPatch, invoke: Callable[..., Done]
) -> None:
    monkeypatch.chdir(demo)
    (demo / "localhand.toml").write_text('[plan]\ndefault_mode = "fixer"\n')
    pin(demo / "localhand.toml")  # as `localhand trust --yes` does
    done = invoke("plan.yaml")
    assert done.exit_code == 2
    assert "[plan] default_mode = 'fixer'" in done.stderr
    assert str(demo / "localhand.toml") in done.stderr
    assert "teacher, planner, agentic" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (demo / "build").exists()  # nothing ran
