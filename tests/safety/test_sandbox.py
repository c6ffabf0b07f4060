"""The command sandbox (bubblewrap): what a command can reach, and the way back without it.

Each test runs real commands through ``run_shell`` or the ``run_command`` tool, with canaries
outside the workspace. The end-to-end attacks through the command line are in test_escape.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.errors import ConfigError, ToolError
from localhand.safety.box import sandbox as sandbox_module
from localhand.safety.box.sandbox import Sandbox, available, run_sandbox, use_sandbox
from localhand.tools import ShellTool, Workspace, run_shell
from sandbox_helpers import Listener, place_in_sight

pytestmark = pytest.mark.skipif(
    available() is not None, reason=f"no sandbox on this machine: {available()}"
)


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace, a canary beside it and a home with a key in it; returns the workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "f").write_text("in the workspace\n")
    (tmp_path / "canary").write_text("untouched\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- canary\n")
    (home / ".bashrc").write_text("# canary\n")
    monkeypatch.setenv("HOME", str(home))
    yield workspace
    assert (tmp_path / "canary").read_text() == "untouched\n"
    assert (home / ".bashrc").read_text() == "# canary\n"


@pytest.mark.parametrize(
    "command",
    [
        "echo pwned > ../canary",
        "cp -f f ../canary",
        "sed -i 's/untouched/pwned/' ../canary",
        "sed '1e echo pwned > ../canary' f",
        "trap 'echo pwned > ../canary' EXIT",
        'awk \'BEGIN { print "pwned" > "../canary" }\'',
        "IFS=,; c=cp,-f,f,../canary; $c",
        "echo ../canary | xargs rm -f",
        "python3 -c \"open('../canary', 'w').write('pwned')\"",
        "ln -s .. up; rm -rf up/",
        "dd if=/dev/zero of=$HOME/.bashrc bs=1 count=1",
        "echo pwned >> ~/.bashrc",
        "exec 3>../canary; echo pwned >&3",
    ],
)
def test_nothing_outside_the_workspace_can_be_changed(place: Path, command: str) -> None:
    run_shell(command, place, timeout_s=10)


def test_no_capability_is_left_to_undo_the_mounts(place: Path) -> None:
    """As root, bubblewrap keeps every capability unless told otherwise; with them a command
    could remount the root writable or unmount the tmpfs that hides $HOME."""
    done = run_shell(
        "grep CapEff /proc/self/status; mount -o remount,rw /; umount $HOME; "
        "unshare -Urm sh -c 'mount -o remount,rw / && umount $HOME'; echo pwned > ../canary",
        place,
    )
    assert "CapEff:\t0000000000000000" in done.output
    assert not Path("/etc/localhand-test-pwned").exists()


def test_the_workspace_is_writable_and_tmp_is_private(place: Path) -> None:
    marker = f"localhand-sandbox-{os.getpid()}"
    done = run_shell(f"echo ok > out && cat out && touch /tmp/{marker} && ls /tmp", place)
    assert done.exit_code == 0, done.output
    assert done.output.split()[0] == "ok" and marker in done.output.split()
    assert (place / "out").read_text() == "ok\n"
    assert not Path("/tmp", marker).exists()


def test_read_only_mode_protects_the_workspace_too(place: Path) -> None:
    done = run_shell("echo x > f", place, sandbox=Sandbox(mode="read-only"))
    assert done.exit_code != 0
    assert "Read-only file system" in done.output
    assert (place / "f").read_text() == "in the workspace\n"


def test_home_is_hidden_but_its_toolchains_still_run(place: Path) -> None:
    done = run_shell("cat ~/.ssh/id_rsa; ls -A ~; python3 -c 'print(6 * 7)'", place)
    assert "canary" not in done.output
    assert "No such file or directory" in done.output
    assert "42" in done.output


def test_paths_the_user_allows_can_be_read(place: Path) -> None:
    allowed = Sandbox(read=("~/.bashrc",))
    done = run_shell("cat ~/.bashrc; cat ~/.ssh/id_rsa", place, sandbox=allowed)
    assert "# canary" in done.output
    assert "PRIVATE KEY" not in done.output


def test_other_processes_and_their_environments_are_out_of_sight(place: Path) -> None:
    secret = "sk-canary-" + "7" * 24
    os.environ["LOCALHAND_TEST_CANARY_KEY"] = secret
    try:
        done = run_shell(
            f"cat /proc/{os.getpid()}/environ; cat /proc/$PPID/environ; "
            "for p in /proc/[0-9]*; do cat $p/environ; done; echo; ls -d /proc/[0-9]* | wc -l",
            place,
        )
    finally:
        del os.environ["LOCALHAND_TEST_CANARY_KEY"]
    assert secret not in done.output
    assert int(done.output.split()[-1]) < 10  # the sandbox's own few processes


def _sleepers(token: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if name.isdigit() and token.encode() in cmdline and b"sleep" in cmdline:
            found.append(int(name))
    return found


@pytest.mark.parametrize(
    "command",
    [
        "sleep 600.313 & echo started",
        "setsid nohup sleep 600.313 > /dev/null 2>&1 & echo started",
        "kill -9 $PPID; unset LOCALHAND_COMMAND_ID; sleep 600.313 & sleep 0.2; echo started",
    ],
)
def test_nothing_the_command_started_outlives_it(place: Path, command: str) -> None:
    run_shell(command, place, timeout_s=10)
    deadline = time.monotonic() + 3
    while _sleepers("600.313") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers("600.313") == []


def test_the_exit_status_is_the_commands_own(place: Path) -> None:
    assert run_shell("exit 3", place).exit_code == 3
    assert run_shell("kill -9 $$", place).exit_code == -9
    done = run_shell("sleep 5", place, timeout_s=0.3)
    assert done.timed_out


def test_without_network_no_socket_from_outside_is_reachable(place: Path, tmp_path: Path) -> None:
    tcp = Listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
    port = tcp.address[1]
    path = tmp_path / "outside.sock"
    unix = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(path))
    send = (
        "import socket, sys\n"
        "for family, address in ((socket.AF_INET, ('127.0.0.1', int(sys.argv[1]))),"
        " (socket.AF_UNIX, sys.argv[2])):\n"
        "    try:\n"
        "        s = socket.socket(family); s.settimeout(1); s.connect(address)\n"
        "        s.sendall(b'leaked'); print('sent')\n"
        "    except OSError as e: print('refused', e)\n"
    )
    (place / "send.py").write_text(send)
    try:
        done = run_shell(f"python3 send.py {port} {path}", place, isolate_network=True)
    finally:
        tcp.close()
        unix.close()
        received = bytes(tcp.received + unix.received)
    assert "sent" not in done.output
    assert received == b""
    assert stat.S_ISSOCK(path.stat().st_mode)


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_without_network_no_unix_socket_can_be_opened_even_one_in_sight(
    place: Path, sandbox: str
) -> None:
    """A server outside listening on a socket file the command can see (here in the
    workspace itself): the seccomp filter denies the socket, with or without bubblewrap."""
    path = place / "leak.sock"
    unix = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(path))
    connect = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(1); s.connect(sys.argv[1])\n"
        "s.sendall(b'leaked'); print('sent')\n"
    )
    (place / "connect.py").write_text(connect)
    try:
        done = run_shell(
            f"python3 connect.py {path}", place, sandbox=Sandbox(mode=sandbox), isolate_network=True
        )
    finally:
        unix.close()
        received = bytes(unix.received)
    assert "sent" not in done.output
    assert "Permission denied" in done.output
    assert received == b""


@pytest.fixture
def in_sight(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A directory outside the workspace that the sandbox leaves in sight (read-only)."""
    directory = place_in_sight(Path(request.config.rootpath), "sight-")
    if directory is None:
        pytest.skip("no directory outside /tmp and $HOME for the FIFO")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_without_network_no_fifo_outside_can_be_written(place: Path, in_sight: Path) -> None:
    """A FIFO outside the workspace that another program reads: a read-only mount does not
    stop a write into it, Landlock does."""
    fifo = in_sight / "leak.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError):
                if chunk := os.read(fd, 100):
                    received.append(chunk)
            time.sleep(0.02)
        os.close(fd)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.1)
    done = run_shell(
        f"echo leaked > {fifo}; echo ok > inside.txt",
        place,
        isolate_network=True,
        timeout_s=5,
    )
    reader.join()
    assert b"".join(received) == b""
    assert "Permission denied" in done.output
    assert (place / "inside.txt").read_text() == "ok\n"


