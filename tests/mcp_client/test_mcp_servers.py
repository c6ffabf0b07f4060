"""Tools from real MCP servers, started as users start them: ``mcp-server-time`` and
``mcp-server-git`` from PyPI (the dev dependency group), ``@modelcontextprotocol/server-everything``
from npm (``.ci/run`` installs it). The issue's "done when": a model calls
``get_current_time`` in a ``localhand run``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or --group dev)")

from localhand.cli import main  # noqa: E402
from localhand.config.settings import Settings  # noqa: E402
from localhand.events import EventBus, EventLog  # noqa: E402
from localhand.mcp.config import McpServer  # noqa: E402
from localhand.models.scripted import ScriptedModel, call  # noqa: E402
from localhand.run.task import Task  # noqa: E402
from localhand.safety.approval.approver import BaseApprover, prompt  # noqa: E402
from localhand.safety.risk.classify import Risk  # noqa: E402
from localhand.session.api import run_task  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402

pytestmark = pytest.mark.timeout(120)
NPM_PREFIX = Path(os.environ.get("LOCALHAND_NPM_PREFIX", Path.home() / ".cache/localhand/npm"))


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def mcp_json(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_a_run_calls_get_current_time_from_mcp_server_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = mcp_json(
        tmp_path / "mcp.json",
        {
            "time": {
                "command": optional_deps.console_script("mcp-server-time"),
                "args": [],
                "trust": "allow",
            }
        },
    )
    script = [
        tool_call("get_current_time", timezone="Europe/Paris"),
        {"content": "It is the time the tool said, in Paris."},
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        code = main(
            ["run", "What time is it in Paris?", "--agentic", "--workspace", str(workspace),
             "--backend", "ollama", "--host", fake.url, "--model", "qwen3:8b",
             "--mcp-config", str(config), "--json"]
        )  # fmt: skip
        chats = fake.chat_requests
    out, err = capsys.readouterr()
    assert code == 3, err  # unverified: a tool-loop run with no checks
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "unverified" and result["termination_reason"] == "final_answer"
    offered = {t["function"]["name"]: t["function"] for t in chats[0].body["tools"]}
    assert {"read_file", "run_command", "get_current_time", "convert_time"} <= set(offered)
    # The server's schema, flattened as built-in tools are: no titles, nothing but the shape.
    assert offered["get_current_time"]["parameters"]["required"] == ["timezone"]
    assert "title" not in json.dumps(offered["get_current_time"]["parameters"])
    (answer,) = [m for m in chats[1].body["messages"] if m["role"] == "tool"]
    time = json.loads(answer["content"])  # the real server's answer, as it gave it
    assert time["timezone"] == "Europe/Paris" and time["datetime"][:2] == "20"
    assert time["day_of_week"] in {
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"
    }  # fmt: skip

    # The call is a tool_call event in the run store, like any other tool's.
    assert main(["show", "last", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (event,) = [e for e in shown["events"] if e["type"] == "tool_call"]
    assert event["tool_name"] == "get_current_time" and event["ok"] is True
    assert "Europe/Paris" in event["args_summary"]
    assert event["server"] == "time", "the event names the MCP server the tool came from"


class Asked(BaseApprover):
    """A person at the approval prompt, saying ``answer``: what they were shown is kept."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.questions: list[tuple[str, Risk]] = []
        self.refusal = "the user said no"
        self.decided_by = "test"

    def approve(self, command: str, risk: Risk) -> bool:
        self.questions.append((command, risk))
        return self.answer


@pytest.mark.parametrize("answer", [True, False])
def test_an_untrusted_servers_call_needs_approval_showing_server_tool_and_arguments(
    tmp_path: Path, answer: bool
) -> None:
    time_server = McpServer(
        "time", command=optional_deps.console_script("mcp-server-time"), source="test"
    )
    model = ScriptedModel([call("get_current_time", timezone="Asia/Tokyo"), "Done."])
    approver = Asked(answer)
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    settings = Settings(mcp_servers=(time_server,), sandbox="off")  # approve: dangerous
    task = Task("What time is it in Tokyo?", workspace=tmp_path, agentic=True)
    run_task(task, settings, bus=bus, model=model, approver=approver)
    ((command, risk),) = approver.questions
    assert "MCP server 'time'" in command and "tool 'get_current_time'" in command
    assert '"timezone": "Asia/Tokyo"' in command
    shown = prompt(command, risk)  # what the terminal shows
    assert "get_current_time" in shown and "Asia/Tokyo" in shown and "outside the" in shown
    # The server marks the tool read-only (readOnlyHint): asked about, not called dangerous.
    assert risk.level == "moderate" and "only reads, as the server marks it" in shown
    (needed,) = log.of_type("approval_needed")
    (decided,) = log.of_type("approval_decided")
    assert needed.to_dict()["step_id"] == "mcp:time/get_current_time"
    assert decided.to_dict()["approved"] is answer and decided.to_dict()["by"] == "test"
    (message,) = [m for m in model.calls[-1].messages if m.get("role") == "tool"]
    if answer:
        assert json.loads(message["content"])["timezone"] == "Asia/Tokyo"
    else:
        assert message["content"].startswith("Refused: calling get_current_time of the MCP")
        assert "the user said no" in message["content"]


