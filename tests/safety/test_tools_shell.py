"""run_shell and the run_command tool: no hanging, no floods, no processes left behind.

These run without the sandbox: they test the supervisor, which is all the containment there is
where bubblewrap cannot run, and they follow processes by PID, which a sandbox's own PID
namespace renumbers. tests/safety/test_sandbox.py runs the same kinds of command inside it."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.errors import ToolError
from localhand.safety.box.sandbox import Sandbox, use_sandbox
from localhand.safety.box.supervise import network_isolation
from localhand.safety.secrets.environment import is_secret
from localhand.tools import ShellTool, ToolLimits, Workspace, default_tools, run_shell
from localhand.tools import shell as shell_module
from localhand.types import ToolCall
from process_helpers import running


def wait_for(path: Path, timeout: float = 3.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.01)
    raise AssertionError(f"{path} was never written")


@pytest.fixture(autouse=True)
def no_sandbox() -> Iterator[None]:
    with use_sandbox(Sandbox(mode="off")):
        yield


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[ShellTool]:
    tool = ShellTool(Workspace(tmp_path), ToolLimits(command_min_timeout_ms=100))
    yield tool
    tool.close()


def test_output_and_exit_code(tmp_path: Path) -> None:
    done = run_shell("echo out; echo err >&2; echo again; exit 3", tmp_path)
    assert done.output == "out\nerr\nagain\n"
    assert done.exit_code == 3
    assert not done.timed_out


def test_runs_in_the_given_directory(tmp_path: Path) -> None:
    assert run_shell("pwd", tmp_path).output.strip() == str(tmp_path)


def test_stdin_is_closed_so_cat_returns_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run_shell("cat; echo done", tmp_path, timeout_s=5)
    assert done.output == "done\n"
    assert time.monotonic() - started < 2


def test_pagers_and_prompts_are_off(tmp_path: Path) -> None:
    done = run_shell('echo "$PAGER $GIT_PAGER $TERM $GIT_TERMINAL_PROMPT"', tmp_path)
    assert done.output == "cat cat dumb 0\n"


def test_extra_env_is_added(tmp_path: Path) -> None:
    assert run_shell("echo $FOO", tmp_path, env={"FOO": "bar"}).output == "bar\n"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    command = (
        "sleep 100 & echo $! > child.pid; (sleep 101 & echo $! > grandchild.pid; wait) & sleep 102"
    )
    started = time.monotonic()
    done = run_shell(command, tmp_path, timeout_s=0.5)
    assert time.monotonic() - started < 3
    assert done.timed_out
    assert done.exit_code == -signal.SIGTERM
    child = int(wait_for(tmp_path / "child.pid"))
    grandchild = int(wait_for(tmp_path / "grandchild.pid"))
    assert not running(child)
    assert not running(grandchild)


def test_background_child_holding_the_output_does_not_hang(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run_shell("sleep 100 & echo $! > bg.pid; echo started", tmp_path, timeout_s=30)
    assert time.monotonic() - started < 3
    assert done.detached
    assert done.exit_code == 0
    assert done.output == "started\n"
    assert done.stopped == 1
    assert not running(int(wait_for(tmp_path / "bg.pid")))


def test_output_keeps_head_and_tail(tmp_path: Path) -> None:
    command = "echo HEAD; yes x | head -n 50000; echo TAIL"
    done = run_shell(command, tmp_path, head_bytes=100, tail_bytes=100)
    total = len("HEAD\n") + 100_000 + len("TAIL\n")
    assert done.cut_bytes == total - 200
    assert done.output.startswith("HEAD\nx\n")
    assert f"\n[... {total - 200:,} bytes cut ...]\n" in done.output
    assert done.output.endswith("x\nTAIL\n")


def test_endless_output_is_capped_while_reading(tmp_path: Path) -> None:
    done = run_shell("yes flood", tmp_path, timeout_s=0.5, head_bytes=1000, tail_bytes=1000)
    assert done.timed_out
    assert done.cut_bytes > 0
    assert len(done.output) < 2100


def test_killed_by_signal(shell: ShellTool) -> None:
    result = shell.run_command("kill -9 $$")
    assert not result.ok
    assert result.content == "(no output)\n[Killed by SIGKILL.]"


def test_run_command_reports_exit_codes(shell: ShellTool) -> None:
    assert shell.run_command("echo hi").content == "hi\n[Exit code 0.]"
    failed = shell.run_command("echo bad >&2; exit 2")
    assert not failed.ok  # a normal result, just not ok
    assert failed.content == "bad\n[Exit code 2.]"


def test_run_command_timeout_message(shell: ShellTool) -> None:
    started = time.monotonic()
    result = shell.run_command("sleep 100", timeout_ms=300)
    assert time.monotonic() - started < 3
    assert not result.ok
    assert result.content == (
        "(no output)\n[Timed out after 0.3 s; the command and its child processes were killed.]"
    )


def test_run_command_bounds_the_timeout(tmp_path: Path) -> None:
    tool = ShellTool(Workspace(tmp_path))
    low = tool.run_command("true", timeout_ms=5)
    assert low.content == "(no output)\n[timeout_ms 5 is out of range; used 1000.]\n[Exit code 0.]"
    high = tool.run_command("true", timeout_ms=10**9)
    assert "used 600000" in high.content


def test_run_command_caps_output(tmp_path: Path) -> None:
    limits = ToolLimits(command_head_bytes=50, command_tail_bytes=50)
    result = ShellTool(Workspace(tmp_path), limits).run_command("seq 1 10000")
    assert result.content.startswith("1\n2\n")
    assert "bytes cut ...]" in result.content
    assert result.content.endswith("9999\n10000\n[Exit code 0.]")


def test_background_processes_end_when_the_command_returns(
    shell: ShellTool, tmp_path: Path
) -> None:
    result = shell.run_command("sleep 100 > /dev/null 2>&1 & echo $! > bg.pid")
    assert result.ok
    assert not running(int(wait_for(tmp_path / "bg.pid")))
    assert result.content == (
        "(no output)\n[The command left background processes running; they were stopped when "
        "it returned. To keep a server running while you use it, start it with run_command's "
        "background: true, then wait for it.]\n[Exit code 0.]"
    )


def test_detached_processes_end_too(tmp_path: Path) -> None:
    command = (
        "setsid sleep 100 > /dev/null 2>&1 & echo $! > setsid.pid; "
        "nohup sleep 101 > /dev/null 2>&1 & echo $! > nohup.pid; "
        "(setsid sh -c 'sleep 102 & echo $! > double.pid' > /dev/null 2>&1 &); "
        "sleep 0.2; echo launched"
    )
    done = run_shell(command, tmp_path, timeout_s=10)
    assert done.output == "launched\n"
    assert done.stopped == 3
    for name in ("setsid.pid", "nohup.pid", "double.pid"):
        assert not running(int(wait_for(tmp_path / name))), name


def test_empty_command_is_refused(shell: ShellTool) -> None:
    with pytest.raises(ToolError, match="command is empty"):
        shell.run_command("  ")


def test_run_command_through_the_registry(tmp_path: Path) -> None:
    with default_tools(tmp_path) as registry:
        result = registry.execute(
            ToolCall("run_command", {"command": "echo $((2 + 3))", "timeout_ms": "5000"})
        )
    assert result.ok
    assert result.content == "5\n[Exit code 0.]"


def test_secrets_are_stripped_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "AWS_SECRET_ACCESS_KEY": "x",
        "GITHUB_TOKEN": "x",
        "OPENAI_API_KEY": "x",
        "DB_PASSWORD": "x",
        "MYSQL_PWD": "x",
        "SSH_AUTH_SOCK": "/tmp/agent.sock",
        "GCP_CREDENTIALS": "x",
        "DATABASE_URL": "postgres://me:hunter2@db/app",
        "INNOCENT_NAME": "ghp_0123456789abcdef",
    }
    kept = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HTTPS_PROXY": "http://h:3128"}
    for name, value in {**secrets, **kept}.items():
        monkeypatch.setenv(name, value)
    done = run_shell("env", tmp_path)
    names = {line.split("=", 1)[0] for line in done.output.splitlines()}
    assert not names & set(secrets)
    assert set(kept) | {"PATH", "HOME"} <= names
    passed = run_shell("echo $GITHUB_TOKEN", tmp_path, keep_env=["GITHUB_TOKEN"])
    assert passed.output == "x\n"


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("API_KEY", "a", True),
        ("npm_config__authToken", "a", True),
        ("PGPASSWORD", "a", True),
        ("MYSQL_PWD", "a", True),
        ("PWD", "/home/me", False),
        ("OLDPWD", "/", False),
        ("PATH", "/usr/bin", False),
        ("HOME", "/root", False),
        ("LC_PAPER", "C", False),
        ("KEYBOARD_LAYOUT", "us", True),  # over-eager on purpose: dropping a setting is cheap
        ("HTTP_PROXY", "http://user:pass@proxy:3128", True),
        ("HTTP_PROXY", "http://proxy:3128", False),
        ("ANYTHING", "sk-abc123", True),
        ("ANYTHING", "AKIAABCDEFGH", True),
        ("EDITOR", "vim", False),
    ],
)
def test_what_counts_as_a_secret(name: str, value: str, secret: bool) -> None:
    assert is_secret(name, value) is secret


def test_commands_never_wait_for_a_person(tmp_path: Path) -> None:
    done = run_shell('echo "$EDITOR $GIT_EDITOR $MANPAGER $DEBIAN_FRONTEND"; tty', tmp_path)
    assert done.output == "true true cat noninteractive\nnot a tty\n"


def test_sigpipe_behaves_as_in_a_terminal(tmp_path: Path) -> None:
    done = run_shell("yes | head -n 2", tmp_path)
    assert (done.output, done.exit_code) == ("y\ny\n", 0)


def test_a_command_that_kills_its_supervisor_still_leaves_nothing(tmp_path: Path) -> None:
    command = "sleep 100 > /dev/null 2>&1 & echo $! > bg.pid; kill -9 $PPID; echo after"
    done = run_shell(command, tmp_path, timeout_s=10)
    assert not running(int(wait_for(tmp_path / "bg.pid")))
    assert done.exit_code is None
    tool = ShellTool(Workspace(tmp_path), policy="never")
    result = tool.run_command(command)
    assert result.content.endswith(
        "[The command's exit status is unknown: its supervisor ended early.]"
    )


def test_a_tree_of_many_background_processes_is_ended(tmp_path: Path) -> None:
    command = "f() { [ $1 -gt 0 ] && { f $(($1-1)) & f $(($1-1)) & }; sleep 97.31; }; f 5"
    started = time.monotonic()
    done = run_shell(command, tmp_path, timeout_s=1)
    assert done.timed_out
    assert time.monotonic() - started < 5
    leftovers = subprocess.run(
        ["pgrep", "-f", "sleep 97.31"], capture_output=True, text=True, check=False
    )
    assert leftovers.stdout == ""


def test_network_isolation_when_the_system_allows_it(tmp_path: Path) -> None:
    if network_isolation() is None:
        pytest.skip("this system cannot run a command without network access")
    interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
    assert run_shell(interfaces, tmp_path, isolate_network=True).output == "lo\n"
    assert run_shell(interfaces, tmp_path).output != "lo\n"


def test_network_isolation_refuses_to_run_where_it_is_impossible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell_module, "network_isolation", lambda: None)
    tool = ShellTool(Workspace(tmp_path), isolate_network=True)
    with pytest.raises(ToolError) as caught:
        tool.run_command("touch ran")
    assert str(caught.value).startswith("network isolation is on, but this system does not")
    assert not (tmp_path / "ran").exists()


def test_a_nul_byte_in_a_command_is_refused(shell: ShellTool) -> None:
    with pytest.raises(ToolError, match="NUL byte"):
        shell.run_command("echo a\0b")
