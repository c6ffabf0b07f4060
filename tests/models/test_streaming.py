"""The simple path streaming from the fake Ollama server over a real socket: a normal answer,
the failures a stream can meet, and the command line showing the answer as it arrives."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from localhand.config.settings import Settings
from localhand.events import EventBus, EventLog
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.models.tokens import estimate_prompt_tokens
from localhand.run.routing import route
from localhand.run.simple import TRUNCATED
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.testing import FakeOllama, Fault
from localhand.types import Prefill
from workspaces import NOTES, workspace_with

QUESTION = "Explain what this workspace is for"
ANSWER = "It holds the notes for the next release: three items, tests first."
SIMPLE = route(QUESTION).to_dict()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"notes.md": NOTES})


class Run:
    """One simple task against a fake server: its Result, events and the server's requests."""

    def __init__(
        self,
        script: list[Any],
        workspace: Path,
        *,
        timeout_s: float | None = None,
        backend: type = OllamaModel,
        **model_options: Any,
    ) -> None:
        self.log = EventLog()
        self.warnings: list[str] = []
        bus = EventBus()
        bus.subscribe(self.log)
        task = Task(QUESTION, workspace, id="s1", timeout_s=timeout_s)
        self.follow_ups = workspace.parent / "follow-ups"
        with FakeOllama(script) as fake:
            self.url = fake.url
            model = backend(
                "qwen3:8b",
                fake.url,
                sleep=lambda s: None,
                on_warning=self.warnings.append,
                **model_options,
            )
            started = time.monotonic()
            self.result = run_task(
                task,
                Settings(model="qwen3:8b"),
                bus=bus,
                model=model,
                follow_up_dir=self.follow_ups,
            )
            self.seconds = time.monotonic() - started
            model.close()
            self.requests = fake.chat_requests + fake.openai_requests

    @property
    def streamed(self) -> str:
        return "".join(
            e.text
            for e in self.log.of_type("answer_delta")
            if not e.thinking  # type: ignore[attr-defined]
        )

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.log.events]

    def estimated(self, text: str) -> tuple[int, int]:
        """The tokens of a stream cut short: estimated, as the server never counted them."""
        return estimate_prompt_tokens(self.requests[0].body["messages"]), max(1, len(text) // 4)

    def expect(self, **fields: Any) -> None:
        data = self.result.to_dict()
        assert 0 <= data.pop("duration_s") < 10
        # how commands (the checks) were boxed: this machine's, so only its shape here
        assert {"mode", "enforced", "limits"} <= set(data.pop("sandbox"))
        # the server's own prefill figures (test_server_figures.py): here only their shape
        said = set(data.pop("prefill"))  # the added keys (a restore, drafts) only when said
        assert {"requests", "reported", "prefill_s"} <= said <= set(Prefill.__dataclass_fields__)
        base = {
            "task_id": "s1",
            "status": "pass",
            "output": ANSWER,
            "model_used": "qwen3:8b",
            "termination_reason": "final_answer",
            "iterations_used": 1,
            "files_modified": [],
            "verification": [],
            "error": None,
            "completed": [],
            "remaining": [],
            "follow_up_task": None,
            "suggested_check": None,
            "cost": None,
            "routing": SIMPLE,
            "git": None,
            "check_files_changed": [],
            "sensitive_changes": [],
        }
        assert data == {**base, **fields}

    def follow_up(self) -> str:
        return str(self.follow_ups / "s1-followup.json")


def test_a_normal_stream(workspace: Path) -> None:
    item = {
        "content": ANSWER,
        "thinking": "Look at notes.md.",
        "prompt_eval_count": 321,
        "eval_count": 18,
    }
    run = Run([item], workspace, think=True)
    run.expect(tokens_in=321, tokens_out=18)
    assert run.streamed == ANSWER
    thinking = [e.text for e in run.log.of_type("answer_delta") if e.thinking]  # type: ignore[attr-defined]
    assert "".join(thinking) == "Look at notes.md."
    assert run.types[:2] == ["task_started", "model_request"]
    assert run.types[-2:] == ["model_reply", "task_finished"]
    reply = run.log.of_type("model_reply")[0].to_dict()
    assert (reply["content"], reply["thinking"], reply["done_reason"]) == (
        ANSWER,
        "Look at notes.md.",
        "stop",
    )
    (request,) = run.requests
    body = request.body
    assert body["stream"] is True and "tools" not in body and body["think"] is True
    assert body["options"]["num_ctx"] >= 8192
    assert "notes.md" in body["messages"][1]["content"]


def test_an_error_line_mid_stream(workspace: Path) -> None:
    run = Run([Fault.stream_error("CUDA error: out of memory")], workspace)
    tokens_in, tokens_out = run.estimated("Let me look")
    run.expect(
        status="error",
        output="Let me look",
        termination_reason="error",
        error=f"Ollama at {run.url} stopped the answer with an error: CUDA error: out of memory",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        follow_up_task=run.follow_up(),
    )
    assert run.streamed == "Let me look"
    assert len(run.requests) == 1  # an error line is the model failing: not retried


def test_a_connection_dropped_mid_stream_is_not_retried(workspace: Path) -> None:
    run = Run([Fault.reset(), "never asked for"], workspace)
    tokens_in, tokens_out = run.estimated("Let me look")
    error = run.result.error or ""
    run.expect(
        status="error",
        output="Let me look",
        termination_reason="error",
        error=error,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        follow_up_task=run.follow_up(),
    )
    assert error.startswith(f"Ollama at {run.url} cut the connection mid-answer, after 11 ")
    assert "not shown twice" in error
    assert len(run.requests) == 1
    assert run.streamed == "Let me look"  # once: nothing replayed


def test_a_connection_dropped_before_any_text_is_retried(workspace: Path) -> None:
    item = {"content": ANSWER, "prompt_eval_count": 300, "eval_count": 16}
    run = Run([Fault.hang(0), item], workspace)
    run.expect(tokens_in=300, tokens_out=16)
    assert len(run.requests) == 2
    assert run.streamed == ANSWER
    (warning,) = run.warnings  # (the runner makes events of them for models it builds)
    assert "cut the connection before the answer began" in warning


def test_done_reason_length_is_reported_as_truncated(workspace: Path) -> None:
    item = {
        "content": "It holds the notes for",
        "done_reason": "length",
        "prompt_eval_count": 300,
        "eval_count": 6,
    }
    run = Run([item], workspace)
    run.expect(
        status="fail",
        output="It holds the notes for",
        tokens_in=300,
        tokens_out=6,
        remaining=[TRUNCATED],
        follow_up_task=run.follow_up(),
    )
    (warning,) = run.log.of_type("warning")
    assert "done_reason 'length'" in warning.to_dict()["message"]
    assert run.log.of_type("model_reply")[0].to_dict()["done_reason"] == "length"


def test_a_server_that_never_answers_times_out(workspace: Path) -> None:
    run = Run([Fault.hang(60)], workspace, first_request_timeout=0.5)
    run.expect(
        status="error",
        output="",
        termination_reason="error",
        tokens_in=0,
        tokens_out=0,
        error=f"Ollama at {run.url} did not answer for 'qwen3:8b' within 0.5 s (the first "
        "request's time limit, since it loads the model: raise first_request_timeout, "
        "3 × request_timeout from the settings, or use a smaller model).",
        follow_up_task=run.follow_up(),
    )
    assert run.seconds < 5


def test_a_stream_that_goes_quiet_hits_the_idle_timeout(workspace: Path) -> None:
    item = {"content": "one two three", "chunk_delay": 30}
    run = Run([item], workspace, stream_idle_timeout=0.5)
    tokens_in, tokens_out = run.estimated("one ")
    run.expect(
        status="error",
        output="one ",
        termination_reason="error",
        error=f"Ollama at {run.url} went quiet mid-answer: nothing for 0.5 s after 4 "
        "characters. The server seems stuck (restart it), or raise stream_idle_timeout.",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        follow_up_task=run.follow_up(),
    )
    assert run.seconds < 5  # not the 30 s the server would have taken


def test_the_wall_clock_cuts_a_slow_stream(workspace: Path) -> None:
    item = {"content": "a b c d e f g h i j", "chunk_delay": 0.3}
    run = Run([item], workspace, timeout_s=1.0)
    output = run.result.output
    assert output and "a b c d e f g h i j".startswith(output) and len(output) < 19
    tokens_in, tokens_out = run.estimated(output)
    run.expect(
        status="fail",
        output=output,
        termination_reason="timeout",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        follow_up_task=run.follow_up(),
    )
    (guardrail,) = run.log.of_type("guardrail")
    assert guardrail.to_dict()["guardrail"] == "wall_clock"
    assert "still answering when the task's wall clock ran out" in guardrail.to_dict()["reason"]
    assert run.seconds < 3


def test_the_openai_compatible_backend_streams_too(workspace: Path) -> None:
    item = {"content": ANSWER, "prompt_eval_count": 200, "eval_count": 15}
    run = Run([item], workspace, backend=OpenAICompatModel)
    run.expect(tokens_in=200, tokens_out=15)
    assert run.streamed == ANSWER
    body = run.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}

    run = Run([Fault.stream_error("boom")], workspace, backend=OpenAICompatModel)
    assert (run.result.status, run.result.output) == ("error", "Let me ")
    assert run.result.error == f"The server at {run.url}/v1 stopped the answer with an error: boom"

    cut = {"content": "It holds", "done_reason": "length"}
    run = Run([cut], workspace, backend=OpenAICompatModel)
    assert (run.result.status, run.result.remaining) == ("fail", [TRUNCATED])


