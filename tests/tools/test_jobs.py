"""Background commands (issue 41): ``run_command`` with ``background`` starts a job that runs on
while the model goes on, ``wait`` watches it, and the run's end stops it with all it started.
Real commands, in the real sandbox where this machine has one and without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.models.scripted import ScriptedModel, call
from localhand.parsing import parse_tool_calls
from localhand.profiles import PROFILES, Profile
from localhand.profiles.formats import write_call
from localhand.run.task import Task
from localhand.safety.box.sandbox import available, run_sandbox
from localhand.session.door import Session
from localhand.tools import ToolRegistry, default_tools
from localhand.types import ToolCall
from stop_helpers import survivors

BOXED = pytest.param(
    "workspace-write",
    marks=pytest.mark.skipif(available() is not None, reason=f"no sandbox: {available()}"),
)
MARKED = "echo $LOCALHAND_COMMAND_ID > marker; "
"""Writes the command's marker (``supervise``), by which its processes are found afterwards."""


@pytest.fixture(params=[BOXED, "off"])
def sandbox(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def tools(tmp_path: Path, sandbox: str) -> Iterator[ToolRegistry]:
    with (
        run_sandbox(sandbox, network=True, read=(), warn=lambda _: None),
        default_tools(tmp_path, policy="never", max_jobs=2) as registry,
    ):
        yield registry


def run(tools: ToolRegistry, name: str, **arguments: object) -> str:
    result = tools.execute(ToolCall(name, dict(arguments)))
    return result.content


def test_a_job_is_waited_for_until_a_line_then_until_its_exit(tools: ToolRegistry) -> None:
    script = "echo starting; sleep 1.5; echo ready; sleep 2; echo done; exit 3"
    started = run(tools, "run_command", command=script, background="true")  # a string, coerced
    assert started.startswith("job 1 started") and "starting" in started
    ready = run(tools, "wait", job=1, until="^rea", timeout=20)
    assert "ready" in ready and "runs on" in ready and "done" not in ready
    ended = tools.execute(ToolCall("wait", {"job": 1, "timeout": 20}))
    assert "done" in ended.content and "exit code 3" in ended.content and ended.progress
    assert not ended.ok  # a job that failed: its wait says so
    again = tools.execute(ToolCall("wait", {"job": 1}))
    assert again.content == "[job 1 ended: exit code 3.]" and not again.progress
    assert "job 1: exit code 3 · echo starting" in run(tools, "wait")  # the jobs view


def test_the_first_lines_are_matched_again_by_the_first_wait(tools: ToolRegistry) -> None:
    assert "hello" in run(tools, "run_command", command="echo hello; sleep 30", background=True)
    assert "matches" in run(tools, "wait", job=1, until="hel+o", timeout=5)


def test_a_wait_ends_at_its_timeout_and_names_what_is_wrong(tools: ToolRegistry) -> None:
    run(tools, "run_command", command="sleep 30", background=True)
    assert "still running after 0.3 s" in run(tools, "wait", job=1, until="never", timeout=0.3)
    assert "no job 7" in run(tools, "wait", job=7)
    assert "not a valid regular expression" in run(tools, "wait", job=1, until="(")


def test_max_jobs_refuses_one_more_until_one_ends(tools: ToolRegistry) -> None:
    for seconds in (2, 30):
        run(tools, "run_command", command=f"sleep {seconds}", background=True)
    refused = tools.execute(ToolCall("run_command", {"command": "true", "background": True}))
    assert not refused.ok and "[run] max_jobs" in refused.content
    run(tools, "wait", job=1, timeout=20)
    assert "job 3 started" in run(tools, "run_command", command="true", background=True)


def test_closing_the_tools_stops_every_job_and_all_it_started(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    run(
        tools,
        "run_command",
        command=MARKED + "sleep 60 & setsid sleep 60 & sleep 60",
        background=True,
    )
    run(tools, "wait", job=1, until="never", timeout=0.5)
    tools.close()
    assert survivors(tmp_path) == [], "a process of the job survived the tools' close"
    assert "job 1: stopped" in run(tools, "wait")


def test_a_run_stops_its_jobs_and_lists_them_in_its_result(tmp_path: Path, sandbox: str) -> None:
    server = "python3 -c 'import time; print(\"listening\"); time.sleep(60)'"  # no -u: see env
    model = ScriptedModel([
        call("run_command", command=MARKED + server, background=True),
        call("wait", job=1, until="listening", timeout=20),
        call("run_command", command="exit 4", background=True),
        call("wait", job=2, timeout=20),
        "The server listened.",
    ])  # fmt: skip
    task = Task("Start the server", workspace=tmp_path, agentic=True)
    result = Session(task, Settings(sandbox=sandbox, approve="never"), model=model).run()
    assert "listening" in model.calls[2].messages[-1]["content"]  # printed as it was written
    assert result.jobs is not None
    assert [(job["job"], job["command"], job["ended"]) for job in result.jobs] == [
        (1, MARKED + server, "stopped"),
        (2, "exit 4", "exited"),
    ]
    assert result.jobs[1]["exit_code"] == 4
    assert result.to_dict()["jobs"] == result.jobs
    assert survivors(tmp_path) == [], "a process of the job survived the run"


def test_waits_are_progress_only_while_they_bring_output(tmp_path: Path) -> None:
    ticking = "while true; do echo tick; sleep 0.2; done"
    steps = [call("run_command", command=ticking, background=True)]
    steps += [call("wait", job=1, until="tick", timeout=5)] * 4  # new output every time
    steps += [call("run_command", command="sleep 60", background=True)]
    steps += [call("wait", job=2, until="never", timeout=0.1)] * 3  # nothing new: repetition
    task = Task("Watch", workspace=tmp_path, agentic=True)
    model = ScriptedModel([*steps, "never reached"])
    result = Session(task, Settings(sandbox="off", approve="never"), model=model).run()
    assert result.termination_reason == "repetition"
    assert result.iterations_used == len(steps)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_family_writes_a_background_command_and_a_wait_as_the_parser_reads_them(
    profile: Profile, tmp_path: Path
) -> None:
    definitions = default_tools(tmp_path).definitions()
    for name, arguments in (
        ("run_command", {"command": "python -m http.server 8000", "background": True}),
        ("wait", {"job": 1, "until": "Serving HTTP", "timeout": 20}),
    ):
        written = write_call(profile.text_format, name, arguments)
        parsed = parse_tool_calls({"role": "assistant", "content": written}, definitions)
        assert [(c.name, c.arguments) for c in parsed.calls] == [(name, arguments)], written
