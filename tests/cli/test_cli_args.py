"""The command-line parser (argparse): options, validation, usage errors and exit codes.

Parsing is checked through ``cli_helpers.options_of`` (no command runs); exit codes through
``main``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import options_of
from localhand.cli import COMMAND_MODULES, command_named, main
from localhand.cli import args as cli_args
from localhand.cli import plan as cli_plan
from localhand.types import Result


def usage_error(capsys: pytest.CaptureFixture[str], name: str, *args: str) -> str:
    """Parse ``args`` for command ``name``, expecting a usage error; its message."""
    with pytest.raises(SystemExit) as stopped:
        options_of(name, list(args))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"Try 'localhand {name} --help'" in err
    return err


def test_an_unknown_option_is_a_usage_error_that_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "Fix it.", "--bogus-flag", "3"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus-flag" in err
    assert "Traceback" not in err


def test_an_abbreviated_option_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, "run", "Fix it.", "--work", "/tmp")
    assert "--work" in err


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("run", ["x", "--max-iterations", "0"], "--max-iterations: must be at least 1, not 0"),
        ("run", ["x", "--max-iterations", "two"], "'two' is not a whole number"),
        ("run", ["x", "--timeout", "0.5"], "--timeout: must be at least 1"),
        ("run", ["x", "--token-budget", "-5"], "--token-budget"),
        ("plan", ["--step-timeout", "0"], "--step-timeout: must be at least 1"),
        ("batch", ["t.jsonl", "-j", "0"], "--concurrency: must be at least 1"),
        ("batch", ["t.jsonl", "--ray-max-retries", "-1"], "must be at least 0"),
        ("serve", ["--port", "65536"], "--port: must be from 0 to 65535, not 65536"),
        ("runs", ["-n", "0"], "--limit: must be at least 1"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(
    capsys: pytest.CaptureFixture[str], name: str, args: list[str], message: str
) -> None:
    assert message in usage_error(capsys, name, *args)


def test_numbers_in_range_parse_to_their_type() -> None:
    options = options_of(
        "run", ["x", "--max-iterations", "1", "--timeout", "2.5", "--token-budget", "900"]
    )
    assert (options["max_iterations"], options["timeout"], options["token_budget"]) == (1, 2.5, 900)
    options = options_of("serve", ["--port", "0"])
    assert options["port"] == 0


def test_agentic_and_simple_are_a_pair_and_absent_means_undecided(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert options_of("run", ["x"])["agentic"] is None
    assert options_of("run", ["x", "--agentic"])["agentic"] is True
    assert options_of("run", ["x", "--simple"])["agentic"] is False
    err = usage_error(capsys, "run", "x", "--agentic", "--simple")
    assert "--simple: not allowed with argument --agentic" in err


def test_a_backend_not_offered_is_a_usage_error_listing_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "x", "--backend", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err
    assert "'auto', 'ollama', 'openai', 'embedded'" in err


def test_repeated_verify_gives_one_check_each(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran: list[Any] = []

    def run(session: Any) -> Result:
        ran.append(session.task)
        return Result(session.task.id, "fail", "", "m", 0, 0, "final_answer", 1)

    monkeypatch.setattr("localhand.session.door.Session.run", run)
    args = ["run", "Fix it.", "-w", str(tmp_path), "--json", "--simple"]
    assert main([*args, "--verify", "pytest -q", "--verify", "ruff check ."]) == 1  # fail: 1
    (task,) = ran
    assert [check.command for check in task.checks] == ["pytest -q", "ruff check ."]
    assert (task.workspace, task.agentic) == (tmp_path.resolve(), False)


def test_serve_token_falls_back_to_localhand_token(monkeypatch: pytest.MonkeyPatch) -> None:
    assert options_of("serve", [])["token"] is None
    monkeypatch.setenv("LOCALHAND_TOKEN", "from-the-environment-123")
    assert options_of("serve", [])["token"] == "from-the-environment-123"
    given = options_of("serve", ["--token", "from-the-command-line"])
    assert given["token"] == "from-the-command-line"


def test_repeatable_and_paired_options_of_the_other_commands() -> None:
    options = options_of("batch", ["t.jsonl", "--host", "http://a", "--host", "http://b"])
    assert options["hosts"] == ["http://a", "http://b"]
    assert (options["executor"], options["ray_max_retries"]) == ("local", 2)
    assert options_of("replay", ["last"])["keep"] is False
    assert options_of("replay", ["last", "--keep"])["keep"] is True
    assert options_of("replay", ["last", "--keep", "--no-keep"])["keep"] is False
    options = options_of("plan", ["p.yaml", "-y", "-w", "."])
    assert (options["yes"], options["mode"], options["approve"]) == (True, None, "dangerous")


def test_no_arguments_print_the_help_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "usage: localhand" in out


def test_the_help_lists_every_command_with_its_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMAND_MODULES:
        summary = (command_named(name).run.__doc__ or "").split("\n")[0]
        assert name in out and summary[:40] in out


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("run", "--max-iterations N"),
        ("runs", "-n N, --limit N"),
        ("show", "--db FILE"),
        ("replay", "--keep, --no-keep"),
        ("serve", "--token TOKEN"),
        ("plan", "--step-timeout SECONDS"),
        ("batch", "-j N, --concurrency N"),
    ],
)
def test_each_command_help_lists_its_options(
    capsys: pytest.CaptureFixture[str], name: str, option: str
) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: localhand {name}")
    assert option in out


def test_unknown_commands_and_options_before_the_command_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["runn"]) == 2
    assert "invalid choice: 'runn'" in capsys.readouterr().err
    assert main(["--workspace", "x", "run"]) == 2
    assert "--workspace (options go after the command)" in capsys.readouterr().err


def test_a_configuration_error_exits_2_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "   "]) == 2
    err = capsys.readouterr().err
    assert 'say what to do: localhand run "TASK"' in err
    assert "Traceback" not in err


def test_ctrl_c_outside_a_run_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(
        cli_plan.COMMANDS, "plan", cli_args.Command(interrupted, cli_plan.plan_arguments)
    )
    assert main(["plan", "--goal", "x"]) == 130
    assert "cancelled" in capsys.readouterr().err


def test_the_choices_are_those_of_the_modules_that_use_them() -> None:
    from localhand.batch.driver import EXECUTORS
    from localhand.config.values import APPROVE_POLICIES, BACKENDS
    from localhand.plan.executor import MODES
    from localhand.safety.box.table import SANDBOX_SETTINGS
    from localhand.types import TIER_ITERATIONS

    assert cli_args.BACKENDS == BACKENDS
    assert cli_args.APPROVE_POLICIES == APPROVE_POLICIES
    assert cli_args.SANDBOX_SETTINGS == SANDBOX_SETTINGS
    assert tuple(TIER_ITERATIONS) == cli_args.TIERS
    assert cli_plan.MODES == MODES
    assert cli_args.EXECUTORS == EXECUTORS


def test_python_m_localhand_cli_plan_runs_the_plan_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "localhand.cli.plan", "plan", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: localhand plan" in done.stdout and "--step-timeout" in done.stdout


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from localhand import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"localhand {__version__}"


def test_plan_help_lists_where_the_mode_comes_from_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        options_of("plan", ["--help"])
    text = " ".join(capsys.readouterr().out.split())
    order = ["--mode,", "the plan file's own 'mode:'", "LOCALHAND_PLAN_MODE", "default_mode"]
    positions = [text.find(words, text.find("Chosen in this order")) for words in order]
    assert -1 not in positions and positions == sorted(positions), text
