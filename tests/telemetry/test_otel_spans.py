"""A run's OpenTelemetry spans, read back with the SDK's in-memory exporter: the GenAI
conventions' tree (``invoke_agent`` over ``chat`` and ``execute_tool``), their attributes,
the conversation only when the user opts in, nothing when tracing is off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from optional_deps import module

SDK = "pip install -e . --group dev (or pip install opentelemetry-sdk)"
module("opentelemetry.sdk.trace", "the OpenTelemetry SDK", SDK)

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from localhand.config.settings import Settings  # noqa: E402
from localhand.errors import ConfigError  # noqa: E402
from localhand.models.scripted import ScriptedModel, call  # noqa: E402
from localhand.run.task import Task  # noqa: E402
from localhand.session.api import run_plan, run_task  # noqa: E402
from localhand.session.door import Session  # noqa: E402
from localhand.telemetry import CONTENT_VARIABLE  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402
from localhand.types import Reply, ToolCall, Usage  # noqa: E402
from workspaces import workspace_with  # noqa: E402

_EXPORTER = InMemorySpanExporter()
TASK = "Read calc.py and say what add does"
ANSWER = "add returns the sum of its two arguments."
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """The global tracer provider (set once a process, as OpenTelemetry allows) writes to an
    in-memory exporter, emptied for each test."""
    provider = trace.get_tracer_provider()
    if not getattr(provider, "_localhand_test", False):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider._localhand_test = True  # type: ignore[attr-defined]
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"calc.py": "def add(a, b):\n    return a + b\n"})


def script() -> list[Any]:
    """A read with the model's call id, a read that fails, then the answer."""
    first = Reply(
        tool_calls=(ToolCall("read_file", {"path": "calc.py"}, "call_1"),),
        usage=Usage(prompt_tokens=120, completion_tokens=9),
        done_reason="stop",
    )
    return [first, call("read_file", path="missing.py"), ANSWER]


def traced_run(workspace: Path, settings: Settings, model: str = "qwen3:8b") -> Any:
    task = Task(TASK, workspace=workspace, agentic=True, model=model)
    return Session(task, settings, model=ScriptedModel(script(), name=model)).run()


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def test_a_run_gives_the_genai_span_tree(exported: InMemorySpanExporter, workspace: Path) -> None:
    result = traced_run(workspace, Settings(otel=True, backend="ollama"))
    assert result.termination_reason == "final_answer"

    spans = by_name(exported.get_finished_spans())
    assert sorted(spans) == ["chat qwen3:8b", "execute_tool read_file", "invoke_agent localhand"]
    (run,) = spans["invoke_agent localhand"]
    chats, tools = spans["chat qwen3:8b"], spans["execute_tool read_file"]
    assert (len(chats), len(tools)) == (3, 2)
    assert run.kind is SpanKind.INTERNAL and run.parent is None
    for child in (*chats, *tools):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
        assert run.start_time <= child.start_time <= child.end_time <= run.end_time

    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "localhand"
    assert run.attributes["gen_ai.conversation.id"] == result.task_id
    assert run.attributes["gen_ai.usage.input_tokens"] == result.tokens_in
    assert run.attributes["localhand.result.status"] == result.status

    chats.sort(key=lambda span: span.start_time)
    first = chats[0]
    assert first.kind is SpanKind.CLIENT
    assert {k: first.attributes[k] for k in ("gen_ai.operation.name", "gen_ai.provider.name")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "ollama",
    }
    assert first.attributes["gen_ai.request.model"] == "qwen3:8b"
    assert first.attributes["gen_ai.usage.input_tokens"] == 120
    assert first.attributes["gen_ai.usage.output_tokens"] == 9
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert chats[-1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats) == result.tokens_in

    tools.sort(key=lambda span: span.start_time)
    read, failed = tools
    assert read.attributes["gen_ai.tool.name"] == "read_file"
    assert read.attributes["gen_ai.tool.call.id"] == "call_1"
    assert "error.type" not in read.attributes and read.status.status_code is StatusCode.UNSET
    assert failed.attributes["error.type"] == "tool_error"
    assert failed.status.status_code is StatusCode.ERROR
    assert "gen_ai.tool.call.id" not in failed.attributes  # the model gave that call no id


