"""The README's quick start, as a user runs it with no Ollama: the command line falls back to
the embedded tiny model, which must end the task in ``pass`` (issue 21). One real run, as the
user gets it (the backend's default seed and temperature), and one with another seed and a
warmer temperature, so that a pass that hangs on one lucky sample shows up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import optional_deps
from cli_helpers import localhand
from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck
from localhand.models.embedded import EmbeddedModel
from localhand.run.guardrails import Limits
from workspaces import example_copy

pytestmark = pytest.mark.slow  # a real model: seconds each run

TASK = "Create hello.txt containing hello world, then run `python3 check_hello.py`"
VERIFY = "python3 check_hello.py"


def test_the_quick_start_passes_with_the_embedded_default(tmp_path: Path) -> None:
    optional_deps.tiny_gguf()
    demo = example_copy("quickstart", tmp_path / "demo")
    done = localhand(
        *("run", TASK, "--workspace", str(demo), "--max-iterations", "6", "--timeout", "240"),
        *("--verify", VERIFY, "--json"),
        host="http://127.0.0.1:9",  # nothing listens there: no Ollama, as on a new machine
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["model_used"] == "gemma-3-270m-q4_k_m"
    assert result["status"] == "pass", result
    assert result["files_modified"] == ["hello.txt"]
    assert "hello world" in (demo / "hello.txt").read_text().lower()


def test_the_quick_start_passes_at_another_seed(tmp_path: Path) -> None:
    model = EmbeddedModel(optional_deps.tiny_gguf(), seed=3, temperature=0.6)
    demo = example_copy("quickstart", tmp_path / "demo")
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(
        model,
        demo,
        limits=Limits(max_iterations=6, wall_clock_s=240),
        bus=bus,
        checks=[CommandCheck(VERIFY)],
    )
    result = agent.run(TASK)
    calls = [(e.tool_name, e.args_summary) for e in log.of_type("tool_call")]
    assert result.status == "pass", calls
    # Every call could work: the grammar offers no file that does not exist.
    assert all(e.ok for e in log.of_type("tool_call")), calls
