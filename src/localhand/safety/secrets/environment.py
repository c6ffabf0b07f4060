"""The environment a model-written command gets: no secrets, nothing that waits for a person.

A command the model writes can print its environment into the conversation (and so into logs,
the dashboard and the store) or send it anywhere. So variables whose names say they hold a
secret (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH...) or whose values look like one
(``ghp_…``, ``sk-…``, ``AKIA…``, a URL with a password of any scheme, a webhook URL: whatever
the patterns of ``localhand.safety.secrets.patterns`` redact) are removed. PATH, HOME, LANG, the
locale and the like always stay.

Variables that lead to a service of the person's session are removed too (``host_service``):
an ssh or gpg agent, the D-Bus session bus, the X or Wayland display, tmux and screen, a
terminal's remote control (``KITTY_*``), ``$XDG_RUNTIME_DIR``; by name, and by value, so any
variable naming a socket, a ``unix:`` address or a runtime directory goes as well. A command
that finds the tmux server or the ssh agent can act with the person's keys and environment
outside any sandbox.

The box's commands (``run_shell``: the model's, checks, hooks, plan steps) get less still:
``box_environment`` passes only an allow-list (``BOX_NAMES``, ``LC_*``, ``LOCALHAND_*``), the
variables the user names (``[sandbox] env``) and what localhand sets itself. A deny-list is
always one name short: ``AZURE_STORAGE_CONNECTION_STRING`` says nothing of a secret.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable, Mapping

from localhand.paths import is_within
from localhand.safety.secrets.patterns import looks_secret

QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    # Without these, `git commit` opens an editor and apt asks questions: both would hang.
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "DEBIAN_FRONTEND": "noninteractive",
    "NO_COLOR": "1",
    # Interleave a Python program's stdout and stderr in the order they were written.
    "PYTHONUNBUFFERED": "1",
    # npm asks its registry for a newer npm after `npm test`: a request the box's network may
    # refuse, and time a check should not spend.
    "npm_config_update_notifier": "false",
}
"""Overrides for every command: nothing waits for a person."""

SECRET_WORDS = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "PASS", "CREDENTIAL",
    "AUTH", "PRIVATE", "COOKIE", "SIGNATURE", "JWT", "BEARER", "SESSION_ID", "DSN",
)  # fmt: skip
"""A variable whose name contains one of these (case-insensitive) is removed."""
_SECRET_NAME_PARTS = frozenset(("PWD", "PAT", "CERT", "CREDS"))
"""Whole ``_``-separated parts of a name that mark a secret (``MYSQL_PWD``, ``GH_PAT``)."""
_NOT_AUTH = frozenset(("AUTHOR", "AUTHORS"))
_SECRET_VALUE_PREFIXES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-",
    "xoxr-", "sk-", "sk_live_", "rk_live_", "AKIA", "ASIA", "hf_", "npm_", "pypi-", "AIza",
    "ya29.", "-----BEGIN",
)  # fmt: skip
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
"""A URL scheme as RFC 3986 has it: ``postgresql+psycopg2`` and ``mongodb+srv`` included."""
ALWAYS_KEEP = frozenset(
    "PATH HOME LANG LANGUAGE USER LOGNAME SHELL TERM TMPDIR TEMP TMP TZ PWD OLDPWD SHLVL "
    "HOSTNAME VIRTUAL_ENV CONDA_PREFIX PYTHONPATH XDG_CONFIG_HOME "
    "XDG_DATA_HOME XDG_CACHE_HOME".split()
)
"""Never removed, whatever they contain: commands need them to work at all."""


def is_secret(name: str, value: str) -> bool:
    """True when the variable ``name=value`` looks like it holds a secret."""
    upper = name.upper()
    if upper in ALWAYS_KEEP or upper.startswith("LC_"):
        return False
    parts = upper.split("_")
    # GIT_AUTHOR_NAME names a person, not a credential (AUTHORIZATION still counts).
    words = "_".join(part for part in parts if part not in _NOT_AUTH)
    if any(word in words for word in SECRET_WORDS):
        return True
    if _SECRET_NAME_PARTS & set(parts) - {upper}:
        return True
    return secret_value(value)


def secret_value(value: str) -> bool:
    """True when ``value`` looks like a secret, whatever its variable is called."""
    stripped = value.strip()
    if stripped.startswith(_SECRET_VALUE_PREFIXES):
        return True
    # scheme://user:password@host, of any scheme (postgresql+psycopg2, mongodb+srv, redis,
    # amqps): a database or proxy URL with its password in it.
    scheme, sep, rest = stripped.partition("://")
    userinfo = rest.split("/", 1)[0].rpartition("@")[0]
    if sep and _SCHEME.fullmatch(scheme) and ":" in userinfo:
        return True
    # Anything else the text scrubber would redact: webhook URLs, tokens inside a longer value.
    return looks_secret(stripped)


HOST_SERVICE_NAMES = frozenset(
    "SSH_AUTH_SOCK SSH_AGENT_PID SSH_ASKPASS GPG_AGENT_INFO GPG_TTY DBUS_SESSION_BUS_ADDRESS "
    "DBUS_SYSTEM_BUS_ADDRESS DISPLAY WAYLAND_DISPLAY WAYLAND_SOCKET XAUTHORITY XAUTHLOCALHOSTNAME "
    "TMUX TMUX_PANE TMUX_TMPDIR STY WINDOW XDG_RUNTIME_DIR XDG_SESSION_ID XDG_SESSION_TYPE "
    "XDG_SESSION_CLASS XDG_SEAT XDG_VTNR XDG_SESSION_PATH XDG_SEAT_PATH SESSION_MANAGER "
    "DESKTOP_STARTUP_ID PULSE_SERVER PULSE_COOKIE PIPEWIRE_REMOTE DOCKER_HOST CONTAINER_HOST "
    "PODMAN_HOST KRB5CCNAME ZELLIJ ZELLIJ_SESSION_NAME NVIM NVIM_LISTEN_ADDRESS "
    "JUPYTER_RUNTIME_DIR SYSTEMD_EXEC_PID INVOCATION_ID JOURNAL_STREAM NOTIFY_SOCKET "
    "LISTEN_FDS LISTEN_PID LISTEN_FDNAMES MANAGERPID".split()
)
"""Variables that lead to a service of the person's session: agents, buses, displays,
terminal multiplexers, the service manager."""
HOST_SERVICE_PREFIXES = (
    "KITTY_", "WEZTERM_", "ALACRITTY_", "VSCODE_IPC", "VSCODE_GIT_IPC", "TERMINATOR_",
    "KONSOLE_DBUS", "GNOME_KEYRING", "DBUS_", "TMUX_", "ZELLIJ_", "SSH_AGENT", "GPG_AGENT",
    "XDG_SESSION_", "I3SOCK", "SWAYSOCK", "HYPRLAND_", "NIRI_SOCKET",
)  # fmt: skip
HOST_SERVICE_SUFFIXES = ("_SOCK", "_SOCKET", "_SOCK_PATH", "_SOCKET_PATH", "_IPC_HOOK")
_RUNTIME_DIRS = ("/run/", "/var/run/", "/tmp/.X11-unix", "/tmp/tmux-", "/tmp/ssh-")
"""Where session services keep their sockets: a value naming a path there leads to one."""


def host_service(name: str, value: str) -> bool:
    """True when ``name=value`` leads to a service of the person's session: by its name (an
    agent, a bus, a display, a multiplexer), or by its value (a ``unix:`` address, a path in
    a runtime directory, a path that is a socket)."""
    upper = name.upper()
    if upper in HOST_SERVICE_NAMES or upper.startswith(HOST_SERVICE_PREFIXES):
        return True
    if upper in ALWAYS_KEEP or upper.startswith("LC_"):
        return False  # PATH may name /run/wrappers/bin (NixOS): the sandbox shows those
    if upper.endswith(HOST_SERVICE_SUFFIXES) or "_SOCK_" in upper:
        return True
    return _names_a_socket(value)


def _names_a_socket(value: str) -> bool:
    """A value of one or more ``:``/``;``-separated parts of which one is a ``unix:``
    address, an abstract socket, a path in a runtime directory or a socket file."""
    text = value.strip()
    if not text or len(text) > 4096:
        return False
    lowered = text.lower()
    if "unix:" in lowered or "abstract=" in lowered:
        return True
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").rstrip("/")
    for part in re.split(r"[:;,=]", text):
        if not part.startswith("/"):
            continue
        if part.startswith(_RUNTIME_DIRS) or (runtime and is_within(part, runtime)):
            return True
        try:
            if stat.S_ISSOCK(os.stat(part).st_mode):
                return True
        except (OSError, ValueError):
            continue
    return False


def command_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a program localhand runs outside the box (its own git, an MCP
    server): ``os.environ`` without the variables that look like secrets or lead to a service
    of the person's session, then ``QUIET_ENV``, then ``extra``, which is the caller's and
    passes unchecked."""
    scrubbed = {k: v for k, v in os.environ.items() if not (is_secret(k, v) or host_service(k, v))}
    return {**scrubbed, **QUIET_ENV, **(extra or {})}


