"""``--request-timeout``: the seeds' per-request limit, under the name users look for."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cli_helpers import localhand, options_of
from localhand.testing import FakeOllama
from localhand.testing._fake_faults import Fault
from workspaces import example_copy


@pytest.mark.parametrize("command", ["run", "plan", "batch", "eval", "mcp"])
def test_every_command_that_asks_a_model_takes_it(command: str) -> None:
    argv = {
        "run": ["task"],
        "plan": ["plan.yaml"],
        "batch": ["tasks.jsonl"],
        "eval": ["--model", "m"],
        "mcp": [],
    }[command]
    options = options_of(command, [*argv, "--request-timeout", "120"])
    assert options["request_timeout"] == 120.0
    options = options_of(command, argv)
    assert options["request_timeout"] is None  # the setting's default then


def test_a_request_past_the_limit_ends_the_run_with_a_clear_error(tmp_path: Path) -> None:
    demo = example_copy("calc", tmp_path / "demo")
    # The first request may take three times the limit (it may load the model): 3 s here.
    with FakeOllama(script=[Fault.hang(30)], models={"qwen3:8b": {}}) as server:
        started = time.monotonic()
        done = localhand(
            "run", "Fix calc.py", "--workspace", str(demo), "--model", "qwen3:8b",
            "--request-timeout", "1", "--json",
            host=server.url,
        )  # fmt: skip
        took = time.monotonic() - started
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (done.returncode, result["status"]) == (2, "error"), done.stderr
    assert "time limit" in result["error"], result["error"]
    assert took < 25, "cut at the limit, not at the hang's end"
