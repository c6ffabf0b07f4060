"""Start-up stays lean: ``import localhand``, the command line and ``localhand run`` load only
what they use (see "Start-up" in docs/benchmarks.md). Each case runs in a fresh interpreter and
reports the modules loaded; timings are measured by benchmarks/startup_bench.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localhand.testing import FakeOllama

# Heavy or optional: none of these may load before `localhand run` sends its first request.
NOT_ON_THE_RUN_PATH = (
    "localhand.plan.draft",
    "localhand.plan.executor",
    "localhand.batch.driver",
    "localhand.batch.pool",
    "localhand.dashboard",
    "localhand.taskfile",
    "openai",
    "ollama",
    "yaml",
    "json_repair",
    "ray",
    "fastapi",
    "typer",  # the command line is argparse: typer took ~150 ms to parse `run`'s options
    "click",  # came with typer and with httpx's own command line
    # The backends speak HTTP with http.client (models/_http.py): httpx and what it brings
    # took ~190 ms before the first request.
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "pydantic",  # validates tool arguments that need coercion, at such a call (quick_args.py)
    "pygments",
    "rich.progress",
    # Plugins (entry points) are found by a scan that reads no package's metadata unless it
    # names a localhand group (plugins/entry_points.py): entry_points() took ~50 ms per group.
    "importlib.metadata",
    # OpenTelemetry (the otel extra) only when tracing is on (localhand/telemetry)
    "opentelemetry",
    "localhand.telemetry.spans",
)
# Parsing the command line loads none of these either.
NOT_FOR_PARSING = (
    *NOT_ON_THE_RUN_PATH,
    "rich",
    "localhand.plan",
    "localhand.batch",
    # plugins are looked for when the tools or a profile are first needed, not before
    "localhand.plugins.entry_points",
)


def loaded_modules(code: str, tmp_path: Path, *args: str) -> set[str]:
    """The modules loaded by ``code``, run with ``args`` in a fresh interpreter; ``code``
    writes them by calling ``dump()`` (also called at exit)."""
    out = tmp_path / "modules.json"
    prelude = (
        "import atexit, json, sys\n"
        "def dump():\n"
        f"    if not dump.done:\n"
        f"        dump.done = True\n"
        f"        open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        "dump.done = False\n"
        "atexit.register(dump)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + code, *args],
        env={**os.environ, "NO_COLOR": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), done.stderr
    return set(json.loads(out.read_text()))


def test_import_localhand_loads_no_submodule_until_a_name_is_used(tmp_path: Path) -> None:
    modules = loaded_modules("import localhand", tmp_path)
    # only the lazy loader and the one-line version module
    assert {m for m in modules if m.startswith("localhand.")} <= {
        "localhand._lazy",
        "localhand._version",
    }
    assert not {"pydantic", "httpx", "rich", "typer"} & modules


def test_public_names_still_load_on_use(tmp_path: Path) -> None:
    modules = loaded_modules(
        "from localhand import Agent, parse_tool_calls, ScriptedModel, Task\n"
        "import localhand\n"
        "assert localhand.Agent is Agent and callable(parse_tool_calls)\n",
        tmp_path,
    )
    assert {"localhand.run.agent", "localhand.parsing", "localhand.models.scripted"} <= modules


def test_the_command_line_imports_no_command_implementation(tmp_path: Path) -> None:
    modules = loaded_modules("import localhand.cli", tmp_path)
    assert not {"localhand.session.runner", "localhand.run.agent", "localhand.store"} & modules
    assert not set(NOT_FOR_PARSING) & modules
    assert not {m for m in modules if m.startswith(("localhand.cli_", "localhand.plan"))} - {
        "localhand.cli.args"
    }


def test_parsing_run_options_imports_no_command_implementation(tmp_path: Path) -> None:
    code = (
        "from localhand.cli import parse_command\n"
        "command, options = parse_command('run', sys.argv[1:])\n"
        "assert options['agentic'] is True and options['verify'] == ['true'], options\n"
        "dump()\n"
    )
    args = ("List the files.", "--agentic", "-w", ".", "--backend", "ollama", "--verify", "true")
    modules = loaded_modules(code, tmp_path, *args)
    assert "argparse" in modules  # the dump is from after the parse
    assert not {"localhand.session.runner", "localhand.run.agent", "localhand.run.task"} & modules
    assert not set(NOT_FOR_PARSING) & modules


@pytest.mark.parametrize("args", [["run", "--help"], ["--help"]])
def test_help_imports_no_command_implementation(tmp_path: Path, args: list[str]) -> None:
    code = (
        "from localhand.cli import main\n"
        "try:\n"
        "    assert main(sys.argv[1:]) == 0\n"
        "finally:\n"
        "    dump()\n"
    )
    modules = loaded_modules(code, tmp_path, *args)
    assert not {"localhand.session.runner", "localhand.run.agent"} & modules
    assert not (set(NOT_FOR_PARSING) - {"localhand.plan"}) & modules


@pytest.mark.parametrize("backend", ["ollama", "auto"])
def test_run_loads_only_what_it_uses_before_the_first_request(tmp_path: Path, backend: str) -> None:
    # An audit hook writes the modules when the first connection is opened.
    code = (
        "def hook(event, args):\n"
        "    if event == 'socket.connect':\n"
        "        dump()\n"
        "sys.addaudithook(hook)\n"
        "sys.argv = ['localhand', *sys.argv[1:]]\n"
        "from localhand.cli import main\n"
        "main()\n"
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\n")
    script = [{"content": "Done."}]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        modules = loaded_modules(
            code,
            tmp_path,
            *("run", "List the files.", "--agentic", "--workspace", str(workspace)),
            *("--model", "qwen3:8b", "--host", server.url, "--backend", backend, "--json"),
        )
        assert server.requests, "the run never reached the server"
    assert "localhand.run.agent" in modules  # the dump is from the run, not from an early exit
    assert not set(NOT_ON_THE_RUN_PATH) & modules
