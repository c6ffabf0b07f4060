"""Plugins: tools and model profiles that installed packages add through the
``localhand.tools`` and ``localhand.profiles`` entry points.

Each test installs a package as pip leaves one, a ``NAME-1.0.dist-info`` folder (``METADATA``,
``entry_points.txt``) beside its module in a folder on ``sys.path``, and asks localhand's own
public functions what they find; the command line is run for real against the fake Ollama.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from localhand.plugins import entry_points as plugins
from localhand.profiles import installed_profiles, profile_for, read_profiles
from localhand.testing import FakeOllama
from localhand.tools import default_tools
from localhand.types import ToolCall, ToolResult

Install = Callable[..., Path]

TOOL_MODULE = '''
def word_count(text: str) -> str:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return str(len(text.split()))
'''

PROFILE_MODULE = """
from localhand.profiles import Profile
FALCON = Profile(name="falcon", family="falcon", patterns=(r"falcon",), think=False)
"""


def _forget() -> None:
    plugins._declared.cache_clear()
    installed_profiles.cache_clear()
    profile_for.cache_clear()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` that packages are installed into; what localhand read of the
    installed plugins is forgotten before and after."""
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    _forget()
    yield folder
    _forget()


@pytest.fixture
def install(site: Path, monkeypatch: pytest.MonkeyPatch) -> Install:
    """``install(package, module_code, entry_points)``: the package's module (named after it,
    fresh in each test) and its dist-info, as pip installs them."""

    def installed(package: str, code: str, entry_points: str) -> Path:
        module = f"{package.replace('-', '_')}_{abs(hash(str(site))) % 10**8}"
        (site / f"{module}.py").write_text(code)
        dist = site / f"{package.replace('-', '_')}-1.0.dist-info"  # as pip names it
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(entry_points.replace("MODULE", module))
        monkeypatch.delitem(sys.modules, module, raising=False)
        return site

    return installed


def test_an_installed_tool_is_offered_and_runs(install: Install, tmp_path: Path) -> None:
    install("lh-words", TOOL_MODULE, "[localhand.tools]\nword_count = MODULE:word_count\n")
    registry = default_tools(tmp_path)
    assert registry.names[-1] == "word_count"
    assert "read_file" in registry.names and "run_command" in registry.names
    definition = next(d for d in registry.definitions() if d["function"]["name"] == "word_count")
    assert definition["function"]["description"] == "Count the words in a text."
    result = registry.execute(ToolCall("word_count", {"text": "one two three"}))
    assert result == ToolResult("3")
    assert "word_count" not in default_tools(tmp_path, plugins=False).names


def test_an_installed_profile_is_matched_before_the_built_in_ones(install: Install) -> None:
    assert profile_for("falcon3:7b").name == "generic"  # nothing installed yet
    _forget()
    install("lh-falcon", PROFILE_MODULE, "[localhand.profiles]\nfalcon = MODULE:FALCON\n")
    assert profile_for("tiiuae/Falcon3-7B-Instruct-Q4_K_M.gguf").name == "falcon"
    assert "falcon" in {p.name for p in installed_profiles()}
    # localhand.toml can change it as it changes a built-in family
    settings = read_profiles({"profiles": {"falcon": {"think": True}}})
    assert settings.resolve("falcon3:7b").think is True
    assert profile_for("qwen3:8b").name == "qwen3"  # the built-in families still match


