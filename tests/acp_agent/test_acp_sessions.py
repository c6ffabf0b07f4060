"""ACP sessions that go on: a follow-up prompt carries the conversation on (as ``localhand run
--continue`` does: the earlier messages sent again unchanged, the run linked to its parent),
and ``session/load`` reopens a session in another ``localhand acp`` process, replaying it to
the editor. The ACP SDK's own client against the fake Ollama server, as in ``test_acp``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("acp", "the ACP SDK", "pip install -e '.[acp]' (or '.[dev]')")

from acp import RequestError, text_block  # noqa: E402

from acp_helpers import Editor, call, talk  # noqa: E402
from localhand.store import open_store  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402


def _runs() -> list[Any]:
    """The store's runs, oldest first."""
    with open_store(os.environ["LOCALHAND_DB"]) as store:
        return list(reversed(store.runs()))


def prompts(*texts: str, mode: dict[int, str] | None = None) -> Any:
    """A conversation of several prompts in one session (``mode``: the session mode to set
    before the prompt at that index); it answers the session id and the stop reasons."""

    async def conversation(conn: Any, session_id: str) -> Any:
        reasons = []
        for index, text in enumerate(texts):
            if mode and index in mode:
                await conn.set_session_mode(session_id=session_id, mode_id=mode[index])
            answer = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
            reasons.append(answer.stop_reason)
        return session_id, reasons

    return conversation


def loaded(editor: Editor, session_id: str, cwd: Path, *texts: str) -> Any:
    """A conversation that lists the sessions kept in ``cwd``, reopens ``session_id``, then
    prompts ``texts``; it answers the load's answer, the updates the replay sent, the stop
    reasons and the listing."""

    async def conversation(conn: Any, _: str) -> Any:
        listing = await conn.list_sessions(cwd=str(cwd))
        answer = await conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
        replayed = list(editor.updates)
        reasons = []
        for text in texts:
            reply = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
            reasons.append(reply.stop_reason)
        return answer, replayed, reasons, listing.sessions

    return conversation


