"""``localhand acp`` end to end: the ACP SDK's own client drives the agent as a child process
over stdio, against the fake Ollama server; the runs land in the store like any other."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("acp", "the ACP SDK", "pip install -e '.[acp]' (or '.[dev]')")

from acp import RequestError  # noqa: E402
from acp.schema import DeniedOutcome, McpServerStdio, RequestPermissionResponse  # noqa: E402

from acp_helpers import Editor, call, prompt, talk  # noqa: E402
from cli_helpers import localhand  # noqa: E402
from localhand.store import open_store  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402


def _tool_messages(server: FakeOllama) -> list[str]:
    """What the model read back from its tools, in the last request it was sent."""
    messages = server.chat_requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def _store_runs() -> list[Any]:
    return open_store(os.environ["LOCALHAND_DB"]).runs()


def test_a_prompt_reads_the_editors_buffer_and_its_edit_reaches_the_editor_as_a_diff(
    tmp_path: Path,
) -> None:
    source = tmp_path / "app.py"
    source.write_text("x = 1\n")
    editor = Editor(buffers={str(source): "x = 1\ny = 'unsaved in the editor'\n"})
    script = [
        call("read_file", path="app.py"),
        call("edit_file", path="app.py", old_text="x = 1", new_text="x = 2"),
        "Done: x is now 2.",
    ]
    with FakeOllama(script) as server:
        hello, answer = talk(editor, tmp_path, prompt("set x to 2 in app.py"), host=server.url)

    assert hello.agent_info.name == "localhand"
    assert hello.agent_capabilities.load_session is True
    assert answer.stop_reason == "end_turn"
    # the read went through the editor, and the model saw the unsaved buffer, not the disk
    assert editor.reads == [str(source)]
    assert "unsaved in the editor" in _tool_messages(server)[0]
    # each call: started in progress, then completed; the edit with its diff from the disk
    started = editor.of("tool_call")
    assert [(u.kind, u.status) for u in started] == [
        ("read", "in_progress"),
        ("edit", "in_progress"),
    ]
    finished = editor.of("tool_call_update")
    assert [u.tool_call_id for u in finished] == [u.tool_call_id for u in started]
    assert [u.status for u in finished] == ["completed", "completed"]
    diff = next(c for c in finished[1].content if c.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (str(source), "x = 1\n", "x = 2\n")
    assert source.read_text() == "x = 2\n"  # written to disk, as every run writes
    assert "x is now 2" in editor.text()
    # recorded like any run, and `localhand show` finds it
    [run] = _store_runs()
    assert run.description == "set x to 2 in app.py"
    assert run.workspace == str(tmp_path.resolve())
    assert run.finished_at is not None
    shown = localhand("show", run.id)
    assert shown.returncode == 0, shown.stderr
    assert "edit_file" in shown.stdout


def test_without_the_clients_fs_capability_files_are_read_from_disk(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("on disk\n")
    editor = Editor(buffers={str(tmp_path / "notes.txt"): "never asked for"})
    with FakeOllama([call("read_file", path="notes.txt"), "It says: on disk."]) as server:
        _, answer = talk(editor, tmp_path, prompt("read notes.txt"), host=server.url, reads=False)
    assert answer.stop_reason == "end_turn"
    assert editor.reads == []
    assert "on disk" in _tool_messages(server)[0]


@pytest.mark.parametrize("answer", ["allow", "reject"])
def test_a_command_that_needs_approval_is_asked_in_the_editor(tmp_path: Path, answer: str) -> None:
    editor = Editor(answer=answer)
    script = [call("run_command", command="echo hi > hi.txt"), "Finished."]
    with FakeOllama(script) as server:
        _, reply = talk(
            editor, tmp_path, prompt("write hi.txt"), "--approve", "always", host=server.url
        )
    assert reply.stop_reason == "end_turn"
    [asked] = editor.asked
    assert "echo hi > hi.txt" in asked.title
    [started] = editor.of("tool_call")
    assert asked.tool_call_id == started.tool_call_id  # the request belongs to the call shown
    [finished] = editor.of("tool_call_update")
    if answer == "allow":
        assert (tmp_path / "hi.txt").read_text() == "hi\n"
        assert finished.status == "completed"
    else:
        assert not (tmp_path / "hi.txt").exists()
        assert finished.status == "failed"
        assert "refused it in the editor" in _tool_messages(server)[0]
    # the question and its answer are on the run's timeline in the store
    [run] = _store_runs()
    events = open_store(os.environ["LOCALHAND_DB"]).events(run.id)
    decided = [e.data for e in events if e.type == "approval_decided"]
    assert [(e["approved"], e["by"]) for e in decided] == [(answer == "allow", "editor")]


def test_the_editor_is_not_asked_what_localhand_would_not_ask(tmp_path: Path) -> None:
    editor = Editor(answer="reject")
    script = [call("run_command", command="echo hi > hi.txt"), "Finished."]
    with FakeOllama(script) as server:
        talk(editor, tmp_path, prompt("write hi.txt"), host=server.url)  # --approve dangerous
    assert editor.asked == []
    assert (tmp_path / "hi.txt").read_text() == "hi\n"


def test_cancel_mid_run_ends_it_cancelled_with_its_partial_result_recorded(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    editor = Editor()
    slow = {"content": "word " * 200, "token_rate": 20}  # ten seconds of reply
    script = [call("read_file", path="a.txt"), slow]

    async def conversation(conn: Any, session_id: str) -> Any:
        async def cancel_after_the_first_call(update: Any) -> None:
            if update.session_update == "tool_call_update":
                await conn.cancel(session_id=session_id)

        editor.on_update = cancel_after_the_first_call
        return await prompt("read a.txt slowly")(conn, session_id)

    with FakeOllama(script) as server:
        began = time.monotonic()
        _, answer = talk(editor, tmp_path, conversation, host=server.url)
        took = time.monotonic() - began
    assert answer.stop_reason == "cancelled"
    assert took < 8, "the reply was waited for, not stopped"
    assert "word word" not in editor.text()
    [run] = _store_runs()
    assert run.termination_reason == "cancelled"
    assert run.result is not None and run.result["iterations_used"] >= 1


def test_cancel_while_a_permission_is_asked_refuses_the_command(tmp_path: Path) -> None:
    conn_of: dict[str, Any] = {}

    async def cancel_instead(tool_call: Any) -> RequestPermissionResponse:
        # as the protocol asks of a client: cancel the turn, answer open requests "cancelled"
        await conn_of["conn"].cancel(session_id=conn_of["session"])
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    editor = Editor(answer=cancel_instead)

    async def conversation(conn: Any, session_id: str) -> Any:
        conn_of.update(conn=conn, session=session_id)
        return await prompt("write hi.txt")(conn, session_id)

    script = [call("run_command", command="echo hi > hi.txt"), "Finished."]
    with FakeOllama(script) as server:
        _, answer = talk(editor, tmp_path, conversation, "--approve", "always", host=server.url)
    assert answer.stop_reason == "cancelled"
    assert not (tmp_path / "hi.txt").exists()
    [run] = _store_runs()
    assert run.termination_reason == "cancelled"


def test_the_editors_mcp_servers_are_the_runs_tools_and_their_calls_asked(
    tmp_path: Path,
) -> None:
    optional_deps.module("mcp_server_time", "a real MCP server", "pip install -e '.[dev]'")
    time_server = McpServerStdio(
        name="time", command=sys.executable, args=["-m", "mcp_server_time"], env=[]
    )
    editor = Editor(answer="allow")
    script = [call("get_current_time", timezone="Europe/Paris"), "It is that time in Paris."]
    with FakeOllama(script) as server:
        _, answer = talk(
            editor,
            tmp_path,
            prompt("Run the time tool for Europe/Paris."),
            host=server.url,
            mcp_servers=[time_server],
        )
    assert answer.stop_reason == "end_turn"
    offered = {t["function"]["name"] for t in server.chat_requests[0].body["tools"]}
    assert {"read_file", "get_current_time"} <= offered
    # a server the editor added is asked about, as any server without trust is
    [asked] = editor.asked
    assert "get_current_time" in asked.title
    [finished] = editor.of("tool_call_update")
    assert finished.status == "completed"
    assert "Europe/Paris" in _tool_messages(server)[0]


def test_plan_mode_shows_the_drafted_plans_steps_as_they_run(tmp_path: Path) -> None:
    steps = [
        {"description": "Make the file", "command": "touch made.txt"},
        {"description": "List the files", "command": "ls"},
    ]
    draft = {"content": json.dumps({"goal": "make made.txt", "steps": steps})}

    async def conversation(conn: Any, session_id: str) -> Any:
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        return await prompt("make made.txt")(conn, session_id)

    editor = Editor()
    with FakeOllama([draft]) as server:
        _, answer = talk(editor, tmp_path, conversation, host=server.url)
    editor_plans = editor.of("plan")
    assert answer.stop_reason == "end_turn"
    assert (tmp_path / "made.txt").exists()
    first, last = editor_plans[0], editor_plans[-1]
    assert [e.content for e in first.entries] == ["Make the file", "List the files"]
    assert [e.status for e in first.entries] == ["pending", "pending"]
    assert [e.status for e in last.entries] == ["completed", "completed"]
    assert any(e.status == "in_progress" for u in editor_plans for e in u.entries)
    [run] = _store_runs()
    assert run.result is not None and len(run.result["steps"]) == 2  # a plan's Result


def test_a_session_in_a_directory_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    async def conversation(conn: Any, session_id: str) -> Any:
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(tmp_path / "missing"), mcp_servers=[])
        return refused.value

    with FakeOllama([]) as server:
        _, error = talk(Editor(), tmp_path, conversation, host=server.url)
    assert "missing" in json.dumps(error.to_error_obj())


@pytest.mark.timeout(400)
def test_the_embedded_tiny_model_answers_in_the_editor(tmp_path: Path) -> None:
    optional_deps.tiny_gguf()  # skipped without the embedded extra, required in CI
    editor = Editor()
    _, answer = talk(
        editor,
        tmp_path,
        prompt("What is the capital of France?"),  # a question: one streamed answer
        "--backend",
        "embedded",
        "--max-reply-tokens",
        "64",  # the tiny model on a shared CPU: a short answer is enough to show the stream
        model=None,
        timeout=300,
    )
    assert answer.stop_reason in ("end_turn", "max_tokens", "max_turn_requests")
    assert editor.text().strip(), "no answer streamed"
    [run] = _store_runs()
    assert run.finished_at is not None
    assert run.status != "error", run.error
