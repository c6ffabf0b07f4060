"""The tracing switch: where it is set (never from a workspace file), on by itself in a program
that traces, and what it costs when off (no import) or when the package is missing (one
warning, the run goes on). Needs no OpenTelemetry SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from localhand.config.settings import Settings, load_settings
from localhand.errors import ConfigError
from localhand.events import EventBus, EventLog
from localhand.models.scripted import ScriptedModel
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.telemetry import INSTALL, content_on, provider_name, tracing_on
from trust_helpers import pin

SRC = Path(__file__).resolve().parents[2] / "src"


def user_config(tmp_path: Path, text: str) -> dict[str, str]:
    """An environment whose user config.toml is ``text``."""
    path = tmp_path / "xdg" / "localhand" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_the_user_s_config_and_variables_switch_it_on(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    env = user_config(tmp_path, "[telemetry]\notel = true\ncontent = true\n")
    settings = load_settings(env, cwd=cwd)
    assert (settings.otel, settings.otel_content) == (True, True)
    assert settings.source_of("otel").startswith("user file")

    plain = load_settings({"LOCALHAND_OTEL": "1", "LOCALHAND_OTEL_CONTENT": "yes"}, cwd=cwd)
    assert (plain.otel, plain.otel_content) == (True, True)
    assert load_settings({"LOCALHAND_OTEL": "0"}, cwd=cwd).otel is False
    assert load_settings({}, cwd=cwd).otel is None  # not said: the host program decides


@pytest.mark.parametrize("table", ['otel = "maybe"', "exporter = true", "otel = 1"])
def test_a_wrong_telemetry_table_is_an_error_naming_the_file(tmp_path: Path, table: str) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    env = user_config(tmp_path, f"[telemetry]\n{table}\n")
    with pytest.raises(ConfigError, match=r"\[telemetry\] in .*config\.toml takes only otel"):
        load_settings(env, cwd=cwd)


def test_a_workspace_file_cannot_switch_tracing_or_content_on(tmp_path: Path) -> None:
    (tmp_path / "localhand.toml").write_text("[telemetry]\notel = true\ncontent = true\n")
    pin(tmp_path / "localhand.toml")
    said: list[str] = []
    settings = load_settings({}, cwd=tmp_path, warn=said.append)
    assert (settings.otel, settings.otel_content) == (None, False)
    assert len(said) == 1 and "otel (" in said[0] and "otel_content (" in said[0]


def test_a_workspace_file_may_switch_tracing_off(tmp_path: Path) -> None:
    (tmp_path / "localhand.toml").write_text("[telemetry]\notel = false\n")
    pin(tmp_path / "localhand.toml")
    assert load_settings({}, cwd=tmp_path, warn=lambda _: None).otel is False


def test_a_program_that_imported_opentelemetry_trace_is_traced_unless_told_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "opentelemetry.trace", raising=False)
    assert tracing_on(Settings()) is False
    assert tracing_on(Settings(otel=True)) is True
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", types.ModuleType("stand-in"))
    assert tracing_on(Settings()) is True
    assert tracing_on(Settings(otel=False)) is False


@pytest.mark.parametrize(
    ("settings", "env", "on"),
    [
        (Settings(), {}, False),
        (Settings(otel_content=True), {}, True),
        (Settings(), {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, True),
        (Settings(), {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}, False),
    ],
)
def test_content_is_opt_in(settings: Settings, env: dict[str, str], on: bool) -> None:
    assert content_on(settings, env) is on


@pytest.mark.parametrize(
    ("backend", "model", "provider"),
    [
        ("ollama", "qwen3:8b", "ollama"),
        ("openai", "qwen3:8b", "openai"),
        ("embedded", "tiny", "llama_cpp"),
        ("auto", "qwen3:8b", "ollama"),
        ("auto", "/models/q.gguf", "llama_cpp"),
    ],
)
def test_the_provider_is_the_backend_asked_for(backend: str, model: str, provider: str) -> None:
    assert provider_name(Settings(backend=backend, model=model)) == provider


def test_on_without_the_package_warns_once_with_the_install_command_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("opentelemetry", "opentelemetry.trace", "localhand.telemetry.spans"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    monkeypatch.setattr("localhand.telemetry._warned_missing", False)
    warnings: list[str] = []
    for _ in range(2):
        bus, log = EventBus(), EventLog()
        bus.subscribe(log)
        task = Task("What is 1 + 1?", workspace=tmp_path)
        result = Session(task, Settings(otel=True), bus=bus, model=ScriptedModel(["Two."])).run()
        assert result.termination_reason == "final_answer"
        warnings += [event.message for event in log.of_type("warning")]  # type: ignore[attr-defined]
    assert len(warnings) == 1, warnings
    assert INSTALL in warnings[0] and "not traced" in warnings[0]


def test_off_a_whole_run_imports_nothing_of_opentelemetry(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from localhand.config.settings import Settings\n"
        "from localhand.models.scripted import ScriptedModel, call\n"
        "from localhand.run.task import Task\n"
        "from localhand.session.door import Session\n"
        "model = ScriptedModel([call('list_directory', path='.'), 'Done.'])\n"
        "task = Task('List the files', workspace=Path(sys.argv[1]), agentic=True)\n"
        "result = Session(task, Settings(), model=model).run()\n"
        "print(json.dumps([result.termination_reason, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},  # the venv's packages, opentelemetry-api too
    )
    assert done.returncode == 0, done.stderr
    reason, modules = json.loads(done.stdout.splitlines()[-1])
    assert reason == "final_answer"
    assert "localhand.session.door" in modules  # the dump is from after the run
    assert [m for m in modules if m.startswith(("opentelemetry", "localhand.telemetry."))] == []
