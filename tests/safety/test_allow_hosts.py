"""The network proxy's allow-list: entries, the settings that give them, the hosts asked of the
user's package tools (real programs on PATH, standing in for pip, npm and go), and the way
back where bubblewrap cannot run. None of these needs bubblewrap."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.config.settings import distrusting, load_settings
from localhand.errors import ConfigError
from localhand.safety.box.allow_hosts import Entry, package_tool_hosts, parse_entry, url_entry
from localhand.safety.box.netproxy import NetProxy
from localhand.safety.box.sandbox import ProxySlot, run_sandbox
from localhand.tools import run_shell
from trust_helpers import pin


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("PyPI.org", Entry("pypi.org")),
        ("127.0.0.1:5432", Entry("127.0.0.1", 5432)),
        ("[::1]:8080", Entry("::1", 8080)),
        ("registry.example.com.", Entry("registry.example.com")),
    ],
)
def test_entries_are_hosts_with_an_optional_port(text: str, entry: Entry) -> None:
    assert parse_entry(text) == Entry(entry.host, entry.port, explicit=True)


@pytest.mark.parametrize("text", ["a b", "host:0", "host:99999", "http://x/", ""])
def test_a_bad_entry_says_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match=r"host|port"):
        parse_entry(text)


def test_an_entry_without_a_port_allows_the_web_ports_only() -> None:
    entry = parse_entry("pypi.org")
    assert entry.allows("pypi.org", 443) and entry.allows("pypi.org", 80)
    assert not entry.allows("pypi.org", 22) and not entry.allows("evil.org", 443)


def test_urls_give_their_host_and_file_urls_none() -> None:
    assert url_entry("https://pypi.example.com/simple") == Entry("pypi.example.com")
    assert url_entry("http://127.0.0.1:3141/root/pypi") == Entry("127.0.0.1", 3141)
    assert url_entry("file:///opt/wheels") is None
    assert url_entry("off") is None


def test_the_settings_come_from_a_config_outside_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    toml = '[sandbox]\nnetwork = "host"\nallow_hosts = ["pypi.example.com", "127.0.0.1:5432"]\n'
    (tmp_path / "localhand.toml").write_text(toml)
    named = {"LOCALHAND_CONFIG": str(tmp_path / "localhand.toml")}
    outside = load_settings(env=named, cwd=workspace)
    assert outside.sandbox_network == "host"
    assert outside.sandbox_allow_hosts == ("pypi.example.com", "127.0.0.1:5432")
    assert distrusting(outside, workspace)[0] == outside
    # The same file named but lying in the workspace: neither key is taken from it.
    (workspace / "localhand.toml").write_text(toml)
    inside = load_settings(env={"LOCALHAND_CONFIG": str(workspace / "localhand.toml")})
    kept, said = distrusting(inside, workspace)
    assert (kept.sandbox_network, kept.sandbox_allow_hosts) == ("proxy", ())
    assert said and "allow_hosts" in said[0]
    # Found where localhand starts and trusted: still not taken.
    pin(workspace / "localhand.toml")
    found = load_settings(env={}, cwd=workspace)
    assert (found.sandbox_network, found.sandbox_allow_hosts) == ("proxy", ())


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[sandbox]\nnetwork = "open"\n', 'network must be "proxy" or "host"'),
        ('[sandbox]\nallow_hosts = "pypi.org"\n', "allow_hosts must be a list of hosts"),
        ('[sandbox]\nallow_hosts = ["a b"]\n', "'a b' is not a host name"),
    ],
)
def test_bad_network_settings_say_what_to_write(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "localhand.toml").write_text(toml)
    with pytest.raises(ConfigError, match="sandbox") as info:
        load_settings(env={"LOCALHAND_CONFIG": str(tmp_path / "localhand.toml")})
    assert message in str(info.value)


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with only stand-ins for the package tools, which answer as configured ones do."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "pip": "echo \"global.index-url='https://mirror.example.com/simple'\"\n"
        "echo \"global.extra-index-url='https://extra.example.com/simple file:///opt/w'\"\n",
        "npm": 'test "$*" = "config get registry" && echo https://npm.example.com/\n',
        "go": 'printf "https://goproxy.example.com,direct\\nsum.golang.org\\n"\n',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return bin_dir


def test_the_hosts_are_asked_of_the_package_tools(tools: Path) -> None:
    hosts = {entry.host for entry in package_tool_hosts()}
    assert hosts == {
        "mirror.example.com",
        "extra.example.com",
        "npm.example.com",
        "goproxy.example.com",
        "sum.golang.org",
    }
    assert not any(entry.explicit for entry in package_tool_hosts())  # never this machine


def test_a_package_tool_inside_the_workspace_is_not_asked(tools: Path) -> None:
    hosts = {entry.host for entry in package_tool_hosts(skip_under=str(tools))}
    assert hosts == {"pypi.org", "files.pythonhosted.org"}  # pip's own defaults only


def test_without_configuration_pip_means_pypi(tools: Path) -> None:
    (tools / "pip").write_text("#!/bin/sh\nexit 0\n")
    hosts = {entry.host for entry in package_tool_hosts()}
    assert {"pypi.org", "files.pythonhosted.org"} <= hosts


@pytest.fixture
def hanging_upstream() -> Iterator[int]:
    """A server on loopback that accepts and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for connection in held:
        connection.close()
    server.close()


