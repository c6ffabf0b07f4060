"""The MCP servers of one run, connected through the official SDK on a thread of their own.

The tool loop is synchronous and the SDK is async (anyio), so the servers live on an event
loop in a background thread (``anyio.from_thread.start_blocking_portal``), one long-lived
task per server that holds its ``Client`` open; a tool call is a blocking ``portal.call``.

What can go wrong, and what the run sees:

- A server that cannot start (no such program, exits at once, no answer to the handshake
  within ``startup_timeout``) is a ``ConfigError`` naming it, with the last lines of its
  stderr: the run does not start with tools missing that the user asked for.
- A call that takes longer than the server's ``timeout`` (or than the task's wall clock has
  left) is cancelled (the SDK sends ``notifications/cancelled``) and the model reads that it
  timed out. The server is then asked for its tool list; one that does not answer within
  ``PING_S`` is wedged
  (hung, or flooding its output) and is stopped, its tools answering that from then on.
- A server that exits mid-run makes its calls fail with what it said on stderr; the run goes on.
- Its stderr is read by a thread that keeps only the tail, so a server that floods it costs
  no memory and no terminal.

Servers get the scrubbed environment commands get (``safety.environment``: no secret-looking
variable) plus their own ``env``, and are stopped, process group and all, when the run ends.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from localhand._version import __version__
from localhand.errors import ConfigError
from localhand.mcp.config import McpServer
from localhand.safety.secrets.environment import command_environment

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

PING_S = 5.0
"""How long a server whose call timed out has to answer a request (a tool listing) before it
is taken for wedged and stopped."""
STOP_S = 10.0
"""How long closing waits for the servers to stop (the SDK: stdin closed, 2 s, SIGTERM, 2 s,
SIGKILL to the process group)."""
MAX_TOOLS = 128
"""Tools taken from one server; a listing longer than that is cut, with a warning."""
_MAX_PAGES = 20


class McpCallError(Exception):
    """A call that did not get a result: its message is for the model."""


@dataclass
class _Connection:
    server: McpServer
    stderr: StderrTail
    client: Client | None = None
    tools: list[Tool] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    dead: str | None = None
    """Why its tools no longer work, once they do not."""
    stop: anyio.Event | None = None
    host: Future[None] | None = None


class McpClients:
    """The connections to ``servers`` (see the module docstring)::

    with McpClients(servers, warn=print) as clients:
        for server, tool in clients.tools(): ...
        result = clients.call("time", "get_current_time", {"timezone": "UTC"})
    """

    def __init__(self, servers: Sequence[McpServer], *, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self._notes: list[str] = []
        """Warnings from the event loop's thread, passed on from the caller's: the event bus's
        subscribers (the run store's connection among them) belong to the run's thread."""
        self._connections = {s.name: _Connection(s, StderrTail()) for s in servers}
        self._portal_cm: Any = None
        self._portal: BlockingPortal | None = None

    def __enter__(self) -> McpClients:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Start every server and list its tools; a ``ConfigError`` if one fails."""
        _quiet_sdk_logging()
        self._portal_cm = start_blocking_portal(name="localhand-mcp")
        self._portal = self._portal_cm.__enter__()
        for connection in self._connections.values():
            connection.host = self._portal.start_task_soon(self._host, connection)
        failed = None
        for connection in self._connections.values():
            # The host's own watchdog ends a slow start; this bound only guards against a
            # loop that never ran the host at all.
            if not connection.ready.wait(connection.server.startup_timeout_s + STOP_S):
                connection.error = TimeoutError("its connection was never set up")
            if connection.error is not None and failed is None:
                failed = connection
        for note in self._notes:
            self.warn(note)
        if failed is not None:
            self.close()
            raise ConfigError(start_failure(failed.server, failed.error, failed.stderr.text()))

    @property
    def servers(self) -> list[McpServer]:
        """The servers, in configuration order."""
        return [c.server for c in self._connections.values()]

    def tools(self) -> list[tuple[McpServer, Tool]]:
        """Every server's tools, as the servers listed them, in configuration order."""
        return [(c.server, tool) for c in self._connections.values() for tool in c.tools]

    def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> CallToolResult:
        """Call ``tool`` on ``server``; an ``McpCallError`` says why no result came."""
        connection = self._connections[server]
        if connection.dead is not None or self._portal is None:
            raise McpCallError(connection.dead or "localhand's MCP connections are closed")
        try:
            return self._portal.call(self._call, connection, tool, arguments, timeout_s)
        except TimeoutError:
            alive = self._portal.call(self._ping, connection)
            if not alive:
                connection.dead = (
                    f"the MCP server '{server}' stopped answering (a call ran past its "
                    f"{timeout_s:g} s and it did not answer for {PING_S:g} s after), so localhand "
                    "stopped it; "
                    "its tools do not work for the rest of this run"
                )
                self._portal.call(_set, connection.stop)
            raise McpCallError(
                f"{tool} (MCP server '{server}') did not finish within {timeout_s:g} s and was "
                "cancelled." + ("" if alive else f" {connection.dead}.")
            ) from None
        except McpCallError:
            raise
        except Exception as exc:
            raise McpCallError(self._failure(connection, exc)) from None

    def close(self) -> None:
        """Stop every server (process groups included) and the event loop's thread."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        for connection in self._connections.values():
            if connection.stop is not None:
                with suppress(RuntimeError):  # the loop has already ended
                    portal.call(_set, connection.stop)
        for connection in self._connections.values():
            if connection.host is not None:
                with suppress(BaseException):  # failed or stuck: the portal's stop cancels it
                    connection.host.result(timeout=STOP_S)
            connection.stderr.close()
        with suppress(RuntimeError):
            portal.call(portal.stop, True)
        self._portal_cm.__exit__(None, None, None)

    # -- on the event loop --------------------------------------------------------------

    async def _host(self, connection: _Connection) -> None:
        """Connect, list the tools, then hold the connection until told to stop."""
        server = connection.server
        connection.stop = anyio.Event()
        try:
            with anyio.CancelScope() as life:
                async with anyio.create_task_group() as group:
                    group.start_soon(_watch_startup, connection, life)
                    async with AsyncExitStack() as stack:
                        client = await stack.enter_async_context(
                            await _client(server, connection.stderr, stack)
                        )
                        connection.tools = await _list_tools(client, server, self._notes.append)
                        connection.client = client
                        connection.ready.set()
                        await connection.stop.wait()
                    group.cancel_scope.cancel()
            if not connection.ready.is_set():
                connection.error = TimeoutError(
                    f"no answer to the MCP handshake within {server.startup_timeout_s:g} s"
                )
        except anyio.get_cancelled_exc_class():  # the loop is stopping: let it
            connection.error = connection.error or TimeoutError("stopped before it was ready")
            raise
        except BaseException as exc:  # any failure is reported, never raised into the loop
            connection.error = exc
            if connection.ready.is_set():
                connection.dead = self._failure(connection, exc)
        finally:
            connection.ready.set()
            connection.client = None if connection.dead else connection.client

    async def _call(
        self, connection: _Connection, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> CallToolResult:
        if connection.client is None:
            raise McpCallError(
                connection.dead or f"the MCP server '{connection.server.name}' is gone"
            )
        with anyio.fail_after(timeout_s):
            return await connection.client.call_tool(tool, arguments)

    async def _ping(self, connection: _Connection) -> bool:
        if connection.client is None:
            return False
        # A listing, not a ping: the 2026-07-28 protocol has no ping, and every era answers
        # tools/list. "refresh" makes it a real round trip, not the SDK's cached copy.
        with anyio.move_on_after(PING_S):
            try:
                await connection.client.list_tools(cache_mode="refresh")
                return True
            except Exception:
                return False
        return False

    def _failure(self, connection: _Connection, exc: BaseException) -> str:
        """What the model reads when ``connection``'s server failed under a call."""
        name = connection.server.name
        what = _message(exc)
        tail = connection.stderr.text(lines=5)
        said = f" Its last words on stderr:\n{tail}" if tail else ""
        if "closed" in what.lower() or "broken" in what.lower():
            connection.dead = (
                f"the MCP server '{name}' has exited or closed its connection ({what}); its "
                "tools do not work for the rest of this run"
            )
            return connection.dead + "." + said
        return f"the MCP server '{name}' failed: {what}.{said}"


async def _client(server: McpServer, stderr: StderrTail, stack: AsyncExitStack) -> Client:
    from mcp import Client, Implementation, StdioServerParameters, stdio_client  # the mcp extra

    info = Implementation(name="localhand", version=__version__)
    if server.url:
        import httpx2  # third-party, loaded at first use
        from mcp.client.streamable_http import streamable_http_client  # the mcp extra

        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(server.headers), timeout=httpx2.Timeout(30, read=300))
        )
        return Client(streamable_http_client(server.url, http_client=http), client_info=info)
    params = StdioServerParameters(
        command=server.command or "",
        args=list(server.args),
        env=command_environment(dict(server.env)),
        cwd=server.cwd,
        encoding_error_handler="replace",
    )
    return Client(stdio_client(params, errlog=stderr.stream), client_info=info)


