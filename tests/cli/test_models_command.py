"""``localhand models``: what each backend serves, asked over real HTTP of the fake Ollama (its
native API, its ``/v1``, and llama-server's ``/props``), the tiny model's package for the
embedded listing, and servers that are down or never answer."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localhand.cli import main
from localhand.testing import FakeOllama
from optional_deps import tiny_gguf

MODELS = {
    "qwen3:8b": {"context_length": 40960, "tools": True, "thinking": True},
    "llama3.1:8b": {"context_length": 131072, "tools": True},
    "gemma2:2b": {"context_length": 8192, "tools": False},
}


@pytest.fixture(autouse=True)
def plain_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No config file, no server addresses from the machine running the tests."""
    monkeypatch.chdir(tmp_path)
    for var in ("OLLAMA_HOST", "OPENAI_BASE_URL", "LOCALHAND_CONFIG", "LOCALHAND_GGUF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def listing(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["models", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def place(document: dict[str, Any], backend: str) -> dict[str, Any]:
    (found,) = [p for p in document["places"] if p["backend"] == backend]
    return found


@pytest.fixture
def silent_port() -> Iterator[str]:
    """A server that takes connections and never answers (a hung process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_ollama_models_with_window_tools_and_profile(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models=MODELS) as fake:
        code, document = listing(capsys, "--host", fake.url, "--backend", "ollama")
        shown = [r.body["model"] for r in fake.requests if r.path == "/api/show"]
    assert code == 0 and document["model"] == "qwen3:8b"
    ollama = place(document, "ollama")
    assert ollama["reachable"] and ollama["where"] == fake.url
    by_name = {m["name"]: m for m in ollama["models"]}
    assert sorted(by_name) == sorted(MODELS)
    assert sorted(shown) == sorted(MODELS)  # each model's /api/show, for window and tools
    for name, spec in MODELS.items():
        assert by_name[name]["context"] == spec["context_length"]
        assert by_name[name]["tools"] is spec["tools"]
        assert by_name[name]["size"] > 0
    assert by_name["qwen3:8b"]["profile"] == "qwen3"
    assert by_name["llama3.1:8b"]["profile"] == "llama3"


def test_the_text_listing_names_models_and_the_servers_that_did_not_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOllama(models=MODELS) as fake:
        assert main(["models", "--host", fake.url, "--backend", "ollama"]) == 0
    out = capsys.readouterr().out
    assert f"Ollama at {fake.url}:" in out
    assert "qwen3:8b" in out and "40,960 ctx" in out and "profile qwen3" in out
    assert "no tools" in out  # gemma2:2b
    assert "localhand run uses qwen3:8b unless --model says otherwise (Ollama has it)." in out

    down = closed_port_url()
    assert main(["models", "--host", down, "--backend", "ollama"]) == 1
    out = capsys.readouterr().out
    assert f"Ollama at {down}: not available (Connection refused)" in out
    assert "No models found" in out
    assert "(no server listed here has it)" in out


def test_llama_server_listed_with_its_slot_window(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models={"qwen3:8b": {}}, props=True, default_num_ctx=16384) as fake:
        code, document = listing(capsys, "--host", fake.url, "--backend", "openai")
    assert code == 0
    server = place(document, "openai")
    assert server["kind"] == "llama-server"
    assert server["where"] == fake.url + "/v1"
    (model,) = server["models"]
    assert (model["name"], model["context"], model["profile"]) == ("qwen3:8b", 16384, "qwen3")


def test_a_plain_openai_server_lists_its_ids(capsys: pytest.CaptureFixture[str]) -> None:
    # Ollama's /v1 stands for LM Studio here: ids only, no /props.
    with FakeOllama(models={"llama3.1:8b": {}}) as fake:
        code, document = listing(capsys, "--host", fake.url + "/v1", "--backend", "openai")
    server = place(document, "openai")
    assert code == 0 and server["kind"] == "OpenAI-compatible"
    assert [(m["name"], m["context"], m["tools"]) for m in server["models"]] == [
        ("llama3.1:8b", None, None)  # the server does not say
    ]


def test_auto_with_a_host_that_is_not_ollama_asks_it_as_openai(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOllama(models={"qwen3:8b": {}}, props=True) as fake:
        # Under /v1 there is no Ollama API (/v1/api/tags is a 404), as at a llama-server.
        code, document = listing(capsys, "--host", fake.url + "/v1")
    first = document["places"][0]
    assert code == 0
    assert (first["backend"], first["kind"], first["where"]) == (
        "openai",
        "llama-server",
        fake.url + "/v1",
    )
    assert [m["name"] for m in first["models"]] == ["qwen3:8b"]
    assert place(document, "embedded")  # auto also lists the GGUFs


def test_an_empty_ollama_is_reachable_with_no_models(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOllama(models={}) as fake:
        code, document = listing(capsys, "--host", fake.url, "--backend", "ollama")
    assert code == 1
    assert place(document, "ollama") | {"where": None} == {
        "backend": "ollama",
        "where": None,
        "kind": "Ollama",
        "models": [],
        "error": None,
        "reachable": True,
    }


def test_a_server_that_never_answers_does_not_hang_the_listing(
    capsys: pytest.CaptureFixture[str], silent_port: str
) -> None:
    started = time.monotonic()
    code, document = listing(capsys, "--host", silent_port, "--timeout", "0.5")
    elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed
    first = document["places"][0]
    assert first["reachable"] is False
    assert first["error"] == "no answer within 0.5 s"
    assert code in (0, 1)  # 0 when the tiny model's package is installed


def test_embedded_lists_the_tiny_model_and_a_configured_gguf(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny = tiny_gguf()
    mine = tmp_path / "Qwen3-4B-Q4_K_M.gguf"
    mine.write_bytes(b"GGUF" + b"\0" * 100)
    monkeypatch.setenv("LOCALHAND_GGUF", str(mine))
    code, document = listing(capsys, "--backend", "embedded")
    embedded = place(document, "embedded")
    assert code == 0 and embedded["reachable"]
    by_path = {m["where"]: m for m in embedded["models"]}
    assert by_path[str(mine)]["profile"] == "qwen3"
    assert by_path[str(mine)]["size"] == 104
    assert by_path[str(tiny)]["profile"] == "gemma3"
    assert by_path[str(tiny)]["size"] == tiny.stat().st_size
    assert all(m["context"] == 8192 and m["tools"] for m in embedded["models"])


def test_a_configured_gguf_that_is_gone_is_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALHAND_GGUF", str(tmp_path / "gone.gguf"))
    _, document = listing(capsys, "--backend", "embedded")
    assert "gone.gguf does not exist" in place(document, "embedded")["error"]


def test_a_bad_timeout_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_auto_asks_ollama_host_and_openai_base_url_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        FakeOllama(models={"qwen3:8b": {}}) as ollama,
        FakeOllama(models={"llama3.1:8b": {}}, props=True) as server,
    ):
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code, document = listing(capsys, "--timeout", "1")
    assert code == 0
    by_where = {p["where"]: p for p in document["places"]}
    assert [m["name"] for m in by_where[ollama.url]["models"]] == ["qwen3:8b"]
    assert [m["name"] for m in by_where[server.url + "/v1"]["models"]] == ["llama3.1:8b"]
    assert by_where[server.url + "/v1"]["kind"] == "llama-server"
    assert "http://127.0.0.1:8000/v1" in by_where  # the defaults are asked too
