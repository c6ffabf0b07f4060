"""What the tests of the network backends share: the task they send, the tool it offers and
the call the fake answers with, and a builder of backends that closes them afterwards.

PYTEST_DONT_REWRITE: a helper module; it asserts nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localhand.errors import ModelTimeout
from localhand.models.base import StreamChunk
from localhand.testing import FakeOllama


def function_tool(name: str, description: str, *arguments: str) -> dict[str, Any]:
    """A tool in the OpenAI shape both wires take, whose ``arguments`` are all strings."""
    properties = {argument: {"type": "string"} for argument in arguments}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


def tool_reply(name: str, **arguments: Any) -> dict[str, Any]:
    """A fake server's reply that calls ``name`` once with ``arguments``."""
    return {"tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


USER = [{"role": "user", "content": "List the files."}]
TOOLS = [function_tool("list_files", "List files in a directory", "path")]
CALL = tool_reply("list_files", path=".")


def building(backend: Callable[..., Any], warnings: list[str]) -> Iterator[Callable[..., Any]]:
    """The body of a ``make`` fixture: builds ``backend(model, host, ...)`` with tiny timeouts,
    no real backoff and warnings collected in ``warnings``, and closes each afterwards."""
    built: list[Any] = []

    def build(server: FakeOllama | str, model: str = "qwen3:8b", **kw: Any) -> Any:
        settings: dict[str, Any] = {
            "request_timeout": 5.0,
            "first_request_timeout": 5.0,
            "backoff": 0.0,
            "on_warning": warnings.append,
            **kw,
        }
        host = server if isinstance(server, str) else server.url
        built.append(backend(model, host, **settings))
        return built[-1]

    yield build
    for made in built:
        made.close()


def went_quiet(stream: Iterator[StreamChunk]) -> tuple[str, str, float]:
    """A stream read until its idle limit ends it: the first delta's text, the ModelTimeout's
    message, and the seconds from the first read to that error."""
    started = time.monotonic()
    first = next(stream).content
    with pytest.raises(ModelTimeout) as caught:
        next(stream)
    return first, str(caught.value), time.monotonic() - started