def test_closing_the_proxy_ends_a_connection_a_slow_upstream_holds(hanging_upstream: int) -> None:
    proxy = NetProxy([f"127.0.0.1:{hanging_upstream}"], tool_hosts=lambda _: ())
    client = socket.socket(socket.AF_UNIX)
    client.connect(proxy.socket_path())
    client.sendall(f"CONNECT 127.0.0.1:{hanging_upstream} HTTP/1.1\r\n\r\n".encode())
    client.settimeout(5)
    assert client.recv(100).startswith(b"HTTP/1.1 200")
    directory = proxy.directory
    proxy.close()
    assert client.recv(100) == b""  # ended, not left hanging
    assert directory is not None and not os.path.exists(directory)
    client.close()


def test_connections_beyond_the_bound_are_refused(
    hanging_upstream: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import localhand.safety.box.netproxy as netproxy

    monkeypatch.setattr(netproxy, "MAX_CONNECTIONS", 2)
    proxy = NetProxy([f"127.0.0.1:{hanging_upstream}"], tool_hosts=lambda _: ())
    clients = []
    try:
        for _ in range(3):
            client = socket.socket(socket.AF_UNIX)
            client.settimeout(5)
            client.connect(proxy.socket_path())
            clients.append(client)
            # The refused one may be answered and closed before its request is sent;
            # its 503 is still there to read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                client.sendall(f"CONNECT 127.0.0.1:{hanging_upstream} HTTP/1.1\r\n\r\n".encode())
        answers = [client.recv(200) for client in clients]
    finally:
        proxy.close()
        for client in clients:
            client.close()
    assert [a[:12] for a in answers] == [b"HTTP/1.1 200", b"HTTP/1.1 200", b"HTTP/1.1 503"]


def test_without_bubblewrap_commands_keep_the_machines_network_and_no_proxy(
    tmp_path: Path, no_bwrap: None
) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    warnings: list[str] = []
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append) as box:
        done = run_shell(
            f"env | grep -ci '^https_proxy=' ; exec 3<>/dev/tcp/127.0.0.1/{port} && echo REACHED",
            tmp_path,
        )
        assert isinstance(box.proxy, ProxySlot) and box.proxy.proxy is None  # never made
    server.close()
    assert done.output.split() == ["0", "REACHED"], done.output
    assert len(warnings) == 1 and "NOT be sandboxed" in warnings[0]


class _Asker:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def approve(self, command: str, risk: object) -> bool:
        self.asked.append(command)
        return True


@pytest.mark.parametrize("host", ["evil\x1b[2J.example", "a b.example", "x" * 300, "évil.example"])
def test_what_is_not_a_host_name_is_refused_without_a_question(host: str) -> None:
    """What a command asks the proxy for reaches the approval question: only a plain host
    name or address gets that far (no terminal control sequence, no spaces)."""
    proxy = NetProxy(tool_hosts=lambda _: ())
    asker = _Asker()
    with proxy.asking(asker):  # type: ignore[arg-type]
        refused = proxy.decide(host, 443)
    assert isinstance(refused, str) and "not a host" in refused
    assert asker.asked == []
