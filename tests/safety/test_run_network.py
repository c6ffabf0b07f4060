"""One network namespace per run (issue 41): the commands of a run share the box's loopback,
held by a box of the run's own from its first command with network to its end, so a server a
background command started serves the run's next commands, and nothing outside the run: not
this machine's processes, not another run. Real bubblewrap, real servers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.safety.box.proc import find_marked
from localhand.safety.box.sandbox import ProxySlot, available, run_sandbox
from localhand.safety.box.supervise import MARKER_VAR
from localhand.session.door import Session
from localhand.tools import ToolRegistry, default_tools
from localhand.types import ToolCall
from stop_helpers import survivors

pytestmark = pytest.mark.skipif(
    available() is not None, reason=f"no sandbox on this machine: {available()}"
)
MARKED = f"echo ${MARKER_VAR} > marker; "


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def reached(port: int) -> bool:
    """Whether a process outside every box connects to ``port`` on this machine's loopback."""
    with socket.socket() as client:
        client.settimeout(2)
        return client.connect_ex(("127.0.0.1", port)) == 0


def fetch(port: int, python: str = sys.executable) -> str:
    script = f"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)"
    return f'{python} -c "{script}"'


def serve(tools: ToolRegistry, port: int) -> None:
    server = f"{MARKED}{sys.executable} -m http.server {port} --bind 127.0.0.1"
    tools.execute(ToolCall("run_command", {"command": server, "background": True}))
    waited = tools.execute(ToolCall("wait", {"job": 1, "until": "Serving", "timeout": 20}))
    assert "matches" in waited.content, waited.content


def test_a_background_server_serves_the_runs_commands_and_nothing_outside(
    tmp_path: Path,
) -> None:
    port, other = free_port(), tmp_path / "other"
    other.mkdir()
    with run_sandbox("required", network=True, read=(), warn=lambda _: None) as box:
        with default_tools(tmp_path, policy="never") as tools:
            serve(tools, port)
            got = tools.execute(ToolCall("run_command", {"command": fetch(port)}))
            assert got.content.startswith("200"), got.content
            assert not reached(port), "a process outside the run reached the run's server"
            with (
                run_sandbox("required", network=True, read=(), warn=lambda _: None),
                default_tools(other, policy="never") as elsewhere,
            ):  # another run: a network of its own
                refused = elsewhere.execute(ToolCall("run_command", {"command": fetch(port)}))
                assert not refused.ok and "Connection refused" in refused.content
        slot = box.proxy
    assert isinstance(slot, ProxySlot) and slot.network is not None, "no network of the run's"
    holder = slot.network
    assert find_marked(MARKER_VAR, holder.holder.marker) == [], "the holder outlived the run"
    assert survivors(tmp_path) == [], "the server outlived the run"


def test_without_network_a_command_has_its_own_namespace_still(tmp_path: Path) -> None:
    port = free_port()
    with (
        run_sandbox("required", network=True, read=(), warn=lambda _: None),
        default_tools(tmp_path, policy="never") as tools,
        default_tools(tmp_path, policy="never", isolate_network=True) as offline,
    ):
        serve(tools, port)
        cut_off = offline.execute(ToolCall("run_command", {"command": fetch(port)}))
        assert not cut_off.ok, "a command without network reached the run's loopback"


def test_a_run_starts_a_server_waits_for_it_and_reaches_it(tmp_path: Path) -> None:
    port = free_port()
    server = f"{MARKED}python3 -m http.server {port} --bind 127.0.0.1"
    model = ScriptedModel([
        call("run_command", command=server, background=True),
        call("wait", job=1, until="Serving", timeout=20),
        call("run_command", command=fetch(port)),
        "It serves.",
    ])  # fmt: skip
    task = Task("Serve and fetch", workspace=tmp_path, agentic=True)
    result = Session(task, Settings(sandbox="required", approve="never"), model=model).run()
    assert model.calls[3].messages[-1]["content"].startswith("200"), model.calls[3].messages[-1]
    assert result.jobs is not None and result.jobs[0]["ended"] == "stopped"
    assert survivors(tmp_path) == [], "the server outlived the run"
    assert not reached(port)


AS_NOBODY = """
import socket, sys
from localhand.safety.box.sandbox import run_sandbox
from localhand.tools import default_tools
from localhand.types import ToolCall
with run_sandbox("required", network=True, read=(), warn=lambda _: None):
    with default_tools(sys.argv[1], policy="never") as tools:
        def run(name, **arguments):
            return tools.execute(ToolCall(name, arguments)).content
        server = "python3 -m http.server %s --bind 127.0.0.1" % sys.argv[2]
        run("run_command", command=server, background=True)
        print(run("wait", job=1, until="Serving", timeout=20))
        print(run("run_command", command=sys.argv[3] + "; id -u"))
        print("outside:", socket.socket().connect_ex(("127.0.0.1", int(sys.argv[2]))) == 0)
"""
SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not SYSTEM_PYTHON.exists(),
    reason="needs root, setpriv and a system python3 to run a run as nobody",
)
def test_where_bubblewrap_runs_unprivileged_the_commands_share_the_network_as_their_user() -> None:
    """As a user without privileges bubblewrap nests a user namespace in the holder's: the
    commands enter the one that owns the network, and run as that user, not as its root."""
    source = Path(__file__).resolve().parents[2] / "src"
    if not all(os.stat(part).st_mode & 0o005 for part in (source, *source.parents)):
        pytest.skip("the source is not readable by another user")
    with tempfile.TemporaryDirectory() as shared:  # pytest's own is closed to other users
        os.chmod(shared, 0o777)
        port, user = free_port(), ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        done = subprocess.run(
            [*user, str(SYSTEM_PYTHON), "-c", AS_NOBODY, shared, str(port), fetch(port, "python3")],
            capture_output=True, text=True, timeout=120, check=False,
            env={"PATH": os.defpath, "HOME": shared, "PYTHONPATH": str(source)},
        )  # fmt: skip
    if "the sandbox is required" in done.stderr:
        pytest.skip(f"bubblewrap does not run unprivileged here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    assert "matches" in done.stdout and "200\n65534\n" in done.stdout, done.stdout
    assert "outside: False" in done.stdout