def test_the_conversation_stays_out_of_the_spans_by_default(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    traced_run(workspace, Settings(otel=True))
    spans = exported.get_finished_spans()
    assert len(spans) == 6
    for span in spans:
        assert not CONTENT_KEYS & set(span.attributes), span.name
        assert not any(TASK in str(v) or ANSWER in str(v) for v in span.attributes.values())


@pytest.mark.parametrize("how", ["setting", "variable"])
def test_the_conversation_is_in_the_spans_when_the_user_opts_in(
    exported: InMemorySpanExporter,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    if how == "variable":  # OpenTelemetry's own switch
        monkeypatch.setenv(CONTENT_VARIABLE, "true")
    traced_run(workspace, Settings(otel=True, otel_content=how == "setting"))

    spans = by_name(exported.get_finished_spans())
    (run,) = spans["invoke_agent localhand"]
    assert TASK in str(run.attributes["gen_ai.input.messages"])
    assert ANSWER in str(run.attributes["gen_ai.output.messages"])
    replies = " ".join(str(s.attributes["gen_ai.output.messages"]) for s in spans["chat qwen3:8b"])
    assert '"id": "call_1"' in replies and ANSWER in replies
    read = min(spans["execute_tool read_file"], key=lambda span: span.start_time)
    assert read.attributes["gen_ai.tool.call.arguments"] == '{"path": "calc.py"}'
    assert "return a + b" in str(read.attributes["gen_ai.tool.call.result"])


def test_content_is_scrubbed_of_secrets(exported: InMemorySpanExporter, workspace: Path) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape
    task = Task(f"Say hello; my token is {secret}", workspace=workspace, agentic=False)
    model = ScriptedModel([f"Hello; your token is {secret}."])
    Session(task, Settings(otel=True, otel_content=True), model=model).run()
    attributes = [
        str(v) for span in exported.get_finished_spans() for v in span.attributes.values()
    ]
    assert any("[REDACTED]" in value for value in attributes)
    assert not any(secret in value for value in attributes)


def test_switched_off_a_run_writes_no_span_even_in_a_traced_program(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    traced_run(workspace, Settings(otel=False))
    assert exported.get_finished_spans() == ()


def test_a_program_that_traces_gets_spans_without_asking_and_they_join_its_trace(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    model = ScriptedModel(["Two."])
    with trace.get_tracer("host").start_as_current_span("handle request") as host:
        task = Task("What is 1 + 1?", workspace=workspace)
        result = run_task(task, Settings(), model=model, follow_up_dir=workspace.parent)
    assert result.termination_reason == "final_answer"

    spans = by_name(exported.get_finished_spans())
    (run,) = spans["invoke_agent localhand"]
    assert run.parent is not None and run.parent.span_id == host.get_span_context().span_id
    assert run.context.trace_id == host.get_span_context().trace_id
    assert len(spans["chat scripted"]) == 1


def test_a_run_that_ends_by_an_exception_ends_its_span_with_the_error(
    exported: InMemorySpanExporter, tmp_path: Path
) -> None:
    task = Task("Tidy", workspace=tmp_path / "not-there", agentic=True)
    with pytest.raises(ConfigError):
        Session(task, Settings(otel=True), model=ScriptedModel([])).run()
    (run,) = exported.get_finished_spans()
    assert run.name == "invoke_agent localhand"
    assert run.attributes["error.type"] == "ConfigError"
    assert run.status.status_code is StatusCode.ERROR


HOST_PROGRAM = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
from localhand.cli import main

try:
    main(sys.argv[2:])
except SystemExit:
    pass
finally:
    spans = [[s.name, dict(s.attributes)] for s in exporter.get_finished_spans()]
    open(sys.argv[1], "w").write(json.dumps(spans))
"""


@pytest.mark.parametrize("variable", [None, "0"])
def test_the_command_line_is_traced_in_a_program_that_traces_unless_switched_off(
    tmp_path: Path, variable: str | None
) -> None:
    """The command line's door, its settings read from the environment as a user's are."""
    out, workspace = tmp_path / "spans.json", tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "NO_COLOR": "1"}
    if variable is not None:
        env["LOCALHAND_OTEL"] = variable
    with FakeOllama(script=[{"content": "Two."}], models={"qwen3:8b": {}}) as server:
        args = ("run", "What is 1 + 1?", "-w", str(workspace), "--host", server.url)
        done = subprocess.run(
            [sys.executable, "-c", HOST_PROGRAM, str(out), *args, "--backend", "ollama"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.exists(), done.stderr
    spans = dict(json.loads(out.read_text()))
    if variable == "0":
        assert spans == {}
        return
    assert sorted(spans) == ["chat qwen3:8b", "invoke_agent localhand"], done.stderr
    assert spans["chat qwen3:8b"]["gen_ai.provider.name"] == "ollama"
    assert spans["invoke_agent localhand"]["localhand.result.status"] == "pass"


def test_plan_mode_is_traced_with_its_repair_requests(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    plan = {"goal": "the goal", "steps": [{"id": "s", "description": "s", "command": "exit 1"}]}
    repair = json.dumps({"action": "skip", "reason": "because skip"})
    model = ScriptedModel([repair] * 3, name="planner")
    result = run_plan(plan, workspace, Settings(otel=True), mode="agentic", model=model)
    assert result.steps, result

    spans = by_name(exported.get_finished_spans())
    (run,) = spans["invoke_agent localhand"]
    chats = spans["chat planner"]
    assert len(chats) == len(model.calls) >= 1
    assert all(
        chat.parent is not None and chat.parent.span_id == run.context.span_id for chat in chats
    )
    assert run.attributes["localhand.result.status"] == result.status


class _Embedded(ScriptedModel):
    """A scripted model that says it is the embedded backend, as ``--backend auto``'s
    fallback is when no Ollama answers."""

    server_kind = "embedded"


def test_the_provider_is_the_backend_the_run_settled_on(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    task = Task(TASK, workspace=workspace, agentic=True, model="qwen3:8b")
    model = _Embedded(script(), name="qwen3:8b")
    Session(task, Settings(otel=True, backend="auto"), model=model).run()

    spans = exported.get_finished_spans()
    assert spans and {
        span.attributes["gen_ai.provider.name"]
        for span in spans
        if span.name != "execute_tool read_file"
    } == {"llama_cpp"}


def test_a_door_that_takes_the_outcome_is_traced_too(
    exported: InMemorySpanExporter, workspace: Path
) -> None:
    """The dashboard and the editor call ``Session.outcome`` (no exception to hand anyone),
    not ``run``: their runs are traced all the same."""
    task = Task(TASK, workspace=workspace, agentic=True, model="qwen3:8b")
    model = ScriptedModel(script(), name="qwen3:8b")
    Session(task, Settings(otel=True, backend="ollama"), model=model).outcome()

    spans = by_name(exported.get_finished_spans())
    assert len(spans["invoke_agent localhand"]) == 1
    assert len(spans["chat qwen3:8b"]) == 3
