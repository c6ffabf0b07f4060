"""Which hosts sandboxed commands may reach through the network proxy (``netproxy``).

The list is what the user's own package tools are set to use, asked of the tools themselves
(pip's index and extra indexes, ``npm config get registry``, cargo's registries and source
replacements, Go's ``GOPROXY`` and ``GOSUMDB``), plus ``[sandbox] allow_hosts``. The tools are
asked once, when a command first uses the network, in parallel and with a time limit: they
cost hundreds of milliseconds that a run that never downloads should not pay.

An entry is ``HOST`` (ports 80 and 443) or ``HOST:PORT``. Only an ``allow_hosts`` entry with
an explicit port may reach an address of this machine (a local database at
``127.0.0.1:5432``): what a package tool's configuration names never does, because a
workspace can carry such configuration (a ``pip.conf`` in a ``.venv``, an ``.npmrc``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from urllib.parse import urlsplit

WEB_PORTS = (80, 443)
"""The ports an entry without one allows."""
_QUERY_TIMEOUT_S = 5.0
_PIP_DEFAULT = ("pypi.org", "files.pythonhosted.org")
_CARGO_DEFAULT = ("crates.io", "index.crates.io", "static.crates.io")
_GO_DEFAULT = ("proxy.golang.org", "sum.golang.org")
_NPM_DEFAULT = ("registry.npmjs.org",)
_HOST = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$|^[0-9a-f:.]+$")


@dataclass(frozen=True, slots=True)
class Entry:
    """One allowed host, with its port when the entry named one."""

    host: str
    port: int | None = None
    explicit: bool = False
    """From ``[sandbox] allow_hosts`` (or the user's yes): may reach this machine's addresses
    when it names a port."""

    def allows(self, host: str, port: int) -> bool:
        return self.host == host and (port in WEB_PORTS if self.port is None else port == self.port)

    def __str__(self) -> str:
        return self.host if self.port is None else f"{_bracketed(self.host)}:{self.port}"


def parse_entry(text: str, *, explicit: bool = True) -> Entry:
    """``HOST``, ``HOST:PORT`` or ``[IPv6]:PORT`` as an ``Entry``; ``ValueError`` saying what
    is wrong otherwise."""
    value = text.strip().lower()
    port: int | None = None
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{text!r} is not HOST or HOST:PORT")
            port = _port(rest[1:], text)
    elif value.count(":") == 1:
        host, _, number = value.partition(":")
        port = _port(number, text)
    else:
        host = value
    host = normal_host(host)
    if not host or not is_host(host):
        raise ValueError(f"{text!r} is not a host name, HOST:PORT or an IP address")
    return Entry(host, port, explicit)


def network_settings(table: dict[str, object]) -> dict[str, object]:
    """The settings of ``[sandbox]``'s ``network`` and ``allow_hosts`` keys, checked;
    ``ValueError`` says what is wrong."""
    values: dict[str, object] = {}
    if "network" in table:
        if table["network"] not in ("proxy", "host"):
            raise ValueError('network must be "proxy" or "host"')
        values["sandbox_network"] = table["network"]
    if "allow_hosts" in table:
        hosts = table["allow_hosts"]
        example = 'e.g. allow_hosts = ["pypi.example.com", "127.0.0.1:5432"]'
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ValueError(f"allow_hosts must be a list of hosts, {example}")
        for host in hosts:
            try:
                parse_entry(host)
            except ValueError as error:
                raise ValueError(f"allow_hosts: {error}; {example}") from None
        values["sandbox_allow_hosts"] = tuple(hosts)
    return values


def is_host(name: str) -> bool:
    """Whether ``name`` (normalised) is a host name or an IP address, nothing else: what a
    command asks the proxy for reaches approval questions and messages."""
    return len(name) <= 253 and _HOST.match(name) is not None


def normal_host(host: str) -> str:
    """``host`` as compared: lower case, no brackets, no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def _port(number: str, text: str) -> int:
    if not number.isdigit() or not 0 < int(number) < 65536:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    return int(number)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def url_entry(url: str) -> Entry | None:
    """The host (and port, when the URL names one) of an http(s) URL; None for ``file:``,
    ``off``, ``direct`` and anything without a host."""
    try:
        parts = urlsplit(url.strip().strip("'\""))
        if parts.scheme.lower() not in ("http", "https", "sparse+http", "sparse+https"):
            return None
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    try:
        return parse_entry(f"[{host}]:{port}" if port else host, explicit=False)
    except ValueError:
        return None


def package_tool_hosts(skip_under: str | None = None) -> tuple[Entry, ...]:
    """The hosts the user's package tools are set to use, asked of those found on PATH
    (outside ``skip_under``, the workspace: a tool there is the model's), each in a thread
    with a time limit, run from $HOME so that no project's own settings count."""
    from concurrent.futures import ThreadPoolExecutor  # only when a command uses the network

    queries = (_pip_hosts, _npm_hosts, _cargo_hosts, _go_hosts)
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        found = list(pool.map(lambda query: query(skip_under), queries))
    entries: list[Entry] = []
    for group in found:
        entries += [entry for entry in group if entry not in entries]
    return tuple(entries)


def _tool(name: str, skip_under: str | None) -> str | None:
    path = shutil.which(name)
    if path is None:
        return None
    real = os.path.realpath(path)
    if skip_under and (real + "/").startswith(os.path.realpath(skip_under).rstrip("/") + "/"):
        return None
    return path


def _ask(argv: list[str]) -> str:
    """What a tool prints, or "" when it fails or takes too long."""
    home = os.path.expanduser("~")
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=_QUERY_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            cwd=home if os.path.isdir(home) else "/",
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _entries(urls: list[str], then: tuple[str, ...] = ()) -> list[Entry]:
    """The hosts ``urls`` name, then the hosts ``then``."""
    return [*(entry for entry in map(url_entry, urls) if entry is not None), *map(Entry, then)]


def _from_urls(urls: list[str], default: tuple[str, ...]) -> list[Entry]:
    """The hosts ``urls`` name, or ``default`` where they name none."""
    return _entries(urls) or _entries([], default)


def _pip_hosts(skip_under: str | None) -> list[Entry]:
    """pip's index and extra indexes (``pip config list`` and ``PIP_*``); with no index
    configured, PyPI and its file host. An index elsewhere keeps the file host, which PyPI's
    mirrors link to."""
    urls = [os.environ.get("PIP_INDEX_URL", ""), *os.environ.get("PIP_EXTRA_INDEX_URL", "").split()]
    pip = _tool("pip", skip_under) or _tool("pip3", skip_under)
    index_set = bool(urls[0])
    if pip is not None:
        for line in _ask([pip, "config", "list"]).splitlines():
            key, _, value = line.partition("=")
            if key.endswith((".index-url", ".extra-index-url", ".find-links")):
                index_set = index_set or key.endswith(".index-url")
                urls += value.strip().strip("'\"").split()
    return _entries(urls, () if index_set else _PIP_DEFAULT)


def _npm_hosts(skip_under: str | None) -> list[Entry]:
    npm = _tool("npm", skip_under)
    if npm is None:
        return []
    return _from_urls([_ask([npm, "config", "get", "registry"])], _NPM_DEFAULT)


def _cargo_hosts(skip_under: str | None) -> list[Entry]:
    """crates.io's hosts, or the registries and source replacements of
    ``~/.cargo/config.toml`` (read as a file: cargo has no command that prints them)."""
    if _tool("cargo", skip_under) is None:
        return []
    import tomllib  # loaded only when used

    home = os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo")
    urls: list[str] = []
    replaced = False
    for name in ("config.toml", "config"):
        try:
            with open(os.path.join(home, name), "rb") as handle:
                config = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError):
            continue
        for table in ("source", "registries"):
            for source in (config.get(table) or {}).values():
                if isinstance(source, dict):
                    urls += [str(source[k]) for k in ("registry", "index") if k in source]
                    replaced = replaced or "replace-with" in source
    return _entries(urls, () if replaced else _CARGO_DEFAULT)


def _go_hosts(skip_under: str | None) -> list[Entry]:
    go = _tool("go", skip_under)
    if go is None:
        return []
    lines = _ask([go, "env", "GOPROXY", "GOSUMDB"]).splitlines()
    if len(lines) < 2:
        return _entries([], _GO_DEFAULT)
    urls = re.split(r"[,|]", lines[0])
    sumdb = lines[1].split()
    if sumdb and sumdb[0] != "off":  # "sum.golang.org" or "NAME+KEY URL"
        urls.append(sumdb[-1] if "://" in sumdb[-1] else f"https://{sumdb[0].split('+')[0]}")
    return _from_urls(urls, _GO_DEFAULT)
