from __future__ import annotations

from pathlib import Path

import pytest

from localhand.config.settings import Settings, distrusting, load_settings
from localhand.errors import ConfigError
from trust_helpers import pin


def trusted(path: Path, text: str) -> Path:
    """``path`` written with ``text`` and trusted as it is (``localhand trust --yes``)."""
    path.write_text(text)
    pin(path)
    return path


def test_defaults_without_file_or_env(tmp_path: Path) -> None:
    assert load_settings(env={}, cwd=tmp_path) == Settings()


def test_env_overrides_file_and_flags_override_env(tmp_path: Path) -> None:
    trusted(
        tmp_path / "localhand.toml",
        '[localhand]\nmodel = "from-file"\nnum_ctx_max = 8192\nkeep_alive = "30m"\n',
    )
    settings = load_settings(
        env={"LOCALHAND_MODEL": "from-env", "LOCALHAND_THINK": "low"}, cwd=tmp_path
    )
    assert settings.model == "from-env"
    assert settings.num_ctx_max == 8192
    assert settings.keep_alive == "30m"
    assert settings.think == "low"
    assert settings.with_overrides(model="from-flag", host=None).model == "from-flag"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("modle = 'x'\n", "unknown setting(s) modle"),
        ("num_ctx_max = 'big'\n", "num_ctx_max"),
        ("num_ctx_max = true\n", "True is not a whole number"),  # true is not 1
        ("price_in = -1\n", "must be at least 0, not -1"),
        ("backend = 'gpu'\n", "must be one of auto"),
        ("think = 'maybe'\n", "true, false, low"),
        ("model = \n", "cannot read"),
    ],
)
def test_bad_settings_say_what_to_fix(tmp_path: Path, toml: str, message: str) -> None:
    trusted(tmp_path / "localhand.toml", toml)
    with pytest.raises(ConfigError) as info:
        load_settings(env={}, cwd=tmp_path)
    assert message in str(info.value)


LOOSE = 'approve = "never"\n\n[sandbox]\nmode = "off"\nread = ["~/.ssh"]\n'


def test_a_config_inside_the_workspace_cannot_lower_safety(tmp_path: Path) -> None:
    trusted(tmp_path / "localhand.toml", 'model = "m:1"\n' + LOOSE)
    settings = load_settings(env={}, cwd=tmp_path, warn=lambda message: None)
    assert (settings.sandbox, settings.approve, settings.sandbox_read) == (
        "workspace-write",
        "dangerous",
        (),
    )
    assert settings.model == "m:1"  # what does not lower safety is still read
    assert distrusting(settings, tmp_path) == (settings, [])


def test_the_same_settings_count_from_outside_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = trusted(tmp_path / "localhand.toml", LOOSE)
    elsewhere = tmp_path / "elsewhere"  # where localhand starts: holds neither file
    elsewhere.mkdir()
    from_outside = load_settings(env={"LOCALHAND_CONFIG": str(outside)}, cwd=workspace)
    assert (from_outside.sandbox, from_outside.approve) == ("off", "never")
    assert distrusting(from_outside, workspace) == (from_outside, [])
    inside = trusted(workspace / "localhand.toml", LOOSE)
    named_inside = load_settings(env={"LOCALHAND_CONFIG": str(inside)}, cwd=elsewhere)
    kept, said = distrusting(named_inside, workspace)
    assert (kept.sandbox, kept.approve) == ("workspace-write", "dangerous")
    assert len(said) == 1 and "sandbox" in said[0] and "approve" in said[0]
    from_variables = load_settings(
        env={"LOCALHAND_SANDBOX": "off", "LOCALHAND_APPROVE": "never"}, cwd=workspace
    )
    kept, _ = distrusting(from_variables, workspace)
    assert (kept.sandbox, kept.approve) == ("off", "never")
    from_flags = load_settings(env={}, cwd=workspace).with_overrides(sandbox="off")
    assert distrusting(from_flags, workspace)[0].sandbox == "off"


# -- [plan] default_mode (seed 003's settings.defaultMode) -----------------------------------


def test_plan_default_mode_comes_from_the_plan_table(tmp_path: Path) -> None:
    trusted(
        tmp_path / "localhand.toml",
        '[localhand]\nmodel = "m:1"\n\n[plan]\ndefault_mode = "agentic"\n',
    )
    settings = load_settings(env={}, cwd=tmp_path)
    assert (settings.plan_mode, settings.model) == ("agentic", "m:1")
    assert "plan_mode" in settings.from_file
    assert Settings().plan_mode == "planner"


def test_plan_mode_flag_over_variable_over_file(tmp_path: Path) -> None:
    trusted(tmp_path / "localhand.toml", '[plan]\ndefault_mode = "agentic"\n')
    from_env = load_settings(env={"LOCALHAND_PLAN_MODE": "teacher"}, cwd=tmp_path)
    assert from_env.plan_mode == "teacher"
    assert from_env.with_overrides(plan_mode=None).plan_mode == "teacher"
    assert from_env.with_overrides(plan_mode="planner").plan_mode == "planner"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[plan]\ndefault_mode = "fixer"\n', "default_mode = 'fixer': must be one of"),
        ("[plan]\ndefault_mode = 3\n", "default_mode = 3: must be one of"),
        ('[plan]\nmode = "agentic"\n', "[plan] in "),
        ('plan = "agentic"\n', "[plan] in "),
    ],
)
def test_a_bad_plan_table_names_the_file_and_the_modes(
    tmp_path: Path, toml: str, message: str
) -> None:
    trusted(tmp_path / "localhand.toml", toml)
    with pytest.raises(ConfigError) as info:
        load_settings(env={"LOCALHAND_PLAN_MODE": "planner"}, cwd=tmp_path)
    said = str(info.value)
    assert message in said
    assert str(tmp_path / "localhand.toml") in said
    assert "teacher, planner, agentic" in said


def test_a_bad_plan_mode_variable_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"LOCALHAND_PLAN_MODE": "wild"}, cwd=tmp_path)
    assert "plan_mode='wild'" in str(info.value)
    assert "teacher, planner, agentic" in str(info.value)


def test_a_plan_mode_in_the_workspace_is_kept(tmp_path: Path) -> None:
    # Not a safety setting: agentic steps pass the same approval gate and sandbox.
    trusted(tmp_path / "localhand.toml", '[plan]\ndefault_mode = "agentic"\n')
    settings = load_settings(env={}, cwd=tmp_path)
    assert distrusting(settings, tmp_path) == (settings, [])


def test_the_plan_modes_are_those_of_the_executor_and_the_command() -> None:
    from localhand.cli import plan as cli_plan
    from localhand.config.values import PLAN_MODES
    from localhand.plan.executor import MODES

    assert PLAN_MODES == MODES == cli_plan.MODES
    assert Settings().plan_mode == cli_plan.DEFAULT_MODE


def test_nudge_limit_per_comes_from_a_run_table_or_the_environment(tmp_path: Path) -> None:
    config = trusted(tmp_path / "localhand.toml", '[run]\nnudge_limit_per = "run"\n')
    assert load_settings(env={}, cwd=tmp_path).nudge_limit_per == "run"
    env = {"LOCALHAND_NUDGE_LIMIT_PER": "streak"}
    assert load_settings(env=env, cwd=tmp_path).nudge_limit_per == "streak"
    bad = tmp_path / "bad"
    bad.mkdir()
    trusted(bad / "localhand.toml", '[run]\nnudge_limit_per = "never"\n')
    with pytest.raises(ConfigError, match=r'\[run\] in .* takes only nudge_limit_per = "streak"'):
        load_settings(env={}, cwd=bad)
    assert config.exists()