async def _list_tools(client: Client, server: McpServer, warn: Callable[[str], None]) -> list[Tool]:
    tools: list[Tool] = []
    cursor = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or len(tools) >= MAX_TOOLS:
            break
    if len(tools) > MAX_TOOLS:
        warn(
            f"MCP server '{server.name}' lists more than {MAX_TOOLS} tools; only the first "
            f"{MAX_TOOLS} are offered (name the ones you need with tools = [...])"
        )
    return tools[:MAX_TOOLS]


async def _watch_startup(connection: _Connection, life: anyio.CancelScope) -> None:
    await anyio.sleep(connection.server.startup_timeout_s)
    if not connection.ready.is_set():
        life.cancel()


def _set(event: anyio.Event | None) -> None:
    if event is not None:
        event.set()


def _message(exc: BaseException) -> str:
    """The innermost useful message of ``exc`` (task groups wrap what failed in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start_failure(server: McpServer, exc: BaseException | None, stderr: str) -> str:
    """The ``ConfigError`` message for a server that did not start."""
    what = _message(exc) if exc is not None else "it did not start"
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    if isinstance(inner, FileNotFoundError) and server.command:
        what = f"the program '{server.command}' was not found (is it installed and on PATH?)"
    elif "connection closed" in what.lower() and not server.url:
        what = "it exited (or closed its output) before answering the MCP handshake"
    where = f"the MCP server {server.describe()} from {server.source or 'the settings'}"
    if server.url:
        return (
            f"{where} could not start: {what}. Check its url, and its headers if it needs a "
            "token; or leave it out of the run."
        )
    said = f"\nits stderr ended with:\n{stderr}" if stderr else " (it wrote nothing to stderr)"
    return f"{where} could not start: {what}{said}\nFix its entry, or leave it out of the run."


class StderrTail:
    """A pipe for a server's stderr, read by a thread that keeps only the last ``keep``
    bytes: a flood of output costs neither memory nor the terminal."""

    def __init__(self, keep: int = 4096) -> None:
        self.keep = keep
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()
        self._read_fd, self._write_fd = os.pipe()
        self.stream = os.fdopen(self._write_fd, "w", encoding="utf-8", errors="replace")
        """The file the server's stderr goes to."""
        self._thread = threading.Thread(target=self._read, name="mcp-stderr", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._read_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self._lock:
                self._chunks.append(chunk)
                self._size += len(chunk)
                while self._size - len(self._chunks[0]) >= self.keep:
                    self._size -= len(self._chunks.popleft())
        os.close(self._read_fd)

    def text(self, lines: int = 20) -> str:
        """The last ``lines`` lines written (after a short wait for what is in the pipe)."""
        self._thread.join(timeout=0.2)
        with self._lock:
            data = b"".join(self._chunks)[-self.keep :]
        text = data.decode("utf-8", "replace").replace("\r", "")
        from localhand.safety.approval.approver import escape  # a server's bytes, shown to a person

        kept = [escape(line) for line in text.splitlines()[-lines:] if line.strip()]
        return "\n".join(f"  {line}" for line in kept)

    def close(self) -> None:
        """Close localhand's end of the pipe: the reader ends once the server's end is closed."""
        with suppress(OSError):
            self.stream.close()


def _quiet_sdk_logging() -> None:
    """The SDK logs through ``logging`` (a traceback for each unparseable line a server
    prints); Python would print those on stderr, over the live view. Failures reach the
    model and the person through localhand's own messages instead."""
    logger = logging.getLogger("mcp")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


__all__ = ["McpCallError", "McpClients", "StderrTail", "start_failure"]
