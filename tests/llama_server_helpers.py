"""llama-cpp-python's OpenAI-compatible server on loopback, serving the tiny model, for the
tests that need a real model server (skipped without the embedded extra, required in CI)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import optional_deps

STARTUP_S = 90


@contextmanager
def tiny_server(log_dir: Path, *options: str) -> Iterator[str]:
    """The server's URL while it runs; ``options`` are llama_cpp.server's (``--chat_format``)."""
    gguf = optional_deps.llama_cpp_server()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = log_dir / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "tiny",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--verbose", "false",
        *options,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited:\n{log.read_text(errors='replace')}")
            try:
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
