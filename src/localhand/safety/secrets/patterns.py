"""The shapes of secrets in free text, and how each is redacted (``redact``).

Every rule keeps what makes the text useful and replaces only the secret with ``[REDACTED]``:
``postgresql+psycopg2://u:[REDACTED]@db/x``, ``ghp_[REDACTED]``, ``DB_PASSWORD=[REDACTED]``,
``Authorization: Bearer [REDACTED]``. Running ``redact`` on its own output changes nothing.

Speed: a tool output of 16 KB passes through here on every call, and Python's regular
expression engine is slow at trying a pattern with alternatives at every position (0.3 to
1.7 ms per rule on 16 KB). So no rule searches the whole text with such a pattern. Each is
tried only at the places a plain substring search (fast, in C) or one cheap scan finds: after
``://``, at ``-----BEGIN``, at a secret-sounding word (``pass``, ``token``, ``key``...), at the
start of a run of 19 or more token characters. Patterns compile on first use, each when first
needed, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

MARKER = "[REDACTED]"

_Replace = Callable[[re.Match[str]], str]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_TOKEN_PREFIXES = (
    r"github_pat_|gh[pousr]_|glpat-|xox[abprse]-|xapp-|sk-ant-(?:api\d\d-|admin\d\d-)?|"
    r"sk-proj-|sk-svcacct-|sk-admin-|sk-|[sr]k_(?:live|test)_|whsec_|npm_|pypi-|hf_|"
    r"AIza|ya29\.|A[KS]IA"
)
_SECRET_WORDS = (
    "pass", "pwd", "secret", "token", "key", "auth", "credential", "dsn", "cookie", "jwt",
    "session",
)  # fmt: skip
"""Where an assignment of a secret may start: ``DB_PASSWORD=``, ``api_key:``, ``"token": ``."""
_WEBHOOK_NEEDLES = (
    "hooks.slack.com/", "discord.com/api/webhooks/", "discordapp.com/api/webhooks/",
    ".webhook.office.com/", "hooks.zapier.com/hooks/catch/", "/webhook/", "/webhooks/",
)  # fmt: skip
_HEADER_NEEDLES = ("authorization", "api-key", "auth-token", "bearer")
_CONNECTION_KEYS = ("accountkey", "sharedaccesskey", "sharedaccesssignature", "password", "pwd")
"""Keys of a connection string that hold its secret (``AccountKey=…;``): always for the first
three, whose names say it; ``Password=`` and ``Pwd=`` inside a ``;``-separated string."""
_ALWAYS_SECRET_KEYS = _CONNECTION_KEYS[:3]
_SECRET_NAME_WORDS = frozenset(
    "password passwd pwd passphrase secret secrets token apikey credential credentials dsn "
    "cookie jwt privatekey accesskey auth".split()
)
_SECRET_NAME_PAIRS = frozenset(
    [("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"),
     ("session", "id"), ("signing", "key"), ("encryption", "key"), ("master", "key"),
     ("client", "secret"), ("auth", "token"), ("refresh", "token")]
)  # fmt: skip
_CODE_WORDS = frozenset(
    "none null nil true false undefined required optional str bytes string int float bool "
    "dict list tuple bytearray secretstr any env".split()
)
"""Unquoted values that are a type, a keyword or an empty marker, not a secret."""


_SOURCES: dict[str, tuple[str, int]] = {
    "private_key": (
        r"(-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----)"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)",
        re.DOTALL | re.IGNORECASE,
    ),
    # user:password@ or a long token as the user name; the password may itself hold '@'.
    "userinfo": (
        r"://(?:(?P<user>[^\s:/?#@'\"<>`]*):(?P<pw>[^\s/?#'\"<>`]+)"
        r"|(?P<tok>[A-Za-z0-9_\-.~%]{20,}))@",
        0,
    ),
    "url_rest": (r"[^\s'\"<>`]*", 0),
    "query": (
        r"([?&](?:[\w.\-]*?(?:token|key|secret|passw(?:or)?d|pwd|sig|signature|credential|"
        r"auth))=)([^&\s#'\"<>`]+)",
        re.IGNORECASE,
    ),
    "webhook": (
        r"(hooks\.slack\.com/(?:services|workflows|triggers)/|"
        r"discord(?:app)?\.com/api/webhooks/|\.webhook\.office\.com/|"
        r"hooks\.zapier\.com/hooks/catch/|/webhooks?/)([^\s'\"<>`()\[\]]+)",
        re.IGNORECASE,
    ),
    # A run of token characters long enough to be a token, starting with a letter a token
    # prefix starts with (the character class lets the engine skip to those letters).
    "run": (r"[Aghnprswxy][A-Za-z0-9_\-.]{18,}", 0),
    "token": (rf"({_TOKEN_PREFIXES})((?:[A-Za-z0-9_\-]|\.(?=[A-Za-z0-9_\-])){{16,}})", 0),
    "jwt": (r"(eyJ[A-Za-z0-9_\-]{8,}\.)(eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})", 0),
    "header": (
        r"(authorization|api-key|auth-token)"
        r"([\"']?[ \t]*[:=][ \t]*[\"']?((?:bearer|basic|token|bot|digest)[ \t]+)?)"
        r"([^\s\"',;]+)"
        r"|\b(bearer[ \t]+)([A-Za-z0-9\-._~+/]{8,}=*)",
        re.IGNORECASE,
    ),
    # Where an assignment may start, found in the lower-cased text in one pass (a literal
    # alternation, no IGNORECASE: fast); the full pattern is then tried at those places.
    "assignment_start": (
        rf"(?:{'|'.join(_SECRET_WORDS)})[a-z0-9_.\-]*[\"']?[ \t]*(?:=>|:=|[:=])",
        0,
    ),
    "assignment": (
        rf"(?:{'|'.join(_SECRET_WORDS)})[\w.\-]*"
        r"(?P<q0>[\"']?)(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)"
        r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]*)(?P=q)"
        r"|(?P<bare>[^\s\"'`,;=)\]}][^\s\"'`,;)\]}]*))",
        re.IGNORECASE,
    ),
    "name_parts": (r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])", 0),
    # A key of a `;`-separated connection string (Azure, ADO.NET, ODBC) and its value.
    "connection": (
        rf"(?:{'|'.join(_CONNECTION_KEYS)})[ \t]*=[ \t]*"
        r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]*)(?P=q)|(?P<bare>[^;\"'`<>\r\n]+))",
        re.IGNORECASE,
    ),
}


class _Patterns:
    """Each pattern of ``_SOURCES`` as an attribute, compiled the first time it is used: most
    texts need only a few, and start-up (which checks the environment) pays for those alone."""

    def __getattr__(self, name: str) -> re.Pattern[str]:
        source, flags = _SOURCES[name]
        compiled = re.compile(source, flags)
        setattr(self, name, compiled)
        return compiled


PATTERNS = _Patterns()


def redact(text: str) -> str:
    """``text`` with every secret shape it holds replaced by ``[REDACTED]``."""
    p = PATTERNS
    lowered = lowered_of(text)

    def apply(starts: Iterable[int], pattern: re.Pattern[str], replace: _Replace) -> None:
        nonlocal text, lowered
        new = _sub_at(text, starts, pattern, replace)
        if new is not text:
            text, lowered = new, lowered_of(new)

    if "-----begin " in lowered:
        apply(_find_all(lowered, ("-----begin ",)), p.private_key, _private_key)
    if "://" in text:
        apply(_find_all(text, ("://",)), p.userinfo, _userinfo)
        if "=" in text:  # secret query parameters, looked for inside URLs only
            apply(_find_all(text, ("://",)), p.url_rest, _query_secrets)
    if any(needle in lowered for needle in _WEBHOOK_NEEDLES):
        apply(_find_all(lowered, _WEBHOOK_NEEDLES), p.webhook, _webhook)
    apply(_token_starts(text, p), p.token, _token)
    if "eyJ" in text:
        apply(_find_all(text, ("eyJ",)), p.jwt, _keep_first)
    if "=" in text and any(key in lowered for key in _CONNECTION_KEYS):
        apply(_find_all(lowered, _CONNECTION_KEYS), p.connection, _connection)
    if any(needle in lowered for needle in _HEADER_NEEDLES):
        apply(_find_all(lowered, _HEADER_NEEDLES), p.header, _header)
    starts = [m.start() for m in p.assignment_start.finditer(lowered)]
    if starts:
        apply(starts, p.assignment, _assignment)
    return text


@functools.lru_cache(maxsize=1024)  # asked about every variable for every command
def looks_secret(value: str) -> bool:
    """True when ``value`` holds something ``redact`` replaces (a token, a URL with a password,
    a webhook): the environment check asks it about variables' values."""
    return bool(value) and redact(value) != value


