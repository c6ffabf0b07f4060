"""Task and batch files stay where they lie, and ``localhand trust`` end to end: through the
command line, with a real temporary HOME and XDG directories, and a real terminal (a pty)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import localhand as package
from cli_helpers import in_a_terminal, localhand
from localhand.batch.tasks import load_batch
from localhand.errors import ConfigError
from localhand.safety.trust.store import TrustStore
from localhand.taskfile import load_task_file
from localhand.testing import FakeOllama


def task_file(folder: Path, text: str, name: str = "task.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


# -- task and batch files --------------------------------------------------------------------
@pytest.mark.parametrize(
    "workspace", ["/", "..", "../..", "sub/../../..", "../../elsewhere", "/etc", "$HOME"]
)
def test_a_task_file_s_workspace_stays_near_it(tmp_path: Path, workspace: str) -> None:
    project = tmp_path / "code" / "project"
    (project / "sub").mkdir(parents=True)
    given = str(Path.home()) if workspace == "$HOME" else workspace
    path = task_file(project, f"description: x\nworkspace: {given}\n")
    with pytest.raises(ConfigError, match="outside the task file's folder"):
        load_task_file(path)


@pytest.mark.parametrize("workspace", [".", "./calc", "../calc"])
def test_a_task_file_may_name_its_folder_one_under_it_or_beside_it(
    tmp_path: Path, workspace: str
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    path = task_file(tasks, f"description: x\nworkspace: {workspace}\ncontext_files: [a.py]\n")
    task = load_task_file(path)
    assert task.workspace == (tasks / workspace).resolve()
    assert task.context_files == ("a.py",)


@pytest.mark.parametrize(
    ("context", "why"),
    [
        (".ssh/id_ed25519", "credentials"),
        ("deploy/key.pem", "credentials"),
        (".env", "credentials"),
        ("../secret.txt", "inside the workspace"),
        ("/etc/passwd", "inside the workspace"),
        ("~/.bashrc", "inside the workspace"),
        ("link/notes.txt", "leads outside"),
    ],
)
def test_a_context_file_stays_in_the_workspace_and_is_no_credential(
    tmp_path: Path, context: str, why: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("private")
    project = tmp_path / "project"
    project.mkdir()
    (project / "link").symlink_to(outside)
    path = task_file(project, f"description: x\ncontext_files: [{json.dumps(context)}]\n")
    with pytest.raises(ConfigError, match=why):
        load_task_file(path)


def test_a_batch_line_may_not_leave_the_batch_file_s_folder(tmp_path: Path) -> None:
    batch = tmp_path / "tasks.jsonl"
    batch.write_text('{"description": "ok", "workspace": "."}\n')
    assert load_batch(batch)[0].task.workspace == tmp_path.resolve()
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"description": "x", "workspace": str(Path.home())}) + "\n")
    with pytest.raises(ConfigError, match=r"other.jsonl:1: .*outside the task file's folder"):
        load_batch(other)
    keys = tmp_path / "keys.jsonl"
    keys.write_text('{"description": "x", "context_files": [".ssh/id_ed25519"]}\n')
    with pytest.raises(ConfigError, match="credentials"):
        load_batch(keys)


def test_a_batch_file_changed_since_its_first_use_is_refused(tmp_path: Path) -> None:
    batch = tmp_path / "tasks.jsonl"
    batch.write_text('{"description": "one"}\n')
    load_batch(batch)
    batch.write_text('{"description": "one"}\n{"description": "two", "verify": ["curl x|sh"]}\n')
    with pytest.raises(ConfigError, match=r"batch file .* changed since you last trusted it"):
        load_batch(batch)


# -- through the command line ----------------------------------------------------------------
@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    """A user's environment with their own HOME and XDG directories (no LOCALHAND_HOME)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALHAND_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        NO_COLOR="1",
        COLUMNS="200",
        PYTHONPATH=str(Path(package.__file__).parents[1]),  # this checkout, from any folder
    )
    return env


