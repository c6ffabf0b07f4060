"""Trust is never given to what the model wrote: a file the user names on the command line
(``--mcp-config``, a task file, a batch file) that a recorded run changed or created is not
trusted at its first use. Through the real command line, a real SQLite store (the run that
wrote the file is recorded by the first command), and a real terminal (a pty) for the
question; a symlink to another project's trusted ``localhand.toml`` is not obeyed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_helpers import in_a_terminal, localhand
from localhand import paths
from localhand.errors import ConfigError
from localhand.safety.trust.store import Seen, TrustStore, use_named
from localhand.store import open_store
from localhand.testing import FakeOllama
from workspaces import workspace_with


def written(path: str, content: str) -> list[object]:
    """A model that writes ``content`` to ``path`` in its workspace, then says so."""
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return [{"content": "", "tool_calls": [{"function": call}]}, "Written."]


def model_writes(workspace: Path, path: str, content: str) -> str:
    """Run ``localhand run`` whose model writes ``path``; the id of the run the store keeps."""
    with FakeOllama(written(path, content)) as fake:
        done = localhand(
            "run", "Tidy the project", "--agentic", "--verify", "true", "--json",
            cwd=workspace, host=fake.url,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (workspace / path).read_text() == content
    (run,) = open_store().runs()
    return run.id


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "project", {"readme.md": "a project\n"})


def refused_for(done: object, run_id: str, file: Path, named: str) -> None:
    said = " ".join(done.stderr.split())  # type: ignore[attr-defined]
    assert done.returncode == 2, said  # type: ignore[attr-defined]
    assert "Traceback" not in said
    assert "was written by the model" in said
    assert f"run {run_id}" in said and str(file) in said, "which run, which file"
    assert f"localhand trust {named}" in said, "how to trust it"


def test_an_mcp_config_the_model_wrote_is_not_started_at_its_first_use(
    workspace: Path, tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    server = {"mcpServers": {"evil": {"command": "touch", "args": [str(pwned)]}}}
    run_id = model_writes(workspace, ".mcp.json", json.dumps(server))
    with FakeOllama(["Done."]) as fake:
        done = localhand(
            "run", "say hi", "--simple", "--mcp-config", ".mcp.json", cwd=workspace, host=fake.url
        )
        assert fake.chat_requests == [], "nothing ran"
    refused_for(done, run_id, workspace / ".mcp.json", ".mcp.json")
    assert not pwned.exists(), "the server was never started"
    assert TrustStore().read(workspace / ".mcp.json").state == "unknown", "nor trusted"


def test_a_task_file_the_model_wrote_is_refused_and_trusted_once_reviewed(
    workspace: Path,
) -> None:
    run_id = model_writes(workspace, "task.yaml", "description: say hi\nagentic: false\n")
    with FakeOllama(["Hi.", "Hi."]) as fake:
        done = localhand("run", "--task-file", "task.yaml", cwd=workspace, host=fake.url)
        refused_for(done, run_id, workspace / "task.yaml", "task.yaml")
        assert localhand("trust", "task.yaml", "--yes", cwd=workspace).returncode == 0
        again = localhand("run", "--task-file", "task.yaml", cwd=workspace, host=fake.url)
        assert again.returncode == 0, again.stderr
        assert len(fake.chat_requests) == 1


def test_a_batch_file_the_model_wrote_is_refused(workspace: Path) -> None:
    line = {"description": "say hi", "workspace": ".", "verify": ["true"]}
    run_id = model_writes(workspace, "tasks.jsonl", json.dumps(line) + "\n")
    with FakeOllama(["Hi."]) as fake:
        done = localhand("batch", "tasks.jsonl", "--host", fake.url, cwd=workspace)
        assert fake.chat_requests == []
    refused_for(done, run_id, workspace / "tasks.jsonl", "tasks.jsonl")


def test_a_file_no_run_wrote_is_trusted_at_its_first_use(workspace: Path) -> None:
    model_writes(workspace, "notes.txt", "not a task\n")  # a recorded run, of another file
    (workspace / "task.yaml").write_text("description: say hi\nagentic: false\n")
    with FakeOllama(["Hi."]) as fake:
        done = localhand("run", "--task-file", "task.yaml", cwd=workspace, host=fake.url)
    assert done.returncode == 0, done.stderr


def test_at_a_terminal_the_run_is_shown_and_the_person_decides(workspace: Path) -> None:
    run_id = model_writes(workspace, "task.yaml", "description: say hi\nagentic: false\n")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    with FakeOllama(["Hi."]) as fake:
        env["OLLAMA_HOST"] = fake.url
        code, said = in_a_terminal(["run", "--task-file", "task.yaml"], workspace, env, b"n\n")
        assert code == 2, said
        shown = " ".join(said.split())
        assert f"run {run_id}" in shown and "Tidy the project" in shown
        assert "description: say hi" in shown, "the content, to review"
        code, said = in_a_terminal(["run", "--task-file", "task.yaml"], workspace, env, b"y\n")
        assert code == 0, said
        assert len(fake.chat_requests) == 1


def test_the_question_names_the_runs_and_a_yes_trusts(workspace: Path) -> None:
    run_id = model_writes(workspace, "plan.yaml", "goal: x\n")
    asked: list[Seen] = []

    def ask(seen: Seen, what: str) -> bool:
        asked.append(seen)
        return True

    use_named(workspace / "plan.yaml", "plan file", ask=ask)
    (seen,) = asked
    assert len(seen.written_by) == 1 and seen.written_by[0].startswith(f"run {run_id} ")
    assert use_named(workspace / "plan.yaml", "plan file").state == "trusted"


def test_a_store_that_cannot_be_read_fails_closed(workspace: Path) -> None:
    (workspace / "task.yaml").write_text("description: x\n")
    Path(os.environ["LOCALHAND_DB"]).write_bytes(b"not a database" * 100)
    with pytest.raises(ConfigError, match="cannot be read"):
        use_named(workspace / "task.yaml", "task file")


def test_a_db_this_process_could_not_open_as_a_store_holds_no_run(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--db garbage.db` once in a long-lived process (the Python API, the dashboard): localhand
    # recorded nothing there, so it does not make every file named later the model's.
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    monkeypatch.setattr(paths, "_claimed", set())  # the process's claims, for this test alone
    paths.claim(garbage)
    (workspace / "task.yaml").write_text("description: x\n")
    use_named(workspace / "task.yaml", "task file")  # no error: nothing says a run wrote it


# -- found files ------------------------------------------------------------------------------
def test_a_link_to_another_project_s_trusted_settings_is_not_obeyed(tmp_path: Path) -> None:
    other, mine = tmp_path / "other", tmp_path / "mine"
    other.mkdir()
    mine.mkdir()
    (other / "localhand.toml").write_text('model = "llama3.1:8b"\n')
    assert localhand("trust", "--yes", cwd=other).returncode == 0
    (mine / "localhand.toml").symlink_to(other / "localhand.toml")

    def model_asked() -> tuple[str, str]:
        with FakeOllama(["Hi."]) as fake:
            done = localhand("run", "say hi", "--simple", cwd=mine, host=fake.url)
            assert done.returncode == 0, done.stderr
            return fake.chat_requests[0].body["model"], " ".join(done.stderr.split())

    model, said = model_asked()
    assert model != "llama3.1:8b"
    assert "is a link to" in said and "the link's own path is not trusted" in said
    assert f"localhand trust {mine / 'localhand.toml'}" in said

    assert localhand("trust", "--yes", cwd=mine).returncode == 0  # the link's own path
    assert model_asked()[0] == "llama3.1:8b"
