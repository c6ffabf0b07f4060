"""``localhand mcp`` started by the MCP SDK's stdio client, as Claude Code starts it.

Import it after ``optional_deps.module("mcp", ...)``: it needs the SDK.

PYTEST_DONT_REWRITE: a helper module; it asserts nothing."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client, StdioServerParameters, stdio_client


@asynccontextmanager
async def localhand_mcp(
    *args: str, host: str = "http://127.0.0.1:9", **client: Any
) -> AsyncIterator[Client]:
    """``localhand mcp ARGS`` on the Ollama at ``host``, and a client session to it."""
    env = {**os.environ, "OLLAMA_HOST": host, "NO_COLOR": "1"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "localhand", "mcp", "--backend", "ollama", "--model", "qwen3:8b", *args],
        env=env,
    )
    async with Client(stdio_client(params), **client) as session:
        yield session