def test_a_follow_up_prompt_carries_the_conversation_on(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    editor = Editor()
    script = [
        call("read_file", path="a.txt"),
        "a.txt says alpha.",
        call("read_file", path="a.txt"),
        "Still alpha.",
    ]
    with FakeOllama(script) as server:
        _, (_, reasons) = talk(
            editor, tmp_path, prompts("Read a.txt", "Read it once more"), host=server.url
        )
        first, second = server.chat_requests[1], server.chat_requests[2]
    assert reasons == ["end_turn", "end_turn"]
    earlier, sent = first.body["messages"], second.body["messages"]
    assert sent[: len(earlier)] == earlier, "the earlier messages, unchanged: the cached prefix"
    assert sent[len(earlier)] == {"role": "assistant", "content": "a.txt says alpha."}
    assert sent[len(earlier) + 1 :] == [{"role": "user", "content": "Read it once more"}]
    parent, child = _runs()
    assert (parent.continues, child.continues) == (None, parent.id)
    assert child.description == "Read it once more"
    # each prompt's tool call has its own id: an editor files updates under it
    started = [u.tool_call_id for u in editor.of("tool_call")]
    assert len(started) == 2 and len(set(started)) == 2


def test_a_plan_is_drafted_afresh_and_the_next_prompt_goes_on_from_the_last_conversation(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    steps = [{"description": "List them", "command": "ls"}]
    draft = {"content": json.dumps({"goal": "list the files", "steps": steps})}
    script = [call("read_file", path="a.txt"), "alpha it is.", draft, "Done again."]
    conversation = prompts("Read a.txt", "List the files", "Go on", mode={1: "plan", 2: "agent"})
    with FakeOllama(script) as server:
        _, (_, reasons) = talk(Editor(), tmp_path, conversation, host=server.url)
        requests = server.chat_requests
    assert reasons == ["end_turn"] * 3
    drafted = json.dumps(requests[2].body["messages"])
    assert "List the files" in drafted and "Read a.txt" not in drafted  # a plan of its own
    went_on = requests[3].body["messages"]
    assert went_on[: len(requests[1].body["messages"])] == requests[1].body["messages"]
    assert went_on[-1] == {"role": "user", "content": "Go on"}
    first, plan, last = _runs()
    assert (plan.continues, last.continues) == (None, first.id)  # past the plan, to the talk


def test_a_run_that_left_no_conversation_is_passed_over(tmp_path: Path) -> None:
    editor = Editor()
    # the model is not the server's: the first prompt fails before any model turn
    script = [call("list_directory", path="."), "Hello."]
    with FakeOllama(script, models={"llama3.1:8b": {"tools": True}}) as server:
        _, (session_id, _) = talk(editor, tmp_path, prompts("Greet me"), host=server.url)
        assert server.chat_requests == []
        reopened = Editor()
        _, (_, _, reasons, _) = talk(
            reopened,
            tmp_path,
            loaded(reopened, session_id, tmp_path, "Say hello"),
            host=server.url,
            model="llama3.1:8b",
            opens=False,
        )
        request = server.chat_requests[0]
    assert "does not have the model" in editor.text()  # the first prompt's error, shown
    assert "does not have the model" in reopened.text()  # and shown again when reopened
    assert reasons == ["end_turn"]
    assert "Greet me" not in json.dumps(request.body["messages"])  # started afresh
    assert request.body["messages"][-1]["role"] == "user"
    failed, fresh = _runs()
    assert failed.status == "error" and fresh.continues is None


def _record(session_id: str) -> Path:
    return Path(os.environ["LOCALHAND_HOME"]) / "acp-sessions" / f"{session_id}.json"


def test_a_session_reopened_in_another_process_is_replayed_then_carried_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    script = [
        call("read_file", path="a.txt"),
        "a.txt says alpha.",
        call("read_file", path="a.txt"),
        "Still alpha.",
    ]
    reopened = Editor()
    with FakeOllama(script) as server:
        _, (session_id, _) = talk(Editor(), tmp_path, prompts("Read a.txt"), host=server.url)
        record = json.loads(_record(session_id).read_text())
        mode = stat.S_IMODE(_record(session_id).stat().st_mode)
        _, (answer, replayed, reasons, listing) = talk(
            reopened,
            tmp_path,
            loaded(reopened, session_id, tmp_path, "Read it once more"),
            host=server.url,
            opens=False,
        )
        first, second = server.chat_requests[1], server.chat_requests[2]
    [run] = record["runs"]
    assert (record["workspace"], record["mode"], mode) == (str(tmp_path.resolve()), "agent", 0o600)
    assert answer.modes.current_mode_id == "agent"
    # the editor's history (session/list) has it, named by its first prompt
    [listed] = listing
    assert (listed.session_id, listed.cwd, listed.title) == (
        session_id,
        record["workspace"],
        "Read a.txt",
    )
    assert listed.updated_at
    # the conversation as the editor saw it, before the load was answered
    assert [u.session_update for u in replayed] == [
        "user_message_chunk",
        "tool_call",
        "agent_message_chunk",
        "agent_message_chunk",
    ]
    prompt_chunk, read, said, ended = replayed
    assert prompt_chunk.content.text == "Read a.txt"
    assert (read.kind, read.status, read.title) == ("read", "completed", "read_file a.txt")
    assert "alpha" in read.content[0].content.text
    assert said.content.text == "a.txt says alpha."
    assert ended.content.text.strip() == "■ unverified (final_answer)"  # as the run ended
    # then the next prompt goes on from it: the same prefix, the run linked to the first
    assert reasons == ["end_turn"]
    earlier, sent = first.body["messages"], second.body["messages"]
    assert sent[: len(earlier)] == earlier
    assert sent[-1] == {"role": "user", "content": "Read it once more"}
    parent, child = _runs()
    assert (parent.id, child.continues) == (run, parent.id)
    assert json.loads(_record(session_id).read_text())["runs"] == [parent.id, child.id]
    live = [u.tool_call_id for u in reopened.of("tool_call")]
    assert len(set(live)) == 2, "the replayed call and the new one have ids of their own"


def test_a_reopened_plan_session_shows_its_steps_and_its_mode(tmp_path: Path) -> None:
    steps = [
        {"description": "Make the file", "command": "touch made.txt"},
        {"description": "List the files", "command": "ls"},
    ]
    draft = {"content": json.dumps({"goal": "make made.txt", "steps": steps})}
    reopened = Editor()
    with FakeOllama([draft]) as server:
        _, (session_id, _) = talk(
            Editor(), tmp_path, prompts("make made.txt", mode={0: "plan"}), host=server.url
        )
        _, (answer, replayed, _, _) = talk(
            reopened, tmp_path, loaded(reopened, session_id, tmp_path), opens=False
        )
    assert answer.modes.current_mode_id == "plan"
    assert replayed[0].content.text == "make made.txt"
    [plan] = [u for u in replayed if u.session_update == "plan"]
    entries = [(e.content, e.status) for e in plan.entries]
    assert entries == [("Make the file", "completed"), ("List the files", "completed")]


def test_reopening_refuses_an_unknown_session_another_directory_or_another_store(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeOllama([call("list_directory", path="."), "Two files."]) as server:
        _, (session_id, _) = talk(Editor(), tmp_path, prompts("List the files"), host=server.url)

    async def refusals(conn: Any, _: str) -> list[str]:
        refused = []
        listing = await conn.list_sessions()
        assert listing.sessions == [], "kept with another store's runs"
        for cwd, sid in [
            (tmp_path, "0123456789abcdef"),
            (tmp_path, "../x"),
            (elsewhere, session_id),
            (tmp_path, session_id),
        ]:
            with pytest.raises(RequestError) as error:
                await conn.load_session(cwd=str(cwd), session_id=sid, mcp_servers=[])
            refused.append(json.dumps(error.value.to_error_obj()))
        return refused

    other = tmp_path / "other.db"
    _, (unknown, outside, moved, store) = talk(
        Editor(), tmp_path, refusals, "--db", str(other), opens=False
    )
    assert "Invalid params" in unknown and "no session 0123456789abcdef" in unknown
    assert "no session ../x" in outside
    assert str(tmp_path.resolve()) in moved and str(elsewhere) in moved
    assert f"--db {Path(os.environ['LOCALHAND_DB']).resolve()}" in store
