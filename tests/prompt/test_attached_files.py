"""``localhand run --file PATH``: files in the first prompt, confined to the workspace, text
only, capped in tokens and said so; through the real command line and the fake Ollama."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.errors import ConfigError
from localhand.prompt.attached_files import attach, expand
from localhand.testing import FakeOllama


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "src" / "one.py").write_text("ONE = 1\n")
    (root / "src" / "two.py").write_text("TWO = 2\n")
    (root / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0IHDR")
    (root / "src" / "id_rsa").write_text("TOKEN=abc\n")
    return root


def first_prompt(server: FakeOllama) -> str:
    return str(server.chat_requests[0].body["messages"][1]["content"])


LOOK = {"content": "", "tool_calls": [{"function": {"name": "list_directory", "arguments": {}}}]}


@pytest.mark.parametrize(("mode", "script"), [("--simple", []), ("--agentic", [LOOK])])
def test_files_and_globs_reach_the_first_prompt(project: Path, mode: str, script: list) -> None:
    with FakeOllama(script=[*script, "It subtracts."], models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "what does calc.py do?",
            mode,
            "-w",
            str(project),
            "--file",
            "calc.py",
            "--file",
            "src/*",
            "--json",
            host=server.url,
            cwd=project.parent,
        )
        prompt = first_prompt(server)
    assert done.returncode in (0, 3), done.stderr
    assert "Contents of calc.py:\n```\ndef add(a, b):\n    return a - b\n```" in prompt
    assert "Contents of src/one.py:" in prompt and "Contents of src/two.py:" in prompt
    assert "PNG" not in prompt and "TOKEN=abc" not in prompt
    # The glob's binary and credentials file are left out, and the person is told.
    assert "src/logo.png: a binary file" in done.stderr
    assert "src/id_rsa: it looks like credentials" in done.stderr


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("../outside.txt", "outside the workspace"),
        ("link.txt", "outside the workspace"),
        ("src/logo.png", "binary"),
        ("missing.py", "no such file"),
        ("src", "is a directory"),
        ("nothing/*.rs", "matches no text file"),
    ],
)
def test_a_file_that_cannot_be_attached_is_a_usage_error(
    project: Path, given: str, message: str
) -> None:
    (project.parent / "outside.txt").write_text("SECRET OUTSIDE")
    (project / "link.txt").symlink_to(project.parent / "outside.txt")
    env = {**os.environ, "OLLAMA_HOST": "127.0.0.1:9", "NO_COLOR": "1", "COLUMNS": "200"}
    done = localhand("run", "x", "-w", str(project), "--file", given, env=env, cwd=project)
    assert done.returncode == 2
    assert message in done.stderr and given in done.stderr
    assert "Traceback" not in done.stderr


def test_the_cap_is_in_tokens_and_what_it_cut_is_said(project: Path) -> None:
    (project / "big.py").write_text("".join(f"value_{i} = {i}\n" for i in range(4000)))
    (project / "after.py").write_text("AFTER = 1\n")

    attached = attach(project, ["calc.py", "big.py", "after.py"], cap_tokens=500)

    assert "Contents of calc.py:" in attached.text
    assert "big.py (cut to fit: about" in attached.text and "value_0 = 0" in attached.text
    assert "value_3999" not in attached.text
    assert attached.left_out == ["after.py"] and "AFTER" not in attached.text
    assert 400 < attached.tokens <= 500
    assert "capped at 500 tokens; cut: big.py" in attached.summary()
    assert "left out: after.py" in attached.summary() and attached.summary() in attached.text

    with FakeOllama(script=["ok"], models={"qwen3:8b": {}}) as server:
        (project / "huge.py").write_text("".join(f"v{i} = {i}\n" for i in range(40_000)))
        done = localhand(
            "run", "explain", "--simple", "-w", str(project), "--file", "huge.py",
            host=server.url, cwd=project,
        )  # fmt: skip
        prompt = first_prompt(server)
    assert done.returncode in (0, 3), done.stderr
    assert "capped at 16,000 tokens; cut: huge.py" in done.stderr
    assert "huge.py (cut to fit" in prompt and "v39999" not in prompt


def test_expand_keeps_order_once_each_and_reads_paths_from_the_workspace(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.parent)
    said: list[str] = []
    files = expand(["src/two.py", "src/*.py", str(project / "calc.py")], project, said.append)
    assert files == ["src/two.py", "src/one.py", "calc.py"]
    assert said == []
    monkeypatch.chdir(project / "src")  # a path from the current directory, inside
    assert expand(["one.py"], project, said.append) == ["src/one.py"]
    with pytest.raises(ConfigError, match="outside the workspace"):
        expand([str(project.parent)], project, said.append)


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_read(project: Path) -> None:
    (project.parent / "outside.txt").write_text("SECRET OUTSIDE")
    files = expand(["calc.py"], project, print)
    (project / "calc.py").unlink()
    (project / "calc.py").symlink_to(project.parent / "outside.txt")
    attached = attach(project, files)
    assert "SECRET OUTSIDE" not in attached.text and attached.left_out == ["calc.py"]


def test_a_plan_task_refuses_files(project: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"description": "x", "plan": {"goal": "g", "steps": []}}))
    env = {**os.environ, "OLLAMA_HOST": "127.0.0.1:9", "NO_COLOR": "1"}
    done = localhand("run", "--task-file", str(plan), "--file", "calc.py", env=env, cwd=project)
    assert done.returncode == 2
