"""``localhand mcp --http PORT``: Streamable HTTP on loopback, behind a bearer token.

Only 127.0.0.1 is served, and every request must carry ``Authorization: Bearer TOKEN``:
a web page in the user's browser can reach loopback ports, and another local user can too,
and either could otherwise start runs that execute code in the user's workspaces. The SDK's
own DNS-rebinding protection (the Host header must be a loopback name) stays on as well.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

HOST = "127.0.0.1"
PATH = "/mcp"


def new_token() -> str:
    """A random token for a server started without ``LOCALHAND_MCP_TOKEN``."""
    return secrets.token_urlsafe(24)


class TokenGuard:
    """ASGI middleware: HTTP requests without the bearer token get 401; the rest (and the
    lifespan events the SDK's session manager needs) go through."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = json.dumps({"error": "missing or wrong bearer token"}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="localhand"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                return hmac.compare_digest(value, self.expected)
        return False


def serve_http(app: MCPServer, port: int, token: str) -> None:
    """Serve ``app`` on ``http://127.0.0.1:PORT/mcp`` until interrupted."""
    import uvicorn  # the dashboard extra

    guarded = TokenGuard(app.streamable_http_app(streamable_http_path=PATH, host=HOST), token)
    uvicorn.run(guarded, host=HOST, port=port, log_level="warning")


__all__ = ["HOST", "PATH", "TokenGuard", "new_token", "serve_http"]
