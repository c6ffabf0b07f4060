"""Skills through the real command line, in a subprocess, against the fake Ollama over a real
socket: ``localhand skills`` says what a run would offer, ``localhand trust`` takes a workspace
skill in, and a run loads it on demand (a call the model writes as text, parsed as any other
tool's) with its ``skill_loaded`` event in ``--jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import localhand
from localhand.testing import FakeOllama

SKILL = "---\nname: release\ndescription: How to cut a release here.\n---\nTag it vX.Y.Z.\n"


def test_a_skill_is_listed_trusted_and_loaded_on_demand(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".agents/skills/release").mkdir(parents=True)
    (ws / ".agents/skills/release/SKILL.md").write_text(SKILL)
    (ws / ".claude/skills/other").mkdir(parents=True)
    (ws / ".claude/skills/other/SKILL.md").write_text(SKILL.replace("release", "other"))
    listed = localhand("skills", "--workspace", str(ws), cwd=tmp_path)
    assert listed.returncode == 0 and "left out:" in listed.stdout
    assert "release/SKILL.md (skill) is not trusted yet" in listed.stdout

    trusted = localhand("trust", str(ws / ".agents/skills/release/SKILL.md"), "--yes")
    assert trusted.returncode == 0, trusted.stderr
    listed = localhand("skills", "--workspace", str(ws), cwd=tmp_path)
    assert listed.stdout.startswith("release: How to cut a release here.\n")
    assert "other/SKILL.md (skill) is not trusted yet" in listed.stdout

    as_text = '<tool_call>\n{"name": "read_skill", "arguments": {"name": "release"}}\n</tool_call>'
    script = [{"content": as_text}, {"content": "Tag it v1.2.0, as the skill says."}]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        done = localhand(
            *("run", "How do I cut a release?", "--workspace", str(ws), "--agentic"),
            *("--model", "qwen3:8b", "--jsonl"),
            host=server.url,
            cwd=tmp_path,
        )
        first, second = (r.body for r in server.requests if r.path == "/api/chat")
    assert done.returncode in (0, 3), done.stderr
    assert "read_skill" in [tool["function"]["name"] for tool in first["tools"]]
    assert "- release: How to cut a release here." in first["messages"][1]["content"]
    assert "other" not in first["messages"][1]["content"]
    assert "Tag it vX.Y.Z." not in json.dumps(first) and "Tag it vX.Y.Z." in json.dumps(second)
    assert second["messages"][: len(first["messages"])] == first["messages"]  # prefix kept
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    (loaded,) = [line for line in lines if line["type"] == "skill_loaded"]
    assert loaded["payload"]["name"] == "release" and loaded["payload"]["allowed_tools"] is None
    assert any("other/SKILL.md" in line["payload"].get("message", "") for line in lines)
