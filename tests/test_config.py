from __future__ import annotations

from pathlib import Path

import pytest

from localhand.config import Settings, distrusting, load_settings
from localhand.errors import ConfigError


def test_defaults_without_file_or_env(tmp_path: Path) -> None:
    assert load_settings(env={}, cwd=tmp_path) == Settings()


def test_env_overrides_file_and_flags_override_env(tmp_path: Path) -> None:
    (tmp_path / "localhand.toml").write_text(
        '[localhand]\nmodel = "from-file"\nnum_ctx_max = 8192\nkeep_alive = "30m"\n'
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
        ("backend = 'gpu'\n", "must be one of auto"),
        ("think = 'maybe'\n", "true, false, low"),
        ("model = \n", "cannot read"),
    ],
)
def test_bad_settings_say_what_to_fix(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "localhand.toml").write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(env={}, cwd=tmp_path)
    assert message in str(info.value)


LOOSE = 'approve = "never"\n\n[sandbox]\nmode = "off"\nread = ["~/.ssh"]\n'


def test_a_config_inside_the_workspace_cannot_lower_safety(tmp_path: Path) -> None:
    (tmp_path / "localhand.toml").write_text('model = "m:1"\n' + LOOSE)
    settings = load_settings(env={}, cwd=tmp_path)
    assert (settings.sandbox, settings.approve) == ("off", "never")
    kept, said = distrusting(settings, tmp_path)
    assert (kept.sandbox, kept.approve, kept.sandbox_read) == ("workspace-write", "dangerous", ())
    assert kept.model == "m:1"  # what does not lower safety is still read
    assert len(said) == 1 and "sandbox = 'off'" in said[0] and "approve = 'never'" in said[0]


def test_the_same_settings_count_from_outside_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "localhand.toml").write_text(LOOSE)
    from_outside = load_settings(env={}, cwd=tmp_path)
    assert distrusting(from_outside, workspace) == (from_outside, [])
    (workspace / "localhand.toml").write_text(LOOSE)
    from_variables = load_settings(
        env={"LOCALHAND_SANDBOX": "off", "LOCALHAND_APPROVE": "never"}, cwd=workspace
    )
    kept, _ = distrusting(from_variables, workspace)
    assert (kept.sandbox, kept.approve) == ("off", "never")
    from_flags = load_settings(env={}, cwd=workspace).with_overrides(sandbox="off")
    assert distrusting(from_flags, workspace)[0].sandbox == "off"
