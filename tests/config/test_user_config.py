"""The user's own config.toml (XDG), its place among the layers, and ``localhand config``,
with a real HOME and XDG_CONFIG_HOME in a temporary directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import Settings, distrusting, load_settings
from localhand.errors import ConfigError
from trust_helpers import pin
from workspaces import user_file


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_the_user_file_sits_under_xdg_config_home_or_dot_config(home: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    in_xdg = user_file(xdg, 'model = "from-xdg"\n')
    user_file(home / ".config", 'model = "from-dot-config"\n')
    cwd = tmp_path / "project"
    cwd.mkdir()

    with_xdg = load_settings(env={"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}, cwd=cwd)
    assert (with_xdg.model, with_xdg.user_file) == ("from-xdg", str(in_xdg))
    assert with_xdg.source_of("model") == f"user file {in_xdg}"
    # XDG says a relative XDG_CONFIG_HOME is ignored: ~/.config then.
    relative = load_settings(env={"HOME": str(home), "XDG_CONFIG_HOME": "xdg"}, cwd=cwd)
    assert relative.model == "from-dot-config"
    assert load_settings(env={"HOME": str(home)}, cwd=cwd).model == "from-dot-config"
    assert load_settings(env={}, cwd=cwd) == Settings()  # no HOME: no user file


def test_layers_default_user_file_workspace_file_env_flag(home: Path, tmp_path: Path) -> None:
    mine = user_file(
        home / ".config",
        'model = "user-model"\nkeep_alive = "1h"\nnum_ctx_max = 4096\napprove = "never"\n'
        "think_budget = 100\n",
    )
    project = tmp_path / "project"
    project.mkdir()
    workspace_file = project / "localhand.toml"
    workspace_file.write_text('model = "ws-model"\nkeep_alive = "2h"\n')
    pin(workspace_file)
    env = {"HOME": str(home), "LOCALHAND_KEEP_ALIVE": "3h", "LOCALHAND_THINK_BUDGET": "7"}

    settings = load_settings(env=env, cwd=project).with_overrides(think_budget=9)

    assert settings.num_ctx_max == 4096 and settings.approve == "never"  # the user's: all keys
    assert settings.model == "ws-model"
    assert settings.keep_alive == "3h"
    assert settings.think_budget == 9
    assert dict(settings.sources) == {
        "num_ctx_max": f"user file {mine}",
        "approve": f"user file {mine}",
        "model": f"workspace file {workspace_file}",
        "keep_alive": "env LOCALHAND_KEEP_ALIVE",
        "think_budget": "flag",
    }
    assert settings.source_of("sandbox") == "default"


def test_a_user_file_in_the_workspace_is_held_to_the_workspace_rule(home: Path) -> None:
    """``--workspace ~``: the model's commands could write ~/.config/localhand/config.toml."""
    mine = user_file(
        home / ".config", 'approve = "never"\nmodel = "m:1"\n[sandbox]\nmode = "off"\n'
    )
    settings = load_settings(env={"HOME": str(home)}, cwd=home / ".config")
    assert (settings.approve, settings.sandbox) == ("never", "off")
    kept, said = distrusting(settings, home)
    assert (kept.approve, kept.sandbox, kept.model) == ("dangerous", "workspace-write", "m:1")
    assert len(said) == 1 and str(mine) in said[0] and "approve" in said[0]
    assert kept.source_of("approve") == "default"
    elsewhere = home / "project"
    elsewhere.mkdir()
    assert distrusting(settings, elsewhere) == (settings, [])


@pytest.mark.parametrize(
    ("text", "message"),
    [("modle = 'x'\n", "unknown setting(s) modle"), ("model = \n", "cannot read")],
)
def test_a_bad_user_file_is_named_in_the_error(home: Path, text: str, message: str) -> None:
    mine = user_file(home / ".config", text)
    with pytest.raises(ConfigError) as info:
        load_settings(env={"HOME": str(home)}, cwd=home)
    assert message in str(info.value) and str(mine) in str(info.value)


def test_a_missing_localhand_config_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"LOCALHAND_CONFIG names .* not a file"):
        load_settings(env={"LOCALHAND_CONFIG": str(tmp_path / "typo.toml")}, cwd=tmp_path)
    done = localhand(
        "run", "say hi", env={**os.environ, "LOCALHAND_CONFIG": str(tmp_path / "typo.toml")}
    )
    assert done.returncode == 2
    assert "typo.toml" in done.stderr and "unset LOCALHAND_CONFIG" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_config_command_prints_each_setting_and_its_source(home: Path, tmp_path: Path) -> None:
    mine = user_file(tmp_path / "xdg", 'keep_alive = "1h"\n[sandbox]\nmode = "read-only"\n')
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "LOCALHAND_MODEL": "env-model",
        "NO_COLOR": "1",
    }
    project = tmp_path / "project"
    project.mkdir()

    done = localhand("config", "--json", "--backend", "ollama", cwd=project, env=env)

    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    settings = document["settings"]
    assert settings["keep_alive"] == {"value": "1h", "source": f"user file {mine}"}
    assert settings["sandbox"] == {"value": "read-only", "source": f"user file {mine}"}
    assert settings["model"] == {"value": "env-model", "source": "env LOCALHAND_MODEL"}
    assert settings["backend"] == {"value": "ollama", "source": "flag --backend"}
    assert settings["approve"] == {"value": "dangerous", "source": "default"}
    assert document["files"]["user"] == str(mine) and document["files"]["user_read"]

    text = localhand("config", cwd=project, env=env)
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line.split()[1:] for line in text.stdout.splitlines() if line}
    assert lines["keep_alive"] == ["1h", "user", "file", str(mine)]
    assert lines["model"] == ["env-model", "env", "LOCALHAND_MODEL"]
    assert lines["approve"] == ["dangerous", "default"]
    assert f"user file:      {mine} (read)" in text.stdout


def test_the_config_command_shows_what_a_workspace_file_may_not_set(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "localhand.toml").write_text('model = "ws"\napprove = "never"\n')
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert localhand("trust", "--yes", "localhand.toml", cwd=project, env=env).returncode == 0

    done = localhand("config", "--json", cwd=project, env=env)

    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    wsfile = str(project / "localhand.toml")
    assert document["settings"]["model"] == {"value": "ws", "source": f"workspace file {wsfile}"}
    assert document["settings"]["approve"] == {"value": "dangerous", "source": "default"}
    assert any("approve" in note for note in document["notes"])