def test_broken_plugins_are_left_out_with_a_warning(
    install: Install, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    install("lh-words", TOOL_MODULE, "[localhand.tools]\nword_count = MODULE:word_count\n")
    install("lh-missing", "import no_such_module_here\n", "[localhand.tools]\nx = MODULE:x\n")
    install("lh-notool", "X = 42\n", "[localhand.tools]\nanswer = MODULE:X\n")
    install(
        "lh-starargs",
        "def shout(*texts: str) -> str:\n    return ' '.join(texts).upper()\n",
        "[localhand.tools]\nshout = MODULE:shout\n",
    )
    install(
        "lh-shadow",
        "def write_file(path: str) -> str:\n    '''Write.'''\n    return path\n",
        "[localhand.tools]\nwrite_file = MODULE:write_file\n",
    )
    install(
        "lh-qwen",
        "from localhand.profiles import Profile\nQ = Profile(name='qwen3', patterns=('.',))\n",
        "[localhand.profiles]\nqwen3 = MODULE:Q\n",
    )
    with caplog.at_level(logging.WARNING, logger="localhand"):
        registry = default_tools(tmp_path)
        profile = profile_for("qwen3:8b")
    assert registry.names.count("write_file") == 1
    assert "word_count" in registry.names  # the good plugin still came
    assert not {"x", "answer", "shout"} & set(registry.names)
    assert profile.name == "qwen3" and profile.patterns != (".",)  # the built-in one
    warnings = {r.getMessage() for r in caplog.records}
    for package, problem in [
        ("lh-missing", "ModuleNotFoundError: No module named 'no_such_module_here'"),
        ("lh-notool", "is a int, not a function or a localhand Tool"),
        ("lh-starargs", "not a tool localhand can offer (TypeError: shout: parameter 'texts'"),
        ("lh-shadow", "a tool named 'write_file' is offered already"),
        ("lh-qwen", "a profile named 'qwen3' exists already"),
    ]:
        said = [w for w in warnings if f"package {package!r}" in w]
        assert len(said) == 1, (package, warnings)
        assert problem in said[0] and f"pip uninstall {package}" in said[0]


def test_nothing_is_read_from_the_current_directory(
    install: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `python -m localhand` puts the current directory on sys.path: a workspace could plant a
    # package there whose code would run outside the sandbox.
    site = install("lh-words", TOOL_MODULE, "[localhand.tools]\nword_count = MODULE:word_count\n")
    monkeypatch.chdir(site)
    assert plugins.plugins(plugins.TOOLS) == []
    _forget()
    monkeypatch.chdir(tmp_path)
    assert [p.name for p in plugins.plugins(plugins.TOOLS)] == ["word_count"]


def run_with_plugins(
    site: Path, script: list[Any], task: str, workspace: Path, *options: str, cwd: Path
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """``localhand run TASK`` with the packages in ``site`` on its path, on a fake ``qwen3:8b``
    that answers ``script``: how it ended, and the chat requests the fake was sent."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": os.pathsep.join([src, str(site)])}
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        env["OLLAMA_HOST"] = server.url
        done = localhand(
            *("run", task, "--workspace", str(workspace), "--model", "qwen3:8b", *options),
            cwd=cwd,
            env=env,
        )
        return done, [r for r in server.requests if r.path == "/api/chat"]


def test_the_command_line_offers_plugins_and_warns_without_a_traceback(
    install: Install, tmp_path: Path
) -> None:
    site = install("lh-words", TOOL_MODULE, "[localhand.tools]\nword_count = MODULE:word_count\n")
    install(
        "lh-broken", "raise RuntimeError('half installed')\n", "[localhand.tools]\nb = MODULE:b\n"
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    call = {"function": {"name": "word_count", "arguments": {"text": "a b c d"}}}
    script = [{"content": "", "tool_calls": [call]}, {"content": "It has 4 words."}]
    done, chats = run_with_plugins(
        site, script, "Count the words in 'a b c d'.", workspace, "--json", cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr  # unverified: the task gave no check
    offered = {t["function"]["name"] for t in chats[0].body["tools"]}
    assert "word_count" in offered and "b" not in offered
    tool_turn = [m for m in chats[1].body["messages"] if m["role"] == "tool"]
    assert tool_turn and tool_turn[-1]["content"] == "4"
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "unverified"
    assert "Traceback" not in done.stderr
    assert "package 'lh-broken'" in done.stderr and "RuntimeError: half installed" in done.stderr


def test_a_plugin_installed_inside_the_workspace_is_never_loaded(tmp_path: Path) -> None:
    # A model can write into a virtualenv that lives in its workspace; a plugin there would run
    # in localhand's own process on the next run, outside the sandbox. The door distrusts it.
    workspace = tmp_path / "ws"
    site = workspace / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    planted = tmp_path / "planted"
    (site / "lh_planted.py").write_text(
        f"import pathlib\npathlib.Path({str(planted)!r}).write_text('ran')\n" + TOOL_MODULE
    )
    dist = site / "lh_planted-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lh-planted\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[localhand.tools]\nword_count = lh_planted:word_count\n"
    )
    script = [{"content": "Nothing to do."}]
    done, chats = run_with_plugins(site, script, "Say hello.", workspace, cwd=tmp_path)
    assert chats, done.stderr
    assert "word_count" not in {t["function"]["name"] for t in chats[0].body["tools"]}
    assert not planted.exists(), "the planted plugin's code ran in localhand's process"
    assert "inside the run's workspace" in done.stderr and "Traceback" not in done.stderr
