"""localhand's own installation and data directory, inside the workspace: commands and file
tools may not write the one (a planted ``.pth`` would run at localhand's next start) nor read
or write the other (the run store, checkpoints). Real bubblewrap; the installation case runs
localhand from a real ``.venv`` made inside the workspace, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from localhand.errors import ToolError
from localhand.safety.box.sandbox import available
from localhand.tools import FileTools, ShellTool, Workspace

needs_bwrap = pytest.mark.skipif(available() is not None, reason=f"no sandbox: {available()}")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def data_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding localhand's data directory (as ``--workspace ~`` does)."""
    ws = tmp_path / "ws"
    data = ws / ".local" / "share" / "localhand"
    (data / "checkpoints" / "run1").mkdir(parents=True)
    (data / "runs.db").write_text("store canary sk-store-secret\n")
    (data / "checkpoints" / "run1" / "note").write_text("checkpoint canary\n")
    (ws / "app.py").write_text("print('app')\n")
    monkeypatch.setenv("LOCALHAND_HOME", str(data))
    monkeypatch.setenv("LOCALHAND_DB", str(data / "runs.db"))
    return ws


@needs_bwrap
def test_commands_can_neither_read_nor_write_a_data_dir_in_the_workspace(
    data_inside: Path,
) -> None:
    tool = ShellTool(Workspace(data_inside), policy="never")
    data = ".local/share/localhand"
    result = tool.run_command(
        f"cat {data}/runs.db {data}/checkpoints/run1/note; ls -A {data}; "
        f"mkdir -p {data}/checkpoints/run2; echo forged > {data}/checkpoints/run2/manifest.json; "
        "echo ok > app.txt"
    )
    assert "canary" not in result.content
    assert not (data_inside / data / "checkpoints" / "run2").exists()
    assert (data_inside / "app.txt").read_text() == "ok\n"  # the rest of the workspace works
    assert (data_inside / data / "runs.db").read_text().startswith("store canary")


def test_file_tools_refuse_the_data_dir_with_a_clear_message(data_inside: Path) -> None:
    tools = FileTools(Workspace(data_inside))
    data = ".local/share/localhand"
    for call in (
        lambda: tools.read_file(f"{data}/runs.db"),
        lambda: tools.list_directory(f"{data}/checkpoints"),
        lambda: tools.write_file(f"{data}/checkpoints/run1/manifest.json", "{}"),
    ):
        with pytest.raises(ToolError, match="localhand's own data directory"):
            call()
    found = tools.search_files("canary", ".")
    assert found.startswith("No matches for 'canary'"), found
    assert tools.read_file("app.py").endswith("print('app')")


VENV_PROBE = """
import json, os, sys
from localhand.tools import FileTools, ShellTool, Workspace
from localhand.errors import ToolError
ws = sys.argv[1]
site = sys.argv[2]
result = ShellTool(Workspace(ws), policy="never").run_command(
    f"echo 'import os' > {site}/planted.pth; echo x > .venv/pyvenv.cfg; echo ok > mine.txt"
)
try:
    FileTools(Workspace(ws)).write_file(f"{site}/planted2.pth", "import os")
    refused = None
except ToolError as error:
    refused = str(error)
print(json.dumps({"prefix": sys.prefix, "output": result.content, "refused": refused}))
"""


@needs_bwrap
def test_a_venv_localhand_runs_from_inside_the_workspace_cannot_be_planted(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True)
    python = ws / ".venv" / "bin" / "python"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = f".venv/lib/{version}/site-packages"
    # localhand and its dependencies come from here, as from an editable install.
    paths = [str(SRC), sysconfig.get_paths()["purelib"]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [str(python), "-c", VENV_PROBE, str(ws), site],
        capture_output=True, text=True, env=env, cwd=ws, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert os.path.realpath(said["prefix"]) == os.path.realpath(ws / ".venv")
    assert "Read-only file system" in said["output"]
    assert not (ws / site / "planted.pth").exists()
    assert not (ws / site / "planted2.pth").exists()
    assert "home = " in (ws / ".venv" / "pyvenv.cfg").read_text()
    assert (ws / "mine.txt").read_text() == "ok\n"
    assert (
        said["refused"] is not None and "installation localhand itself runs from" in said["refused"]
    )


@needs_bwrap
def test_the_data_dir_cannot_be_moved_aside_and_replaced(data_inside: Path) -> None:
    tool = ShellTool(Workspace(data_inside), policy="never")
    result = tool.run_command(
        "mv .local .local-old || mv .local/share .local/share-old; "
        "mkdir -p .local/share/localhand/checkpoints/forged; echo forged > "
        ".local/share/localhand/checkpoints/forged/manifest.json; ls -A .local/share"
    )
    assert not (data_inside / ".local-old").exists()
    assert not (data_inside / ".local" / "share-old").exists()
    assert not (data_inside / ".local/share/localhand/checkpoints/forged").exists()
    assert (data_inside / ".local/share/localhand/runs.db").read_text().startswith("store")
    assert "Device or resource busy" in result.content or "Read-only" in result.content


@needs_bwrap
def test_an_install_dir_deep_in_the_workspace_cannot_be_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "repo"
    package = ws / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("SAFE = True\n")
    from localhand.safety.box import own_files

    monkeypatch.setattr(own_files, "install_paths", lambda: (str(package),))
    tool = ShellTool(Workspace(ws), policy="never")
    tool.run_command(
        "mv src src-old; mkdir -p src/pkg; echo 'import os' > src/pkg/__init__.py; "
        "echo changed > src/pkg/__init__.py; echo ok > src/other.py"
    )
    assert (package / "__init__.py").read_text() == "SAFE = True\n"
    assert not (ws / "src-old").exists()
    assert (ws / "src" / "other.py").read_text() == "ok\n"  # the rest of src stays writable