def test_trusted_tools_and_approve_never_ask_nothing(tmp_path: Path) -> None:
    command = optional_deps.console_script("mcp-server-time")
    for server, approve in (
        (McpServer("time", command=command, trusted_tools=("get_current_time",)), "dangerous"),
        (McpServer("time", command=command), "never"),
    ):
        approver = Asked(False)
        model = ScriptedModel([call("get_current_time", timezone="UTC"), "Done."])
        settings = Settings(mcp_servers=(server,), sandbox="off", approve=approve)
        task = Task("What time is it?", workspace=tmp_path, agentic=True)
        result = run_task(task, settings, model=model, approver=approver)
        assert approver.questions == [] and result.status == "unverified"  # no checks


def test_git_tools_from_localhand_toml_keep_the_list_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "notes.txt").write_text("one\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (repo / "notes.txt").write_text("one\ntwo\n")
    home = tmp_path / "home"  # a localhand.toml the user names, outside the project
    home.mkdir()
    (home / "localhand.toml").write_text(
        f'[mcp.servers.git]\ncommand = "{optional_deps.console_script("mcp-server-git")}"\n'
        f'args = ["--repository", "{repo}"]\n'
        'tools = ["git_status", "git_diff_unstaged"]\ntrust = "allow"\n'
    )
    monkeypatch.setenv("LOCALHAND_CONFIG", str(home / "localhand.toml"))
    monkeypatch.chdir(repo)
    script = [tool_call("git_diff_unstaged", repo_path=str(repo)), "notes.txt gained a line."]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        code = main(
            ["run", "What changed in the repository?", "--agentic", "--workspace", str(repo),
             "--backend", "ollama", "--host", fake.url, "--json"]
        )  # fmt: skip
        chats = fake.chat_requests
    assert code == 3, capsys.readouterr().err  # unverified: a tool-loop run with no checks
    names = [t["function"]["name"] for t in chats[0].body["tools"]]
    assert [n for n in names if n.startswith("git_")] == ["git_status", "git_diff_unstaged"]
    (answer,) = [m for m in chats[1].body["messages"] if m["role"] == "tool"]
    assert "+two" in answer["content"] and "notes.txt" in answer["content"]


EXITS = "import sys; sys.stderr.write('fatal: no API key given\\n'); sys.exit(3)"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"command": sys.executable, "args": ["-c", EXITS]}, "fatal: no API key given"),
        ({"command": "no-such-mcp-server-4242"}, "'no-such-mcp-server-4242' was not found"),
    ],
)
def test_a_server_that_cannot_start_is_a_clear_configuration_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    entry: dict[str, Any],
    said: str,
) -> None:
    config = mcp_json(tmp_path / "mcp.json", {"broken": entry})
    with FakeOllama(script=[], models={"qwen3:8b": {}}) as fake:
        code = main(
            ["run", "Do it", "--agentic", "--workspace", str(tmp_path), "--backend", "ollama",
             "--host", fake.url, "--mcp-config", str(config), "--json"]
        )  # fmt: skip
        chats = fake.chat_requests
    err = " ".join(capsys.readouterr().err.split())  # Rich wraps long lines
    assert code == 2
    assert "the MCP server 'broken'" in err and "could not start" in err and said in err
    assert "Traceback" not in err
    assert chats == [], "no model request before the tools are there"


def test_tools_from_the_npm_server_everything(tmp_path: Path) -> None:
    """Node's reference server: images, resource links, structured content, 13 tools."""
    node = shutil.which("node")
    optional_deps.require(
        "Node.js", None if node else "node is not on PATH", "apt-get install nodejs npm"
    )
    binary = NPM_PREFIX / "node_modules" / ".bin" / "mcp-server-everything"
    optional_deps.require(
        "@modelcontextprotocol/server-everything",
        None if binary.exists() else f"{binary} does not exist",
        f"npm install --prefix {NPM_PREFIX} @modelcontextprotocol/server-everything",
    )
    everything = McpServer(
        "everything",
        command=str(binary),
        args=("stdio",),
        tools=("echo", "get-tiny-image", "get-resource-links", "get-structured-content"),
        trust="allow",
    )
    model = ScriptedModel(
        [
            call("echo", message="hello"),
            call("get-tiny-image"),
            call("get-resource-links", count=2),
            call("get-structured-content", location="Chicago"),
            "Done.",
        ]
    )
    settings = Settings(mcp_servers=(everything,), sandbox="off")
    task = Task("Try the tools", workspace=tmp_path, agentic=True, max_iterations=8)
    result = run_task(task, settings, model=model)
    assert result.termination_reason == "final_answer"
    offered = [t["function"]["name"] for t in model.calls[0].tools or []]
    assert set(offered[-4:]) == set(everything.tools or ())  # only the ones asked for
    answers = [m["content"] for m in model.calls[-1].messages if m.get("role") == "tool"]
    assert answers[0] == "Echo: hello"
    assert "[image: image/png, " in answers[1] and "not shown" in answers[1]
    assert answers[2].count("[resource link: demo://resource/") == 2
    weather = json.loads(answers[3])
    assert set(weather) == {"temperature", "conditions", "humidity"}
