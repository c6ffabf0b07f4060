"""The sandbox shuts out the session's services by default, network or not: no /run, no
$XDG_RUNTIME_DIR, no agent/bus/display/tmux variables, and toolchain folders under $HOME
without the credentials kept there. Real bubblewrap, real sockets, real files."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.safety.box.sandbox import available
from localhand.safety.secrets.environment import host_service
from localhand.tools import run_shell
from sandbox_helpers import Listener, place_in_sight

needs_bwrap = pytest.mark.skipif(available() is not None, reason=f"no sandbox: {available()}")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return ws


@pytest.fixture
def run_socket() -> Iterator[Listener]:
    """A Unix socket planted in /run, where the session's services keep theirs."""
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here")
    path = f"/run/localhand-test-{uuid.uuid4().hex[:8]}.sock"
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, path)
    try:
        yield listener
    finally:
        listener.close()
        os.unlink(path)


CONNECT = (
    'python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); '
    "s.sendall(b'leak'); print('CONNECTED')\" {}"
)


@needs_bwrap
def test_a_socket_in_run_is_unreachable_with_the_network_on(
    workspace: Path, run_socket: Listener
) -> None:
    done = run_shell(CONNECT.format(run_socket.address) + "; ls /run", workspace)
    assert "CONNECTED" not in done.output
    assert os.path.basename(run_socket.address) not in done.output
    run_socket.close()
    assert run_socket.connections == 0 and not run_socket.received


@needs_bwrap
def test_the_runtime_dir_and_its_socket_are_hidden(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    runtime = place_in_sight(pytestconfig.rootpath, "runtime-")
    if runtime is None:
        pytest.skip("no directory in sight of the sandbox")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    (runtime / "note").write_text("runtime canary\n")
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(runtime / "bus"))
    try:
        command = f"echo xdg=$XDG_RUNTIME_DIR; cat {runtime}/note; " + CONNECT.format(
            runtime / "bus"
        )
        done = run_shell(command, workspace)
        listener.close()
        assert "xdg=\n" in done.output  # the variable is gone
        assert "runtime canary" not in done.output and "CONNECTED" not in done.output
        assert listener.connections == 0
    finally:
        listener.close()


SESSION_VARIABLES = {
    "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",
    "GPG_AGENT_INFO": "/run/user/0/gnupg/S.gpg-agent:0:1",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
    "DISPLAY": ":0",
    "WAYLAND_DISPLAY": "wayland-0",
    "XAUTHORITY": "/home/u/.Xauthority",
    "TMUX": "/tmp/tmux-0/default,1234,0",
    "TMUX_PANE": "%1",
    "STY": "1234.pts-0.host",
    "KITTY_LISTEN_ON": "unix:/tmp/kitty",
    "KITTY_WINDOW_ID": "1",
    "SOME_TOOL_SOCK": "x",
    "EDITOR_SOCKET_PATH": "y",
    "CUSTOM_BROKER": "unix:///var/run/broker.socket",
    "ABSTRACT_THING": "unix:abstract=/tmp/dbus-hidden",
}


@needs_bwrap
def test_session_variables_never_reach_a_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    for name, value in SESSION_VARIABLES.items():
        monkeypatch.setenv(name, value)
    # By value too: any variable naming a socket file, whatever its name.
    place = place_in_sight(pytestconfig.rootpath, "sock-")
    assert place is not None
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(place / "s"))
    # GOCACHE is on the box's allow-list: only its value (a socket) keeps it out.
    monkeypatch.setenv("GOCACHE", str(place / "s"))
    monkeypatch.setenv("GOPATH", "/srv/go")
    try:
        done = run_shell("env", workspace)
    finally:
        listener.close()
    shown = {line.split("=", 1)[0] for line in done.output.splitlines() if "=" in line}
    assert not shown & {*SESSION_VARIABLES, "GOCACHE"}
    assert {"GOPATH", "PATH", "HOME"} <= shown


def test_the_class_of_session_variables_is_recognised_by_name_and_value() -> None:
    for name, value in SESSION_VARIABLES.items():
        assert host_service(name, value), name
    assert host_service("ANYTHING", "/run/user/1000/pulse/native")
    assert not host_service("PATH", "/run/wrappers/bin:/usr/bin")  # NixOS: the box shows it
    assert not host_service("LANG", "C.UTF-8")
    assert not host_service("PROJECT_DIR", "/srv/project")


@needs_bwrap
def test_a_path_entry_under_run_still_runs(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here")
    tools = Path(f"/run/localhand-test-bin-{uuid.uuid4().hex[:8]}")
    tools.mkdir()
    try:
        (tools / "lh-tool").write_text("#!/bin/sh\necho tool from run\n")
        (tools / "lh-tool").chmod(0o755)
        monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
        done = run_shell("lh-tool", workspace)
        assert "tool from run" in done.output
    finally:
        (tools / "lh-tool").unlink()
        tools.rmdir()


@needs_bwrap
def test_toolchain_folders_show_their_tools_but_not_their_credentials(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    secrets = {
        ".cargo/credentials.toml": '[registry]\ntoken = "cio-canary-1111"\n',
        ".cargo/config.toml": '[registry]\nindex = "x"\ntoken = "cio2-canary-2222"\n',
        ".pulumi/credentials.json": '{"accessTokens": {"x": "pul-canary-3333"}}\n',
        ".fly/config.yml": "access_token: fo1_canary-4444\n",
        ".mytool/auth.json": '{"t": "auth-canary-5555"}\n',
        ".mytool/profile.ini": "[default]\napi_key = key-canary-6666\n",
        ".mytool/creds/session": "canary-7777\n",
        ".nvmish/.npmrc": "//registry.npmjs.org/:_authToken=npm-canary-8888\n",
    }
    harmless = {".cargo/env": "# cargo env canary-ok\n", ".mytool/settings.toml": "color = true\n"}
    for rel, text in {**secrets, **harmless}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    bins = []
    for tool in (".cargo", ".pulumi", ".fly", ".mytool", ".nvmish"):
        binary = home / tool / "bin" / f"lh{tool[1:]}"
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text(f"#!/bin/sh\necho {tool[1:]} runs\n")
        binary.chmod(0o755)
        bins.append(str(binary.parent))
    monkeypatch.setenv("PATH", ":".join([*bins, os.environ["PATH"]]))
    reads = " ".join(f"~/{rel}" for rel in [*secrets, *harmless])
    done = run_shell(f"lhcargo; lhpulumi; lhfly; lhmytool; lhnvmish; cat {reads}", workspace)
    for tool in ("cargo", "pulumi", "fly", "mytool", "nvmish"):
        assert f"{tool} runs" in done.output
    for number in ("1111", "2222", "3333", "4444", "5555", "6666", "7777", "8888"):
        assert f"canary-{number}" not in done.output, done.output
    assert "cargo env canary-ok" in done.output and "color = true" in done.output
