"""Where hooks come from: the user's own config.toml only. A workspace ``localhand.toml``
(trusted or not), a ``LOCALHAND_CONFIG`` file and a user file inside the workspace give none;
a mistake in the table is a clear error naming the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import distrusting, load_settings
from localhand.errors import ConfigError
from localhand.hooks.config import Hook, hooks_from_toml
from trust_helpers import pin
from workspaces import user_file

HOOKS = """
[hooks]
timeout_s = 12
[[hooks.post_edit]]
command = "ruff check {path}"
path = "*.py"
[[hooks.pre_tool]]
command = "./guard.sh"
match = "run_command"
timeout_s = 3
[[hooks.stop]]
command = "notify-send done"
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_the_user_file_gives_hooks(env: dict[str, str], project: Path) -> None:
    mine = user_file(Path(env["XDG_CONFIG_HOME"]), HOOKS)
    settings = load_settings(env=env, cwd=project)
    assert settings.hooks == (
        Hook("pre_tool", "./guard.sh", match="run_command", timeout_s=3.0),
        Hook("post_edit", "ruff check {path}", path="*.py", timeout_s=12.0),
        Hook("stop", "notify-send done", timeout_s=12.0),
    )
    assert settings.source_of("hooks") == f"user file {mine}"


def test_a_trusted_workspace_file_gives_no_hooks_and_says_so(
    env: dict[str, str], project: Path
) -> None:
    workspace_file = project / "localhand.toml"
    workspace_file.write_text('model = "ws-model"\n' + HOOKS)
    pin(workspace_file)
    heard: list[str] = []
    settings = load_settings(env=env, cwd=project, warn=heard.append)
    assert settings.model == "ws-model", "the file was read: only its hooks are not"
    assert settings.hooks == ()
    (warning,) = heard
    assert "hooks (commands localhand runs" in warning
    assert "where the model can write" in warning
    assert "config.toml (hooks: there only)" in warning


def test_a_bad_hooks_table_in_a_workspace_file_is_not_even_read(
    env: dict[str, str], project: Path
) -> None:
    (project / "localhand.toml").write_text("[hooks]\nwhatever = 1\n")
    pin(project / "localhand.toml")
    assert load_settings(env=env, cwd=project, warn=lambda _: None).hooks == ()


def test_a_localhand_config_file_gives_no_hooks(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    named = tmp_path / "elsewhere.toml"
    named.write_text(HOOKS)
    heard: list[str] = []
    settings = load_settings(
        env={**env, "LOCALHAND_CONFIG": str(named)}, cwd=project, warn=heard.append
    )
    assert settings.hooks == ()
    assert any("hooks are read only from your own" in said for said in heard)


def test_a_user_file_inside_the_workspace_gives_no_hooks(tmp_path: Path, project: Path) -> None:
    # The model's commands write the workspace; the user's config.toml is in it here.
    xdg = project / ".config"
    user_file(xdg, HOOKS)
    settings = load_settings(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)}, cwd=project)
    assert len(settings.hooks) == 3
    kept, messages = distrusting(settings, project)
    assert kept.hooks == ()
    (message,) = messages
    assert "hooks (" in message and "inside the workspace" in message
    elsewhere, said = distrusting(settings, tmp_path / "other")
    assert elsewhere.hooks == settings.hooks and said == []


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("[hooks]\npost_edit = 3\n", "hooks.post_edit"),
        ("[hooks]\non_edit = []\n", "hooks.on_edit"),
        ("[[hooks.post_edit]]\ncomand = 'x'\n", "hooks.post_edit[1].comand"),
        ("[[hooks.post_edit]]\npath = '*.py'\n", "hooks.post_edit[1].command"),
        ("[[hooks.pre_tool]]\ncommand = 'x'\ntimeout_s = -1\n", "hooks.pre_tool[1].timeout_s"),
        ("[hooks]\ntimeout_s = 'soon'\n", "hooks.timeout_s"),
        ("[[hooks.pre_tool]]\ncommand = 'x'\nmatch = 'run_(command'\n", "hooks.pre_tool[1].match"),
        ("[[hooks.stop]]\ncommand = 'x'\npath = '*.py'\n", "hooks.stop[1]"),
    ],
)
def test_a_mistake_names_the_key(
    env: dict[str, str], project: Path, table: str, named: str
) -> None:
    mine = user_file(Path(env["XDG_CONFIG_HOME"]), table)
    with pytest.raises(ConfigError) as caught:
        load_settings(env=env, cwd=project)
    assert named in str(caught.value)
    assert str(mine) in str(caught.value)


def test_the_command_line_says_what_is_wrong_without_a_traceback(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    user_file(xdg, "[[hooks.post_edit]]\ncomand = 'ruff check {path}'\n")
    done = localhand("config", env={**os.environ, "XDG_CONFIG_HOME": str(xdg)}, cwd=tmp_path)
    assert done.returncode == 2
    assert "hooks.post_edit[1].comand" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("hook", "tool", "path", "runs"),
    [
        (Hook("post_tool", "x", match="edit_file|write_file"), "write_file", None, True),
        (Hook("post_tool", "x", match="edit_file|write_file"), "read_file", None, False),
        (Hook("post_tool", "x", match="*_file"), "read_file", None, True),
        (Hook("post_tool", "x", match="run_command"), "run_command_x", None, False),
        (Hook("post_tool", "x", path="*.py"), "write_file", "src/app.py", True),
        (Hook("post_tool", "x", path="*.py"), "write_file", "./app.py", True),
        (Hook("post_tool", "x", path="*.py"), "write_file", "app.pyc", False),
        (Hook("post_tool", "x", path="*.py"), "run_command", None, False),
        (Hook("post_tool", "x"), "run_command", None, True),
    ],
)
def test_match_and_path(hook: Hook, tool: str, path: str | None, runs: bool) -> None:
    assert hook.applies(tool, path) is runs


def test_one_table_for_one_hook_is_taken_too() -> None:
    (hook,) = hooks_from_toml({"stop": {"command": "echo done"}}, "config.toml")
    assert hook == Hook("stop", "echo done")
