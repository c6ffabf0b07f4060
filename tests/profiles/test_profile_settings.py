"""Profiles and the think budget reach the settings from localhand.toml, the environment and
the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import options_of
from localhand.config.settings import load_settings
from localhand.errors import ConfigError
from trust_helpers import pin


def settings_from(tmp_path: Path, toml: str, **env: str):
    (tmp_path / "localhand.toml").write_text(toml)
    pin(tmp_path / "localhand.toml")  # as `localhand trust --yes` does
    return load_settings(env=dict(env), cwd=tmp_path)


def test_a_profile_table_changes_the_family_it_names(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, "[profiles.qwen3]\nthink_budget = 512\n")
    assert settings.profiles is not None
    assert settings.profiles.resolve("qwen3:8b").think_budget == 512
    assert settings.profiles.resolve("llama3.1:8b").name != "qwen3"


def test_without_profile_tables_the_built_in_profiles_apply(tmp_path: Path) -> None:
    assert settings_from(tmp_path, 'model = "qwen3:8b"\n').profiles is None


def test_a_mistaken_profile_table_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="thinking_budget"):
        settings_from(tmp_path, "[profiles.qwen3]\nthinking_budget = 512\n")


def test_the_think_budget_comes_from_the_environment_and_the_command_line(
    tmp_path: Path,
) -> None:
    assert settings_from(tmp_path, "", LOCALHAND_THINK_BUDGET="300").think_budget == 300
    with pytest.raises(ConfigError, match="think_budget"):
        settings_from(tmp_path, "", LOCALHAND_THINK_BUDGET="-1")
    options = options_of("run", ["x", "--think-budget", "0"])
    assert options["think_budget"] == 0
    options = options_of("batch", ["tasks.jsonl", "--think-budget", "64"])
    assert options["think_budget"] == 64
