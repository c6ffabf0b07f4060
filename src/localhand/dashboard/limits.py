"""Request bodies are small JSON documents: anything bigger is refused before it is read.

The page sends a task (a description up to 20 000 characters, a workspace, a few verify
commands) or an approval (``{"approve": true}``); neither comes near ``MAX_BODY_BYTES``. The
limit is applied while the body arrives: a ``Content-Length`` over it is refused at once, and a
body without one (chunked) is refused as soon as what arrived passes it, so a client cannot make
the server buffer megabytes. The body (at most the limit) is then handed to the app as it came.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024


class BodyLimit:
    """ASGI middleware: 413 for an HTTP request body over ``max_bytes``."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see the disconnect
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._too_large(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        text = f"the request body is larger than {self.max_bytes // 1024} KiB\n".encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(text)).encode()),
            (b"connection", b"close"),  # the rest of the body is not read
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": text})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