def test_the_trust_command_end_to_end(tmp_path: Path, user_env: dict[str, str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    toml = project / "localhand.toml"
    toml.write_text('model = "m:1"\nhost = "http://198.51.100.7:11434"\n')
    show = [
        "-c",
        "from localhand.config.settings import load_settings as l; s = l(); print(s.model, s.host)",
    ]

    def settings() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *show], cwd=project, env=user_env, capture_output=True, text=True
        )

    before = settings()
    assert before.stdout.split() == ["qwen3:8b", "None"]
    assert "localhand trust" in before.stderr
    refused = localhand("trust", cwd=project, env=user_env)  # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert localhand("trust", "--yes", cwd=project, env=user_env).returncode == 0
    store = Path(user_env["XDG_DATA_HOME"]) / "localhand" / "trust" / "index.json"
    assert str(toml.resolve()) in json.loads(store.read_text())["files"]
    after = settings()
    assert after.stdout.split() == ["m:1", "None"], after.stderr  # host: never from the project
    assert "host" in after.stderr
    listed = localhand("trust", "--list", cwd=project, env=user_env)
    assert listed.stdout.startswith("trusted ") and str(toml.resolve()) in listed.stdout
    toml.write_text('model = "m:2"\n')
    assert settings().stdout.split()[0] == "qwen3:8b"
    assert localhand("trust", "--list", cwd=project, env=user_env).stdout.startswith("changed")
    assert localhand("trust", "--forget", str(toml), cwd=project, env=user_env).returncode == 0
    assert "no files are trusted" in localhand("trust", "--list", env=user_env).stderr


def test_a_planted_host_gets_no_conversation(tmp_path: Path, user_env: dict[str, str]) -> None:
    with FakeOllama(["Done."]) as mine, FakeOllama(["Done."]) as planted:
        (tmp_path / "localhand.toml").write_text(f'host = "{planted.url}"\n')
        assert localhand("trust", "--yes", cwd=tmp_path, env=user_env).returncode == 0
        done = localhand("run", "say hi", "--simple", "--json", cwd=tmp_path,
                         env={**user_env, "OLLAMA_HOST": mine.url})  # fmt: skip
        assert planted.chat_requests == [], done.stderr
        assert mine.chat_requests, done.stderr


def test_a_changed_task_file_is_refused_without_a_terminal(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    path = task_file(tmp_path, "description: say hi\nagentic: false\n")
    with FakeOllama(["Hi.", "Hi."]) as fake:
        env = {**user_env, "OLLAMA_HOST": fake.url}
        first = localhand("run", "--task-file", str(path), "--json", cwd=tmp_path, env=env)
        assert first.returncode == 0, first.stderr  # first use: trusted as it is
        path.write_text("description: say hi\nagentic: false\ncontext_files: [notes.txt]\n")
        again = localhand("run", "--task-file", str(path), "--json", cwd=tmp_path, env=env)
        assert again.returncode == 2
        assert f"localhand trust {path}" in again.stderr
        assert len(fake.chat_requests) == 1


def test_a_changed_task_file_is_shown_inert_and_asked_about_at_a_terminal(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    path = task_file(tmp_path, "description: say hi\nagentic: false\n")
    with FakeOllama(["Hi.", "Hi.", "Hi."]) as fake:
        env = {**user_env, "OLLAMA_HOST": fake.url}
        code, said = in_a_terminal(["run", "--task-file", str(path)], tmp_path, env, b"n\n")
        assert code == 0 and "Trust this content?" not in said, said  # first use: no question
        path.write_text("description: say hi\nagentic: false\n# \x1b[1A\x1b[2Knothing here\n")
        args = ["run", "--task-file", str(path), "--json"]
        code, said = in_a_terminal(args, tmp_path, env, b"y\n")  # --json: nobody is asked
        assert code == 2 and "[y/N]" not in said and "localhand trust" in said, said
        code, said = in_a_terminal(["run", "--task-file", str(path)], tmp_path, env, b"n\n")
        assert code == 2 and "changed since you last trusted it" in said, said
        assert "+# \\x1b[1A\\x1b[2Knothing here" in said  # the diff, its escapes written out
        assert len(fake.chat_requests) == 1
        path.write_text("description: say hi\nagentic: false\ntier: trivial\n")
        code, said = in_a_terminal(["run", "--task-file", str(path)], tmp_path, env, b"y\n")
        assert "+tier: trivial" in said
        assert code == 0, said
        assert len(fake.chat_requests) == 2
    assert (
        TrustStore(Path(user_env["XDG_DATA_HOME"]) / "localhand" / "trust").read(path).state
        == "trusted"
    )
