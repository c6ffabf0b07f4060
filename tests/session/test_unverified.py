"""No pass without evidence: a tool-loop run that ends with a final answer but had no checks is
``unverified`` (exit code 3), recorded, shown, counted and replayed as itself, never as a pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cli_helpers import localhand
from localhand import Agent
from localhand.batch import BatchOptions, run_batch
from localhand.batch.driver import BatchReport
from localhand.batch.progress import Row, totals_line
from localhand.config.settings import Settings
from localhand.evals.html import render_html
from localhand.evals.measure import grade as eval_grade
from localhand.evals.measure import run_figures
from localhand.evals.report import model_summary
from localhand.evals.table import report_tables
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck, grade
from localhand.models.scripted import ScriptedModel, call
from localhand.replay import REGRADED_NOTE, regraded, replay_run
from localhand.run.guardrails import Limits
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.store import Store
from localhand.testing import FakeOllama
from localhand.types import CheckResult
from workspaces import BUGGY, CHECK, workspace_with

PASSED, FAILED = CheckResult("c", True), CheckResult("c", False)


@pytest.mark.parametrize(
    ("reason", "results", "answer_only", "status"),
    [
        ("final_answer", [], False, "unverified"),  # the model's word only
        ("final_answer", [], True, "pass"),  # an answer to a question
        ("final_answer", [PASSED], False, "pass"),
        ("final_answer", [PASSED, FAILED], False, "partial_pass"),
        ("final_answer", [FAILED], False, "fail"),
        ("max_iterations", [], False, "fail"),  # a forced stop with no checks stays fail
        ("stall", [PASSED], False, "partial_pass"),
        ("cancelled", [], True, "fail"),
        ("error", [], False, "error"),
    ],
)
def test_the_status_rule(
    reason: str, results: list[CheckResult], answer_only: bool, status: str
) -> None:
    assert grade(reason, results, answer_only=answer_only) == status


def agent_in(workspace: Path, steps: list[Any], **kwargs: Any) -> tuple[Agent, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    return Agent(ScriptedModel(steps), workspace, bus=bus, **kwargs), log


def test_a_model_that_says_done_without_doing_anything_does_not_pass(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY})
    agent, log = agent_in(workspace, ["Done, the bug is fixed.", "Done, the bug is fixed."])

    result = agent.run("Fix the bug in calc.py")

    assert result.termination_reason == "final_answer"
    assert result.status == "unverified" and result.status != "pass"
    assert result.files_modified == []
    assert result.suggested_check is None, "nothing in the workspace says how it is tested"
    assert result.follow_up_task is None, "no check says anything remains"
    assert (workspace / "calc.py").read_text() == BUGGY
    (finished,) = log.of_type("task_finished")
    assert finished.result["status"] == "unverified"
    assert finished.result["suggested_check"] is None


def test_an_unverified_result_names_the_command_that_would_check_it(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})
    steps = [
        call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        "Fixed.",
    ]
    agent, _ = agent_in(workspace, steps)

    result = agent.run("Fix add() in calc.py; check_calc.py shows whether it works.")

    assert result.status == "unverified"
    assert result.suggested_check == "python3 check_calc.py"
    assert result.to_dict()["suggested_check"] == "python3 check_calc.py"


def test_a_forced_stop_without_checks_stays_fail(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"a.txt": "a\n"})
    steps = [call("read_file", path="a.txt"), call("list_files", path=".")]
    agent, _ = agent_in(workspace, steps, limits=Limits(max_iterations=2))
    result = agent.run("Tidy a.txt")
    assert (result.termination_reason, result.status) == ("max_iterations", "fail")
    assert result.suggested_check is None


def test_an_answer_to_a_question_keeps_its_pass(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY})
    task = Task("What does calc.py do?", workspace=workspace, agentic=False)
    result = run_task(task, Settings(), model=ScriptedModel(["It subtracts."]))
    assert (result.status, result.termination_reason) == ("pass", "final_answer")


# -- the command line, against the fake Ollama over a real socket -----------------------------


def tool_call(name: str, **arguments: object) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


SAYS_DONE = [tool_call("read_file", path="calc.py"), {"content": "Done: add() is fixed."}]


def test_cli_exits_3_and_every_view_shows_unverified(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "pytest.ini": "[pytest]\n"})
    with FakeOllama(script=SAYS_DONE * 2, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "Fix the bug in calc.py",
            "--workspace",
            str(workspace),
            "--model",
            "qwen3:8b",
            "--json",
            host=server.url,
            cwd=tmp_path,
        )
        live = localhand(
            "run",
            "Fix the bug in calc.py",
            "--workspace",
            str(workspace),
            "--model",
            "qwen3:8b",
            host=server.url,
            cwd=tmp_path,
        )
        listed = localhand("runs", host=server.url, cwd=tmp_path)
        listed_json = localhand("runs", "--json", host=server.url, cwd=tmp_path)
        shown = localhand("show", "last", host=server.url, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["status"], result["termination_reason"]) == ("unverified", "final_answer")
    assert result["verification"] == []
    assert result["suggested_check"] == "python3 -m pytest -q"
    assert live.returncode == 3, live.stderr
    assert "■ unverified (final_answer)" in live.stderr
    assert "? not verified: no check was given, run or adopted" in live.stderr
    assert "`python3 -m pytest -q` would check it" in live.stderr
    assert "Traceback" not in live.stderr
    assert [run["status"] for run in json.loads(listed_json.stdout)] == ["unverified"] * 2
    assert "unverified" in listed.stdout and "2 runs: 2 unverified" in listed.stdout
    assert "pass" not in listed.stdout.replace("python", "")
    assert "unverified (final_answer)" in shown.stdout
    assert "`python3 -m pytest -q` would check it" in shown.stdout


def test_cli_verify_auto_runs_the_detected_check(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})
    fix = [
        tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        {"content": "Fixed add()."},
    ]
    with FakeOllama(script=fix, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "Fix calc.py so that check_calc.py passes",
            "--workspace",
            str(workspace),
            "--model",
            "qwen3:8b",
            "--verify",
            "auto",
            "--json",
            host=server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "pass"
    assert [(c["name"], c["passed"]) for c in result["verification"]] == [
        ("python3 check_calc.py", True)
    ]


def test_cli_verify_auto_with_nothing_to_detect_says_what_to_do(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"notes.md": "hello\n"})
    with FakeOllama(script=SAYS_DONE, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "Summarise notes.md into summary.md",
            "--workspace",
            str(workspace),
            "--model",
            "qwen3:8b",
            "--verify",
            "auto",
            host=server.url,
            cwd=tmp_path,
        )
        chats = [r for r in server.requests if r.path == "/api/chat"]
    assert done.returncode == 2
    assert "cannot tell how the project" in done.stderr
    assert '--verify "COMMAND"' in done.stderr
    assert "Traceback" not in done.stderr
    assert chats == [], "the run does not start"


# -- the store, replay, batch and eval ---------------------------------------------------------


def test_the_store_keeps_unverified_as_itself_and_replay_compares_it(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})
    store = Store(tmp_path / "runs.db")
    task = Task("Fix add() in calc.py", workspace=workspace)
    run_id = store.begin_run(task, model="qwen3:8b")
    bus = EventBus()
    bus.subscribe(store.recorder())
    steps = [
        call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        "Fixed.",
    ]
    run_task(task, Settings(), bus=bus, model=ScriptedModel(steps, name="qwen3:8b"))

    stored = Store(tmp_path / "runs.db").run(run_id)  # read back on a fresh connection
    assert stored.status == "unverified", "not coerced to error"
    assert stored.result is not None and stored.result["status"] == "unverified"

    report = replay_run(store, run_id)
    assert report.ok, report.differences
    assert report.result.status == "unverified"
    assert REGRADED_NOTE not in report.notes
    assert store.run(report.replay_run_id or "").status == "unverified"


def test_replay_says_when_a_pass_without_checks_is_now_unverified() -> None:
    assert regraded({"status": "pass", "verification": []}, "unverified")
    assert not regraded({"status": "pass", "verification": [{"passed": True}]}, "unverified")
    assert not regraded({"status": "unverified", "verification": []}, "unverified")
    assert not regraded({"status": "pass", "verification": []}, "pass")


def rows(*statuses: str) -> list[Row]:
    return [Row(f"t{i}", {"status": s}) for i, s in enumerate(statuses)]


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (("pass", "pass"), 0),
        (("pass", "unverified"), 3),
        (("unverified", "fail"), 1),
        (("unverified", "partial_pass"), 1),
        (("unverified", "error"), 2),
    ],
)
def test_batch_exit_code_counts_unverified_apart(statuses: tuple[str, ...], code: int) -> None:
    assert BatchReport(rows=rows(*statuses)).exit_code == code


def test_a_batch_counts_unverified_apart_from_pass(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    lines = [
        {
            "id": "checked",
            "description": "Write a.txt",
            "workspace": "ws",
            "agentic": True,
            "verify": [{"file_exists": "a.txt"}],
        },
        {"id": "unchecked", "description": "Write a.txt", "workspace": "ws", "agentic": True},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    script = [tool_call("write_file", path="a.txt", content="a"), {"content": "Wrote a.txt."}]
    console = Console(record=True, width=200, force_terminal=False, no_color=True)
    with FakeOllama(script=script * 2, models={"qwen3:8b": {}}) as server:
        report = run_batch(
            tasks,
            Settings(host=server.url, model="qwen3:8b", backend="ollama"),
            BatchOptions(workdir=tmp_path / "work", db=tmp_path / "runs.db", concurrency=1),
            console=console,
            live=False,
        )
    statuses = {row.task_id: row.result["status"] for row in report.rows}
    assert statuses == {"checked": "pass", "unchecked": "unverified"}
    assert report.exit_code == 3
    shown = console.export_text()
    assert "? unverified unchecked" in shown and "✓ pass checked" in shown
    assert totals_line(report.rows, 0).startswith("2 tasks: 1 pass, 1 unverified")
    state = [json.loads(line) for line in report.state_path.read_text().splitlines()]
    assert {record["result"]["status"] for record in state} == {"pass", "unverified"}


def eval_run(status: str) -> dict[str, Any]:
    figures = run_figures(
        {
            "status": status,
            "iterations_used": 2,
            "tokens_in": 10,
            "tokens_out": 2,
            "duration_s": 1.0,
            "files_modified": [],
        },
        None,
        plan=False,
    )
    return {"model": "m", "task": "t", "tier": 1, **figures}


def test_eval_never_counts_unverified_as_a_pass() -> None:
    assert eval_grade({"status": "unverified", "files_modified": ["check_x.py"]}, plan=False) == (
        "unverified",
        None,
    )
    runs = [eval_run("pass"), eval_run("unverified"), eval_run("unverified"), eval_run("fail")]
    summary = model_summary("m", runs)
    assert summary["counts"] == {
        "pass": 1,
        "unverified": 2,
        "partial_pass": 0,
        "fail": 1,
        "error": 0,
    }
    assert summary["rates"]["pass"]["k"] == 1 and summary["rates"]["unverified"]["k"] == 2
    assert summary["tiers"]["1"]["pass"]["k"] == 1
    report = {"models": [summary], "tasks": [], "runs": runs, "suite": {"name": "s", "tasks": []}}
    console = Console(record=True, width=200)
    for table in report_tables(report):
        console.print(table)
    text = console.export_text()
    assert "UNVERIFIED" in text and "50%" in text
    html = render_html({**report, "format": "localhand-eval/1"})
    assert 'data-field="unverified">50%' in html


def test_an_eval_report_from_before_unverified_still_renders() -> None:
    summary = model_summary("m", [eval_run("pass")])
    del summary["counts"]["unverified"], summary["rates"]["unverified"]
    report = {"models": [summary], "tasks": [], "runs": [], "suite": {"name": "s", "tasks": []}}
    console = Console(record=True, width=200)
    for table in report_tables(report):
        console.print(table)
    assert "UNVERIFIED" in console.export_text()
    assert "localhand" in render_html({**report, "format": "localhand-eval/1"})


def test_a_check_that_ran_is_evidence_whatever_the_answer(tmp_path: Path) -> None:
    """The same do-nothing model with a check: its claim is now tested, and fails."""
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})
    agent, _ = agent_in(workspace, ["Done."] * 4, checks=[CommandCheck("python3 check_calc.py")])
    result = agent.run("Fix the bug in calc.py")
    assert result.status == "fail"
    assert result.suggested_check is None


def test_every_status_has_an_exit_code_a_stored_form_an_eval_count_and_a_batch_mark() -> None:
    from typing import get_args

    from localhand.batch.progress import COLOURS, MARKS
    from localhand.batch.state import DONE
    from localhand.cli.args import EXIT_CODES
    from localhand.evals.report import STATUSES
    from localhand.store.db import FINAL_STATUSES
    from localhand.types import Status

    statuses = set(get_args(Status))
    assert "unverified" in statuses
    assert set(EXIT_CODES) == set(FINAL_STATUSES) == set(STATUSES) == set(MARKS) == statuses
    assert set(COLOURS) == statuses
    assert EXIT_CODES["unverified"] == 3 and list(EXIT_CODES.values()).count(0) == 1
    assert "unverified" in DONE, "a resumed batch does not run an unverified task again"


@pytest.mark.parametrize(
    ("status", "suggested", "expected"),
    [
        ("unverified", None, 'pass --verify "COMMAND" to check it'),
        ("unverified", "cargo test", "`cargo test` would check it (--verify auto runs it)"),
        ("pass", None, None),
        ("fail", "cargo test", None),
    ],
)
def test_the_live_view_says_what_would_check_an_unverified_run(
    tmp_path: Path, status: str, suggested: str | None, expected: str | None
) -> None:
    from localhand.cli.view import TerminalView
    from localhand.events import TaskFinished
    from localhand.types import Result

    result = Result("t", status, "Done.", "m", 1, 1, "final_answer", 2)  # type: ignore[arg-type]
    result.suggested_check = suggested
    console = Console(record=True, width=300, no_color=True)
    TerminalView(console, live=False)(TaskFinished(task_id="t", result=result.to_dict()))
    shown = console.export_text()
    assert f"■ {status} (final_answer)" in shown
    if expected is None:
        assert "not verified" not in shown
    else:
        assert (
            "? not verified: no check was given, run or adopted, so only the model says it is done"
            in shown
        )
        assert expected in shown
