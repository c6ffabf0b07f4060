"""Who may use the dashboard. It can start tasks that run shell commands, so it is guarded.

- Every request needs the dashboard's token, on loopback too (as Jupyter does): any local user
  or process can reach a loopback port, and the page can start commands as the user who runs
  ``localhand serve``. The token is ``--token``/``LOCALHAND_TOKEN``, else generated at start-up
  and printed in the URL (``http://127.0.0.1:8765/?token=…``).
- Opening that URL stores the token in an HttpOnly, SameSite=Strict cookie (named after the
  port, so two dashboards on one host keep theirs apart) and redirects to the page without it,
  so the token does not stay in the address bar or the history. Afterwards the page, its API
  calls and its WebSockets carry the cookie; scripts send ``Authorization: Bearer TOKEN``.
- Tokens are compared in constant time; a request without a valid one gets 401 and a line
  saying how to get in.
- It listens on loopback unless told otherwise; any other address needs ``allow_remote``.
- On loopback, the ``Host`` header must name loopback too: a web page on another site cannot
  reach it through DNS rebinding.
- A request that changes something, and every WebSocket, must come from the dashboard's own
  origin when a browser sends one: another site cannot start tasks or read runs.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localhand.errors import ConfigError

COOKIE = "localhand-token"
MIN_TOKEN_CHARS = 16
TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~+/=-]+")
"""What a token may contain: safe in a cookie and, quoted, in a URL."""
NO_TOKEN = (
    "this dashboard needs its token: open the URL printed by `localhand serve` "
    "(it ends in ?token=...), or send the header Authorization: Bearer TOKEN"
)
WRONG_TOKEN = (
    "wrong or outdated token: open the URL printed by `localhand serve` (a new token is "
    "generated each time it starts, unless given with --token or LOCALHAND_TOKEN)"
)
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),  # no framing: the Approve button cannot be clickjacked
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh random token (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def check_token(token: str) -> str:
    """``token`` when it is usable, else a ``ConfigError`` saying what is wrong with it."""
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the token must be at least {MIN_TOKEN_CHARS} characters long")
    if not TOKEN_CHARS.fullmatch(token):
        raise ConfigError("the token may only contain letters, digits and - . _ ~ + / =")
    return token


def check_bind(host: str, token: str | None, allow_remote: bool) -> str:
    """The token the dashboard will require when listening on ``host``: ``token``, or a new
    one when none is given. Raises ConfigError when the combination is unsafe or unclear."""
    if token is not None:
        check_token(token)
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"refusing to listen on {host}: anyone who can reach it could start tasks that run "
            "commands on this machine. Pass --allow-remote to do it anyway (the token is then "
            "all that stands in the way: keep it secret, and prefer an SSH tunnel)"
        )
    return token or new_token()


def cookie_name(scope: Scope) -> str:
    """The token cookie's name for the server answering ``scope``: cookies are not kept apart
    by port, so each port gets its own name."""
    server = scope.get("server")
    return f"{COOKIE}-{server[1]}" if server and server[1] else COOKIE


class Guard:
    """ASGI middleware applying the rules in this module's docstring."""

    def __init__(self, app: ASGIApp, *, token: str, loopback_only: bool) -> None:
        self.app = app
        self.token = check_token(token).encode()
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem = self._origin_problem(scope, headers)
        if problem is None and _is_page_visit(scope) and _query_token(scope) is not None:
            if self._valid(_query_token(scope)):
                await _enter(scope, send, self.token.decode())
                return
            problem = 401, WRONG_TOKEN
        if problem is None and not self._authorised(scope, headers):
            problem = 401, NO_TOKEN
        if problem is not None:
            await _refuse(scope, send, *problem)
            return
        await self.app(scope, receive, _with_headers(send) if scope["type"] == "http" else send)

    def _origin_problem(self, scope: Scope, headers: Headers) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if self.loopback_only and not is_loopback(urlsplit(f"//{host}").hostname or ""):
            return 400, "this dashboard only answers on localhost"
        origin = headers.get("origin")
        unsafe = scope["type"] == "websocket" or scope["method"] not in ("GET", "HEAD", "OPTIONS")
        if unsafe and origin is not None and urlsplit(origin).netloc != host:
            return 403, "cross-origin requests are not allowed"
        return None

    def _authorised(self, scope: Scope, headers: Headers) -> bool:
        auth = headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        cookie = cookie_parser(headers.get("cookie", "")).get(cookie_name(scope))
        # Every candidate is compared, so timing does not tell which one was present.
        results = [self._valid(c) for c in (bearer, cookie, _query_token(scope))]
        return any(results)

    def _valid(self, candidate: str | None) -> bool:
        if not candidate:
            return False
        return secrets.compare_digest(candidate.encode("utf-8", "replace"), self.token)


def _is_page_visit(scope: Scope) -> bool:
    return scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and scope["path"] == "/"


def _query_token(scope: Scope) -> str | None:
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
    return next((value for key, value in pairs if key == "token"), None)


async def _enter(scope: Scope, send: Send, token: str) -> None:
    """The printed URL was opened: keep the token in a cookie and send the browser to the same
    page without it (a fragment such as ``#/runs/ID`` is kept by the browser)."""
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    rest = urlencode([(k, v) for k, v in pairs if k != "token"])
    cookie = f"{cookie_name(scope)}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", ("/?" + rest if rest else "/").encode("latin-1")),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"cache-control", b"no-store"),
        (b"content-length", b"0"),
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
        await send(message)

    return wrapped


async def _refuse(scope: Scope, send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    headers: list[Any] = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *SECURITY_HEADERS,
    ]
    if scope["type"] == "websocket":
        if "websocket.http.response" not in scope.get("extensions", {}):
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": text[:120]})
            return
        kind = "websocket.http.response"  # the server lets us answer with status and text
    else:
        kind = "http.response"
    await send({"type": f"{kind}.start", "status": status, "headers": headers})
    await send({"type": f"{kind}.body", "body": body})