def test_the_model_is_told_when_it_meets_the_walls(place: Path) -> None:
    tool = ShellTool(Workspace(place), policy="never")
    result = tool.run_command("echo x > /etc/localhand-test")
    assert not result.ok
    assert "[Sandbox: commands may write inside the workspace" in result.content


def test_without_bubblewrap_commands_run_as_before_after_one_clear_warning(
    place: Path, no_bwrap: None
) -> None:
    why = available()
    assert why is not None and "No permissions to creating new namespace" in why
    warnings: list[str] = []
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append):
        done = run_shell("echo fallback > out", place)
    assert done.exit_code == 0
    assert (place / "out").read_text() == "fallback\n"
    assert len(warnings) == 1 and "NOT be sandboxed" in warnings[0]


def test_a_required_sandbox_refuses_to_run_without_bubblewrap(place: Path, no_bwrap: None) -> None:
    refused = pytest.raises(ConfigError, match="sandbox is required")
    with refused, run_sandbox("required", network=True, read=(), warn=print):
        pass
    with use_sandbox(Sandbox(required=True)), pytest.raises(ToolError, match="nothing was run"):
        run_shell("touch ran", place)
    assert not (place / "ran").exists()


def test_the_sandbox_starts_quickly(place: Path) -> None:
    """Not a timing test (see benchmarks/sandbox_bench.py): a sandbox that failed to start
    would show up here as an error, not as slowness."""
    done = subprocess.run(
        Sandbox().wrap(["true"], place), capture_output=True, timeout=10, check=False
    )
    assert done.returncode == 0, done.stderr
    assert sandbox_module.fallback_warning(Sandbox()) is None


def test_a_pyc_cache_prefix_the_sandbox_hides_is_not_handed_to_commands(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python looks for compiled files only under the prefix: hidden, it compiles every import
    # of every command again. Without it, the __pycache__ folders beside the sources serve.
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pycache"))
    shown = run_shell('echo "${PYTHONPYCACHEPREFIX-unset}"', place, timeout_s=10)
    assert shown.output.strip() == "unset"
    inside = str(place / ".pycache")
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", inside)  # in the workspace: writable, kept
    assert run_shell('echo "$PYTHONPYCACHEPREFIX"', place, timeout_s=10).output.strip() == inside