BOX_NAMES = frozenset(
    # the shell, the user, the locale, the terminal, the clock, the temporary directory
    "PATH HOME USER LOGNAME USERNAME SHELL LANG LANGUAGE TERM COLORTERM TZ TMPDIR TEMP TMP "
    "XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME XDG_STATE_HOME XDG_DATA_DIRS XDG_CONFIG_DIRS "
    "SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS "
    "GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL "  # git commit
    "HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY http_proxy https_proxy all_proxy no_proxy "
    # Python
    "VIRTUAL_ENV CONDA_PREFIX CONDA_DEFAULT_ENV CONDA_EXE CONDA_PYTHON_EXE PYTHONPATH PYTHONHOME "
    "PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE PYTHONIOENCODING PYTHONUTF8 PYENV_ROOT "
    "PYENV_VERSION PIPX_HOME POETRY_HOME UV_CACHE_DIR UV_PYTHON_INSTALL_DIR "
    # Rust, Go
    "CARGO_HOME RUSTUP_HOME RUSTUP_TOOLCHAIN CARGO_TARGET_DIR GOPATH GOROOT GOCACHE GOMODCACHE "
    "GOBIN GOFLAGS GOTOOLCHAIN GO111MODULE GOPROXY GOPRIVATE GONOPROXY GONOSUMDB GOSUMDB "
    # the JVM, Android, .NET
    "JAVA_HOME JDK_HOME GRADLE_HOME GRADLE_USER_HOME MAVEN_HOME M2_HOME SDKMAN_DIR KOTLIN_HOME "
    "ANDROID_HOME ANDROID_SDK_ROOT DOTNET_ROOT DOTNET_CLI_HOME "
    # JavaScript, Ruby, and the version managers
    "NVM_DIR NVM_BIN NVM_INC NODE_PATH VOLTA_HOME PNPM_HOME BUN_INSTALL DENO_DIR COREPACK_HOME "
    "GEM_HOME GEM_PATH RBENV_ROOT RBENV_VERSION ASDF_DIR ASDF_DATA_DIR MISE_DATA_DIR "
    "NIX_PATH NIX_PROFILES ELAN_HOME OPAMROOT JULIA_DEPOT_PATH PERL5LIB "
    # compilers and linkers
    "CC CXX CFLAGS CXXFLAGS CPPFLAGS LDFLAGS RUSTFLAGS PKG_CONFIG_PATH LD_LIBRARY_PATH CPATH "
    "LIBRARY_PATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH CMAKE_PREFIX_PATH".split()
)
"""What a command in the box sees of localhand's environment: what shells and toolchains need
to run at all (with ``LC_*`` and ``LOCALHAND_*``); each still only when it holds no secret."""


def box_environment(
    extra: Mapping[str, str] | None = None,
    *,
    named: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a command in the box: of ``base`` (default ``os.environ``) only
    ``BOX_NAMES``, ``LC_*``, ``LOCALHAND_*`` and the variables ``named`` (the user's
    ``[sandbox] env``: a name, or a pattern such as ``PREFIX_*``), then ``QUIET_ENV``, then
    ``extra``, localhand's own, which passes as it is. A name given whole passes as it is,
    since the user asked for it; the rest never when it looks like a secret or leads to a
    service of the person's session."""
    names = set(named)
    patterns = [name for name in names if "*" in name or "?" in name]
    kept = {}
    for key, value in (os.environ if base is None else base).items():
        if key in BOX_NAMES or key.startswith("LC_"):  # only their values can be secrets
            secret = secret_value(value)
        elif key.startswith("LOCALHAND_") or any(fnmatch.fnmatchcase(key, p) for p in patterns):
            secret = is_secret(key, value)
        elif key not in names:
            continue
        if key in names or not (secret or host_service(key, value)):
            kept[key] = value
    return {**kept, **QUIET_ENV, **(extra or {})}
