"""``localhand doctor`` against the fake Ollama (which answers ``/api/show``, ``/api/ps`` and
``/api/version`` as Ollama does, its 404 for a model it lacks included) and against servers
that are not there: the findings, their fixes as typed, the JSON document and the exit codes
(0 nothing to change, 1 something to change, 2 no server answered)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from localhand.cli import main
from localhand.testing import FakeOllama

MODELS = {"qwen3:8b": {"context_length": 40960}, "gemma2:2b": {"context_length": 8192}}


@pytest.fixture(autouse=True)
def plain_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No config file, no server addresses from the machine running the tests."""
    monkeypatch.chdir(tmp_path)
    for var in ("OLLAMA_HOST", "OPENAI_BASE_URL", "LOCALHAND_CONFIG", "LOCALHAND_NUM_CTX_MAX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["doctor", "--json", "--backend", "ollama", *args])
    return code, json.loads(capsys.readouterr().out)["servers"]


def fixes(server: dict[str, Any]) -> list[str]:
    return [f["fix"] for f in server["findings"] if f["severity"] != "note"]


def test_a_model_loaded_with_a_small_window_names_ollama_context_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOllama(models=MODELS) as fake:
        fake.preload("qwen3:8b", 4096)  # Ollama's default window on a small GPU
        code, (server,) = doctor(capsys, "--host", fake.url, "--model", "qwen3:8b", "-v")
    assert code == 1
    assert server["backend"] == "Ollama" and server["model"] == "qwen3:8b"
    (finding,) = server["findings"]
    assert finding["severity"] == "warning" and "4,096-token window" in finding["what"]
    window = int(finding["fix"].removeprefix("OLLAMA_CONTEXT_LENGTH="))
    needed = int(finding["what"].split("needs about ")[1].split()[0].replace(",", ""))
    assert window >= needed > 8192  # the first prompt, a run's growth and a reply
    assert "GB of KV cache" in finding["what"]  # what num_ctx costs, from /api/show
    assert "/api/ps context_length=4096" in finding["basis"]


def test_a_model_loaded_with_enough_window_needs_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOllama(models=MODELS) as fake:
        fake.preload("qwen3:8b", 32768)
        code, (server,) = doctor(capsys, "--host", fake.url, "--model", "qwen3:8b")
    assert code == 0
    assert fixes(server) == []
    assert "basis" not in server["findings"][0]  # only with -v


def test_a_model_trained_for_less_than_a_run_needs(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models=MODELS) as fake:
        code, (server,) = doctor(capsys, "--host", fake.url, "--model", "gemma2:2b")
    assert code == 1
    assert "trained for 8,192 tokens" in server["findings"][0]["what"]


def test_num_ctx_max_below_a_run_names_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALHAND_NUM_CTX_MAX", "4096")
    with FakeOllama(models=MODELS) as fake:
        code, (server,) = doctor(capsys, "--host", fake.url, "--model", "qwen3:8b")
    assert code == 1
    assert fixes(server)[0].startswith("LOCALHAND_NUM_CTX_MAX=")


def test_a_missing_model_lists_what_the_server_has(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models=MODELS) as fake:
        code, (server,) = doctor(capsys, "--host", fake.url, "--model", "qwen3:32b", "-v")
    assert code == 1
    (finding,) = server["findings"]
    assert finding["severity"] == "error" and finding["fix"] == "ollama pull qwen3:32b"
    assert "qwen3:8b" in finding["what"] and "gemma2:2b" in finding["what"]
    assert "HTTP 404 for /api/show" in finding["basis"]  # Ollama's answer for a missing model


def test_the_text_says_the_same_as_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models=MODELS) as fake:
        fake.preload("qwen3:8b", 4096)
        code = main(["doctor", "--backend", "ollama", "--host", fake.url, "-m", "qwen3:8b", "-v"])
        text = capsys.readouterr().out
        _, (server,) = doctor(capsys, "--host", fake.url, "--model", "qwen3:8b", "-v")
    assert code == 1
    for finding in server["findings"]:
        assert finding["what"] in text and f"fix: {finding['fix']}" in text
        assert f"read: {finding['basis']}" in text


def test_no_server_answering_is_exit_2_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert main(["doctor", "--host", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("localhand doctor: no model server answered") and url in err