def lowered_of(text: str) -> str:
    """``text.lower()`` with the same length, so offsets in one are offsets in the other
    (a few letters, such as the Turkish dotted I, lower-case to two characters)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _token_starts(text: str, p: _Patterns) -> Iterator[int]:
    """Where a run of token characters starts (a token is never part of a longer word)."""
    for match in p.run.finditer(text):
        start = match.start()
        if not start or text[start - 1] not in _NAME_CHARS:
            yield start


def _find_all(haystack: str, needles: Iterable[str]) -> list[int]:
    found = []
    for needle in needles:
        at = haystack.find(needle)
        while at >= 0:
            found.append(at)
            at = haystack.find(needle, at + 1)
    return sorted(found)


def _sub_at(text: str, starts: Iterable[int], pattern: re.Pattern[str], replace: _Replace) -> str:
    """``pattern.sub(replace, text)``, but trying the pattern only at ``starts`` (ascending).
    Returns ``text`` itself when nothing changed."""
    pieces: list[str] = []
    done = 0
    for start in starts:
        if start < done:  # inside a match already replaced
            continue
        match = pattern.match(text, start)
        if match is None:
            continue
        new = replace(match)
        if new != match[0]:
            pieces += (text[done:start], new)
            done = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


# -- replacements: each returns the match unchanged when it is not a secret after all ----------


def _private_key(m: re.Match[str]) -> str:
    return f"{m[1]}\n{MARKER}\n-----END {m[2]}PRIVATE KEY{m[3] or ''}-----"


def _userinfo(m: re.Match[str]) -> str:
    if m["tok"] is not None:
        return f"://{MARKER}@"
    return m[0] if MARKER in m["pw"] else f"://{m['user']}:{MARKER}@"


def _query_secrets(m: re.Match[str]) -> str:
    """A URL (from its ``://``) with its secret query parameters (``?access_token=``,
    ``&sig=``) redacted."""
    url = m[0]
    return PATTERNS.query.sub(_query, url) if "=" in url else url


def _query(m: re.Match[str]) -> str:
    return m[0] if _reference(m[2]) or MARKER in m[2] else m[1] + MARKER


def _webhook(m: re.Match[str]) -> str:
    if m[1].lower().startswith("/webhook"):  # a route in code (/webhook/stripe) is no secret
        token = m[2].split("?", 1)[0]
        if len(token) < 16 or not any(c.isdigit() for c in token):
            return m[0]
    return m[1] + MARKER


def _keep_first(m: re.Match[str]) -> str:
    return m[1] + MARKER


def _token(m: re.Match[str]) -> str:
    prefix, body = m[1], m[2]
    if not any(c.isdigit() for c in body):  # sk-learn-style words, not keys
        return m[0]
    if prefix in ("AKIA", "ASIA") and not body[:16].isupper():
        return m[0]
    return prefix + MARKER


def _connection(m: re.Match[str]) -> str:
    """``AccountKey=[REDACTED]``: the key a part of a connection string (after its start, a
    space, a quote or ``;``) and its value, up to the next ``;`` or the line's end where a
    ``;`` stands before or after it, else up to a space. ``Password=`` and ``Pwd=`` only in
    such a ``;``-separated string."""
    string, start = m.string, m.start()
    if start and string[start - 1] not in " \t;\"'{(":
        return m[0]  # a longer name (MyPassword=, OLDPWD=): the assignment rule's
    quoted = m["quoted"]
    value = quoted if quoted is not None else m["bare"].rstrip()
    value_start = m.start("quoted") if quoted is not None else m.start("bare")
    after = string[value_start + len(value) :].lstrip(" \t\"'")[:1]
    in_string = after == ";" or string[:start].rstrip(" \t\"'")[-1:] == ";"
    if quoted is None and not in_string:
        value = value.split()[0]
    key = string[start : string.index("=", start)].strip().lower()
    if key not in _ALWAYS_SECRET_KEYS and not in_string:
        return m[0]
    if value == MARKER or _reference(value):
        return m[0]
    return string[start:value_start] + MARKER + string[value_start + len(value) : m.end()]


def _header(m: re.Match[str]) -> str:
    if m[1] is None:
        return m[5] + MARKER
    value = m[4]
    if _reference(value) or MARKER in value or (m[3] is None and _code_like(value, m[1])):
        return m[0]
    return m[1] + m[2] + MARKER


def _assignment(m: re.Match[str]) -> str:
    string, start = m.string, m.start()
    # The whole name, of which the word matched is a part (``DB_PASSWORD``, ``self.token``).
    begin = start
    while begin and string[begin - 1] in _NAME_CHARS:
        begin -= 1
    name = string[begin : m.start("q0") if m["q0"] else m.start("sep")].lstrip("-")
    if not _secret_name(name):
        return m[0]
    quoted = m["quoted"]
    if quoted is not None:
        if not quoted or _reference(quoted) or quoted.isdigit() or MARKER in quoted:
            return m[0]
        return string[start : m.start("quoted")] + MARKER + string[m.end("quoted") : m.end()]
    value = m["bare"]
    # A bare value ends before `]`: `sk-[REDACTED]` (a token already redacted) reads `sk-[REDACTED`.
    if _reference(value) or value.isdigit() or MARKER[:-1] in value:
        return m[0]
    line_start = string.rfind("\n", 0, begin) + 1
    own_line = string[line_start:begin].strip() in ("", "export", "set", "-")
    # NAME=value on a line of its own (an env file, `export`, a compose list) is a value.
    env_style = own_line and name.isupper() and m["sep"] == "="
    # `password: hunter` on a line of its own is YAML; in code the same shape is an annotation,
    # whose type is a keyword (str) or Capitalised (SecretStr).
    yaml_style = own_line and not m["q0"] and m["sep"].strip() == ":"
    if yaml_style and value.lower() not in _CODE_WORDS and not value[0].isupper():
        return string[start : m.start("bare")] + MARKER
    if not env_style and _code_like(value, name):
        return m[0]
    if begin and string[begin - 1] in "?&":  # a query parameter outside a full URL
        end = m.start("bare") + len(value.split("&", 1)[0])
        return string[start : m.start("bare")] + MARKER + string[end : m.end()]
    return string[start : m.start("bare")] + MARKER


def _secret_name(name: str) -> bool:
    parts = [part.lower() for part in PATTERNS.name_parts.split(name) if part]
    if any(part in _SECRET_NAME_WORDS for part in parts):
        return True
    return any(pair in _SECRET_NAME_PAIRS for pair in itertools.pairwise(parts))


def _reference(value: str) -> bool:
    """Already redacted, a placeholder, or a reference to the secret kept elsewhere:
    ``[REDACTED]``, ``${DB_PASS}``, ``<your token>``, ``{{ secrets.X }}``, ``%(pw)s``, ``***``."""
    return value[0] in "$<{%*([" or set(value) <= {"*", "x", "X", "."}


def _code_like(value: str, name: str) -> bool:
    """An unquoted value that reads as code: a keyword or type (``token: str``), a call or
    subscript, or a variable name without digits (``self.token = token``)."""
    if value.lower() in _CODE_WORDS or any(c in value for c in "([{|"):
        return True
    return all(c.isalpha() or c in "_." for c in value) or value.lower() in name.lower()
