"""Opening one connection for ``_http``: to the server itself, or through the proxy the
environment names, with TLS for https. Failures are the standard library's (``OSError``,
``ssl.SSLError``; ``ValueError`` for a URL or a proxy that cannot be used): ``_http`` says
what they mean."""

from __future__ import annotations

import functools
import http.client
import os
import socket
import ssl
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

_PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy"})


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int


class Conn(NamedTuple):
    http: http.client.HTTPConnection
    prefix: str
    """``http://host:port`` through a proxy, to make the request line absolute, else empty."""
    headers: dict[str, str]
    """The proxy's, for every request."""


@functools.cache
def tls_context(scheme: str) -> ssl.SSLContext:
    """One TLS context per scheme of the base URL for the whole process, made at the first
    https connection: loading the CAs takes 20-35 ms. An https:// server gets the system's CAs
    (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` honoured); an http:// one a context with no CA at
    all, so that a redirect to https fails verification (never passes unverified) and the
    backend says to give the https:// address."""
    if scheme == "https":
        return ssl.create_default_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def split_url(url: str) -> tuple[Origin, str]:
    """``url`` as its origin and the request target (path and query)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)  # ValueError if bad
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"cannot request {url!r}: not an http:// or https:// URL")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Origin(parts.scheme, parts.hostname, port), target


def connect(origin: Origin, tls_scheme: str, timeout: float) -> Conn:
    """A connection to ``origin``, opened within ``timeout``; https with the TLS context of
    ``tls_scheme`` (the base URL's scheme)."""
    proxy = proxy_for(origin)
    host, port, headers = proxy or (origin.host, origin.port, {})
    conn: http.client.HTTPConnection
    prefix = ""
    if origin.scheme == "https":
        tls = tls_context(tls_scheme)
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=tls)
        if proxy is not None:  # a CONNECT tunnel carries the proxy's headers
            conn.set_tunnel(origin.host, origin.port, headers)
        headers = {}
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        if proxy is not None:
            name = f"[{origin.host}]" if ":" in origin.host else origin.host
            prefix = f"http://{name}:{origin.port}"
    try:
        conn.connect()
    except BaseException:
        conn.close()
        raise
    return Conn(conn, prefix, headers)


def alive(sock: socket.socket | None) -> bool:
    """Whether an idle kept-alive connection can take a request: one the server closed is
    readable (an end of file), and an idle one must have nothing to read."""
    if sock is None:
        return False
    try:
        sock.settimeout(0)
        socket.socket.recv(sock, 1, socket.MSG_PEEK)  # under TLS, the raw bytes
    except BlockingIOError:
        return True  # nothing to read: open and quiet
    except OSError:
        pass
    return False


def proxy_for(origin: Origin) -> tuple[str, int, dict[str, str]] | None:
    """The proxy the environment names for ``origin`` (host, port, headers), if any, read as
    ``urllib`` reads it. Loopback is never proxied: a proxy cannot reach this machine's local
    server."""
    host = origin.host
    if host in ("localhost", "::1") or host.startswith("127.") or host.endswith(".localhost"):
        return None
    if not any(name.lower() in _PROXY_VARS for name in os.environ):
        return None
    import base64  # only with a proxy set: urllib.request costs ~10 ms of start-up
    import urllib.request  # loaded only when used

    proxies = urllib.request.getproxies_environment()
    url = proxies.get(origin.scheme) or proxies.get("all")
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
    if not url or bypass(host, proxies):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"cannot use the proxy {url}: only http:// proxies are supported")
    headers = {}
    if parts.username is not None:
        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
    return parts.hostname, parts.port or 80, headers
