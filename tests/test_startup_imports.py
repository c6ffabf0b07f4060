"""Start-up stays lean: ``import localhand``, the command line and ``localhand run`` load only
what they use (see "Start-up" in docs/benchmarks.md). Each case runs in a fresh interpreter and
reports the modules loaded, which must all be on an allow-list: a module that is not, named in
the failure, either goes behind an import in the function that needs it (with a comment saying
why) or onto the list, when the run really needs it before its first request. Timings are
measured by benchmarks/startup_bench.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localhand.testing import FakeOllama


def package(name: str, *modules: str) -> set[str]:
    """``name`` and its ``modules``."""
    return {name, *(f"{name}.{module}" for module in modules)}


# What `localhand run` may load before its first request: nothing else. A module that is not
# here loads when the run first needs it (plan mode, MCP, hooks, tracing, the dashboard, the
# risk classifier at the first command...), behind an import in a function that says why.
RUN_PATH = {
    *package("localhand", "_lazy", "_version", "cancel", "errors", "events", "nesting", "paths"),
    *package("localhand", "telemetry", "types"),  # telemetry: the switch; its spans stay off
    *package("localhand.cli", "args", "continuing", "jsonl", "run"),
    *package("localhand.config", "files", "options", "settings", "values", "workspace_keys"),
    *package("localhand.evidence", "adopt", "answer_check", "baseline", "changes", "checkfiles"),
    *package("localhand.evidence", "checkguard", "gitstate", "hidden", "project_checks"),
    *package("localhand.evidence", "snapshot", "taskwords", "verify"),
    *package("localhand.models", "_common", "_http", "_http_connect", "_json_calls", "_lines"),
    *package("localhand.models", "_network", "_ollama_wire", "_served_figures", "_stream"),
    *package("localhand.models", "advice"),
    *package("localhand.models", "base", "connection", "ollama", "packaged", "tokens"),
    *package("localhand.models", "transport", "watch"),
    *package("localhand.parsing", "coerce", "cutoff", "extract", "faithful", "formats"),
    *package("localhand.parsing", "formats_extra", "formats_more", "json_load", "json_scan"),
    *package("localhand.parsing", "loose", "mention", "message", "mistral", "parser"),
    *package("localhand.parsing", "pythonic", "reply", "schema", "shapes", "thinking"),
    *package("localhand.parsing", "xml_args"),
    *package("localhand.plugins", "entry_points"),  # reads only localhand's entry-point groups
    *package("localhand.profiles", "formats", "history", "match", "model", "overrides"),
    *package("localhand.profiles", "plugins", "request", "table"),
    *package("localhand.prompt", "context", "instructions", "opening", "system", "tool_text"),
    *package("localhand.run", "agent", "agent_config", "asking", "cache_reuse", "guardrails"),
    *package("localhand.run", "ledger", "lifecycle", "nudges", "routing", "task", "tiny"),
    *package("localhand.run", "delegate"),  # the delegate tool is offered in the first request
    *package("localhand.session", "delegating"),  # and set up by the session
    *package("localhand.safety", "approval", "box", "risk", "secrets", "trust"),
    *package("localhand.safety.approval", "announce", "approver"),
    *package(
        "localhand.safety.box", "bound", "git", "home", "limits", "mounts", "own_files", "proc"
    ),
    *package("localhand.safety.box", "sandbox", "supervise", "table"),
    # the checks' own files (evidence.checkfiles) parse commands; the archive skips secrets
    *package("localhand.safety.risk", "paths", "shellparse", "shellsyntax", "types"),
    *package("localhand.safety.secrets", "environment", "own_env", "patterns", "scrub"),
    *package("localhand.safety.secrets", "toolchain"),
    *package("localhand.safety.trust", "store", "provenance"),
    *package("localhand.session", "approvals", "backend", "door", "prepared", "recording"),
    *package("localhand.session", "finish", "kept_cache", "runner", "verify_gate"),
    *package("localhand.skills", "found", "shelf"),  # the list goes in the first request
    *package("localhand.store", "archive", "behind", "connection", "db", "liveness", "migrations"),
    *package("localhand.store", "recorder", "records"),
    *package("localhand.tools", "deadline", "edits", "edits_hint", "edits_loose", "files"),
    *package("localhand.tools", "fsio", "headtail", "jobs", "limits", "plugins", "quick_args"),
    *package("localhand.tools", "read_lines", "registry", "safe_open", "sandbox_notes"),
    *package("localhand.tools", "schema", "search", "shell", "workspace"),
}
THIRD_PARTY_ON_THE_RUN_PATH: set[str] = set()
"""Top-level packages from outside the standard library that the run may load before its first
request: none. The command line is argparse (typer took ~150 ms to parse ``run``'s options),
the backends speak HTTP with http.client (httpx and what it brings took ~190 ms), the store is
sqlite3; pydantic loads at the first tool call that needs coercion (``tools/quick_args.py``),
json_repair at the first reply that needs repair, OpenTelemetry only when tracing is on."""
STDLIB_KEPT_OFF = {"importlib.metadata", "logging"}
"""The standard library may load (which of its modules load each other changes from one Python
to the next), except these: entry points are found by a scan that reads no package's metadata
(``plugins/entry_points.py``: entry_points() took ~50 ms a group), and logging is for a
warning nobody passed a callback for."""

# Parsing the command line loads the command line's own modules (whichever they are) and these:
# the model and server options are declared once, in config/options.py.
PARSING_PATH = {
    *package("localhand", "_lazy", "_version", "errors"),
    *package("localhand.config", "options"),
}
# The top-level --help names the defaults of plan mode and the approval policy.
HELP_PATH = {
    *PARSING_PATH,
    *package("localhand.plan", "runstep"),
    *package("localhand.safety", "approval", "approval.approver"),
}


def not_allowed(
    modules: set[str],
    localhand: set[str],
    *,
    any_cli: bool = False,
    kept_off: set[str] = STDLIB_KEPT_OFF,
) -> list[str]:
    """The modules of ``modules`` that none of the allow-lists allows (sorted, by name):
    ``localhand``'s modules (with ``any_cli``, any of the command line's too), the standard
    library but ``kept_off``, and ``THIRD_PARTY_ON_THE_RUN_PATH``."""
    refused = []
    for name in modules:
        top = name.split(".")[0]
        if top == "localhand":
            allowed = name in localhand or (any_cli and name.startswith("localhand.cli"))
        elif top in sys.stdlib_module_names:
            allowed = not any(name == k or name.startswith(f"{k}.") for k in kept_off)
        else:
            allowed = top in THIRD_PARTY_ON_THE_RUN_PATH
        if not allowed:
            refused.append(name)
    return sorted(refused)


def loaded_modules(code: str, tmp_path: Path, *args: str) -> set[str]:
    """The modules loaded by ``code``, run with ``args`` in a fresh interpreter (not those the
    interpreter's own start loaded: ``site`` and what it runs); ``code`` writes them by calling
    ``dump()`` (also called at exit)."""
    out = tmp_path / "modules.json"
    prelude = (
        "import sys\n"
        "started_with = set(sys.modules)\n"
        "import atexit, json\n"
        "def dump():\n"
        f"    if not dump.done:\n"
        f"        dump.done = True\n"
        f"        loaded = sorted(set(sys.modules) - started_with)\n"
        f"        open({str(out)!r}, 'w').write(json.dumps(loaded))\n"
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
    assert "localhand.cli" in modules
    assert not_allowed(modules, PARSING_PATH, any_cli=True) == []
    assert not {m for m in modules if m.startswith("localhand.cli.")} - {"localhand.cli.args"}


def test_parsing_run_options_imports_no_command_implementation(tmp_path: Path) -> None:
    code = (
        "from localhand.cli import command_parser\n"
        "options = vars(command_parser('run')[1].parse_args(sys.argv[1:]))\n"
        "assert options['agentic'] is True and options['verify'] == ['true'], options\n"
        "dump()\n"
    )
    args = ("List the files.", "--agentic", "-w", ".", "--backend", "ollama", "--verify", "true")
    modules = loaded_modules(code, tmp_path, *args)
    assert "argparse" in modules  # the dump is from after the parse
    assert not_allowed(modules, PARSING_PATH, any_cli=True) == []


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
    assert "localhand.cli" in modules
    # every command's options: `localhand acp`'s bring asyncio, and with it logging
    assert not_allowed(modules, HELP_PATH, any_cli=True, kept_off={"importlib.metadata"}) == []


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
    refused = not_allowed(modules, RUN_PATH)
    assert refused == [], f"loaded before the first request, not on the allow-list: {refused}"


def test_the_allow_list_refuses_what_it_does_not_name() -> None:
    loaded = {"localhand.run.agent", "json", "localhand.plan.executor", "httpx._client"}
    loaded |= {"logging", "importlib.metadata._meta", "importlib.util"}
    assert not_allowed(loaded, RUN_PATH) == [
        "httpx._client",
        "importlib.metadata._meta",
        "localhand.plan.executor",
        "logging",
    ]
    assert not_allowed({"localhand.cli.anything", "localhand.run"}, PARSING_PATH, any_cli=True) == [
        "localhand.run"
    ]
