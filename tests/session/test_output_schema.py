"""``--output-schema FILE``: the real command line against the fake Ollama (which holds a
reply to a request's ``format``, as Ollama's constrained decoding does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.session.structured import problem_with
from localhand.testing import FakeOllama
from workspaces import example_copy

SCHEMA = {
    "type": "object",
    "properties": {
        "bug": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
    },
    "required": ["bug", "line"],
    "additionalProperties": False,
}


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return example_copy("calc", tmp_path / "demo")


def run_with_schema(server: FakeOllama, demo: Path, tmp_path: Path, *flags: str):
    schema = tmp_path / "answer.schema.json"
    schema.write_text(json.dumps(SCHEMA))
    return localhand(
        "run",
        "Find the bug in calc.py",
        "--workspace",
        str(demo),
        "--model",
        "qwen3:8b",
        "--output-schema",
        str(schema),
        *flags,
        host=server.url,
        cwd=tmp_path,
    )


def test_the_answer_is_asked_for_without_tools_and_validated(demo: Path, tmp_path: Path) -> None:
    script = [
        tool_call("read_file", path="calc.py"),
        {"content": "add() subtracts."},
        {"content": json.dumps({"bug": "add() subtracts", "line": 0})},  # minimum 1: invalid
        {"content": json.dumps({"bug": "add() subtracts", "line": 2})},
    ]
    with FakeOllama(script, models={"qwen3:8b": {}}, strict_format=True) as server:
        done = run_with_schema(server, demo, tmp_path, "--agentic", "--jsonl")
        requests = server.chat_requests
    assert done.returncode == 3, done.stderr  # unverified, as without the schema
    records = [json.loads(line) for line in done.stdout.splitlines()]
    result = records[-1]["payload"]
    assert result["answer_json"] == {"bug": "add() subtracts", "line": 2}
    assert result["output"] == "add() subtracts."
    loop, asked, again = requests[:2], requests[2], requests[3]
    assert all(r.body.get("tools") and "format" not in r.body for r in loop)
    assert asked.body["format"] == SCHEMA and not asked.body.get("tools")
    assert asked.body["messages"][: len(loop[-1].body["messages"])] == loop[-1].body["messages"]
    assert "JSON schema" in asked.body["messages"][-1]["content"]
    assert again.body["format"] == SCHEMA
    assert "line: 0 is less than the minimum of 1" in again.body["messages"][-1]["content"]
    constrained = [r for r in records if r["type"] == "model_request"][-2:]
    assert [r["payload"]["constrained"] for r in constrained] == [True, True]
    # the store's copy of the Result has it too
    shown = localhand("show", "last", "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["run"]["result"]["answer_json"]["line"] == 2


def test_a_simple_task_s_answer_is_json_in_its_announced_and_stored_result(
    demo: Path, tmp_path: Path
) -> None:
    """The simple path (one streamed answer, no tools) asks for the JSON before its Result is
    announced, so the stream's last line and the store's copy both carry ``answer_json``."""
    script = [
        {"content": "add() subtracts, on line 2."},
        {"content": json.dumps({"bug": "add() subtracts", "line": 2})},
    ]
    with FakeOllama(script, models={"qwen3:8b": {}}, strict_format=True) as server:
        done = run_with_schema(server, demo, tmp_path, "--simple", "--jsonl")
        requests = server.chat_requests
    assert done.returncode == 0, done.stderr  # an answer to a question, as without the schema
    assert not any(r.body.get("tools") for r in requests)
    assert requests[-1].body["format"] == SCHEMA
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["payload"]["answer_json"] == {"bug": "add() subtracts", "line": 2}
    finished = [r for r in records if r["type"] == "task_finished"]
    assert finished[-1]["payload"]["result"]["answer_json"]["line"] == 2
    shown = localhand("show", "last", "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["run"]["result"]["answer_json"]["line"] == 2


def test_an_answer_that_never_validates_fails_the_run(demo: Path, tmp_path: Path) -> None:
    script = [{"content": "It subtracts."}, '{"bug": 1}', '{"bug": 2}']
    with FakeOllama(
        [tool_call("list_directory", path="."), *script], models={"qwen3:8b": {}}
    ) as server:
        done = run_with_schema(server, demo, tmp_path, "--agentic", "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "fail" and "answer_json" not in result
    assert "did not follow the output schema" in result["error"]


def test_a_bad_schema_file_is_a_clear_error(demo: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"type": "nonsense"}')
    done = localhand(
        "run", "x", "-w", str(demo), "--output-schema", str(tmp_path / "bad.json"), cwd=tmp_path
    )
    assert done.returncode == 2 and "not a valid JSON schema" in done.stderr
    assert "Traceback" not in done.stderr


def test_problem_with_reads_a_fenced_answer_and_names_the_field() -> None:
    value, problem = problem_with('```json\n{"bug": "x", "line": 3}\n```', SCHEMA)
    assert (value, problem) == ({"bug": "x", "line": 3}, None)
    _, problem = problem_with('{"bug": "x"}', SCHEMA)
    assert problem is not None and "'line' is a required property" in problem
    _, problem = problem_with("not json", SCHEMA)
    assert problem is not None and problem.startswith("it is not valid JSON")


def test_the_fake_refuses_a_format_ollama_refuses() -> None:
    import urllib.error
    import urllib.request

    with FakeOllama(["{}"], models={"qwen3:8b": {}}) as server:
        body = {"model": "qwen3:8b", "messages": [{"role": "user", "content": "x"}]}
        request = urllib.request.Request(
            f"{server.url}/api/chat",
            data=json.dumps({**body, "stream": False, "format": "yaml"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        assert server.remaining == 1, "a refusal consumes nothing of the script"


def test_an_openai_compatible_server_gets_the_schema_as_response_format(
    demo: Path, tmp_path: Path
) -> None:
    script = [
        tool_call("read_file", path="calc.py"),
        "add() subtracts.",
        json.dumps({"bug": "add() subtracts", "line": 2}),
    ]
    with FakeOllama(script, models={"qwen3:8b": {}}, strict_format=True) as server:
        done = run_with_schema(
            server,
            demo,
            tmp_path,
            "--agentic",
            "--backend",
            "openai",
            "--host",
            server.url,
            "--json",
        )
        requests = server.openai_requests
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["answer_json"] == {"bug": "add() subtracts", "line": 2}
    last = requests[-1].body
    assert last["response_format"]["json_schema"]["schema"] == SCHEMA
    assert not last.get("tools")
    assert all(r.body.get("tools") for r in requests[:-1])


def test_a_plan_task_with_a_schema_is_refused_before_it_starts(tmp_path: Path) -> None:
    from localhand.config.settings import Settings
    from localhand.errors import ConfigError
    from localhand.models.scripted import ScriptedModel
    from localhand.run.task import Task
    from localhand.session.door import Session

    plan = {"goal": "hi", "steps": [{"description": "hi", "command": "echo hi"}]}
    task = Task("hi", workspace=tmp_path, plan=plan, output_schema=SCHEMA)
    model = ScriptedModel([])
    with pytest.raises(ConfigError, match="a plan's answer is localhand's summary"):
        Session(task, Settings(), model=model).run()
    assert model.calls == [] and not (tmp_path / "hi").exists()
