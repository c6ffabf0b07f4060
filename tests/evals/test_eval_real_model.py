"""``localhand eval`` against a real model server: llama-cpp-python's OpenAI-compatible server
on loopback, serving the tiny model, on one task of the built-in suite. What the tiny model
scores is not asserted (it is weak: see docs/eval.md); that the eval measures a real server's
runs, through the batch and the run store, is."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_server_helpers import tiny_server
from test_eval_command import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The GGUF's own chat template: it puts the system prompt in the first user turn, where
    # --chat_format gemma would drop it.
    with tiny_server(tmp_path_factory.mktemp("llama_server")) as url:
        yield url


def test_the_tiny_model_on_a_tier_1_task_is_measured_end_to_end(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALHAND_TOOL_MODE", "schema")  # its template ignores `tools`
    out, db = tmp_path / "out", Path(os.environ["LOCALHAND_DB"])
    code, stdout, stderr = run_cli(
        "eval",
        "--tier",
        "1",
        "--task",
        "create-hello",
        "--backend",
        "openai",
        "--host",
        server,
        "--model",
        "tiny",
        "--max-reply-tokens",
        "256",
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, stderr
    report = json.loads(stdout)
    (run,) = report["runs"]
    (model,) = report["models"]
    assert run["status"] in ("pass", "partial_pass", "fail"), run
    assert run["where"] == server and run["run_id"]
    assert 1 <= run["requests"] <= 5 and run["iterations"] <= 5  # tier 1: 5 iterations
    assert run["tokens_in"] > 300, "the server counted the prompt, system prompt and all"
    assert len(run["ttft_s"]) == run["requests"] and all(t > 0 for t in run["ttft_s"])
    assert model["runs"] == 1 and model["rates"][run["status"]]["k"] == 1
    assert report["settings"]["tool_mode"] == "schema"
    assert (out / "report.html").is_file() and db.is_file()