def test_the_openai_compatible_backend_retries_and_times_out_as_ollama_does(
    workspace: Path,
) -> None:
    item = {"content": ANSWER, "prompt_eval_count": 300, "eval_count": 16}
    run = Run([Fault.hang(0), item], workspace, backend=OpenAICompatModel)
    run.expect(tokens_in=300, tokens_out=16)
    assert len(run.requests) == 2
    (warning,) = run.warnings
    assert "cut the connection before the answer began" in warning

    run = Run([Fault.hang(60)], workspace, backend=OpenAICompatModel, first_request_timeout=0.5)
    assert run.result.error == (
        f"The server at {run.url}/v1 did not answer for 'qwen3:8b' within 0.5 s (the first "
        "request's time limit, since it may load the model: raise first_request_timeout, "
        "3 × request_timeout from the settings, or use a smaller model)."
    )
    assert run.seconds < 5


# -- the command line ------------------------------------------------------------------------
def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "localhand", "run", *args, "--model", "qwen3:8b"]


def environment(host: str) -> dict[str, str]:
    return {**os.environ, "OLLAMA_HOST": host, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


def test_the_cli_runs_a_simple_task_and_prints_the_result(workspace: Path) -> None:
    item = {"content": ANSWER, "prompt_eval_count": 250, "eval_count": 16}
    with FakeOllama([item]) as server:
        done = subprocess.run(
            command(QUESTION, "--simple", "--json", "--workspace", str(workspace)),
            env=environment(server.url),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        (request,) = server.chat_requests
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1  # --json: the Result alone, no streamed text
    result = json.loads(lines[0])
    assert result["status"] == "pass" and result["output"] == ANSWER
    assert (result["tokens_in"], result["tokens_out"]) == (250, 16)
    assert result["termination_reason"] == "final_answer"
    assert result["routing"] == route(QUESTION, False).to_dict()
    assert request.body["stream"] is True


def read_until(proc: subprocess.Popen[bytes], text: str, seconds: float = 30) -> str:
    """What the process wrote to stdout until ``text`` appeared (it is still running then)."""
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + seconds
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{text!r} never came; got {seen!r}"
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            piece = os.read(proc.stdout.fileno(), 4096)
            assert piece, f"stdout closed before {text!r}; got {seen!r}"
            seen += piece
    return seen.decode()


@contextmanager
def answering(workspace: Path, item: dict[str, Any]) -> Iterator[subprocess.Popen[bytes]]:
    """``localhand run QUESTION`` on a fake that answers ``item``, started (its output is read as
    it comes), and killed at the end if still running."""
    with FakeOllama([item]) as server:
        proc = subprocess.Popen(
            command(QUESTION, "--workspace", str(workspace)),
            env=environment(server.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        try:
            yield proc
        finally:
            proc.kill()


@pytest.mark.skipif(sys.platform == "win32", reason="select on pipes")
def test_the_answer_appears_on_stdout_while_it_streams(workspace: Path) -> None:
    item = {"content": "first second third fourth", "chunk_delay": 0.7}
    with answering(workspace, item) as proc:
        early = read_until(proc, "first")
        assert proc.poll() is None  # still streaming
        assert "fourth" not in early
        rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert early + rest.decode() == "first second third fourth\n"  # once, not again at the end
    assert "first second" not in err.decode()
    assert "■ pass (final_answer)" in err.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
@pytest.mark.usefixtures("sigint_reaches_children")  # even when pytest runs in the background
def test_ctrl_c_mid_stream_ends_cleanly_as_cancelled(workspace: Path) -> None:
    item = {"content": "first second third", "chunk_delay": 30}
    with answering(workspace, item) as proc:
        early = read_until(proc, "first")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    stderr = err.decode()
    assert "Traceback" not in stderr
    assert "■ fail (cancelled)" in stderr
    assert proc.returncode == 130  # Ctrl-C: 128 + SIGINT, after the Result was written
    assert early + rest.decode() == "first \n"
