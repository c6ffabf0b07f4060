"""The lines of a streamed answer, for the transport: NDJSON (Ollama) and server-sent events
(OpenAI-compatible servers), from the body's bytes as they arrive.

Neither is split with ``str.splitlines``: it splits at every line break Unicode knows, and
JSON may carry some of them unescaped inside strings (Go's encoder leaves U+0085 raw,
llama-server U+2028), which would cut a chunk of text in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["ndjson_lines", "sse_events", "sse_lines"]

_LINE_END = re.compile(rb"\r\n|\r|\n")


def ndjson_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of an NDJSON byte stream, split at LF only; blank ones left out."""
    buffer = bytearray()
    for chunk in chunks:
        start = len(buffer)  # the bytes before have no LF: search only the new ones
        buffer += chunk
        while (end := buffer.find(b"\n", start)) >= 0:
            line = buffer[:end].decode("utf-8", "replace")
            del buffer[: end + 1]
            start = 0
            if line.strip():
                yield line
    if (line := buffer.decode("utf-8", "replace")).strip():
        yield line


def sse_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of a byte stream, ended by CRLF, LF or CR as the SSE spec says (a CR at the
    end of one chunk and an LF at the start of the next are one line end)."""
    partial = bytearray()
    skip_lf = False
    for chunk in chunks:
        if not chunk:
            continue
        start = 1 if skip_lf and chunk[0] == 0x0A else 0
        for match in _LINE_END.finditer(chunk, start):
            partial += chunk[start : match.start()]
            yield partial.decode()
            partial.clear()
            start = match.end()
        partial += chunk[start:]
        skip_lf = chunk[-1] == 0x0D
    if partial:
        yield partial.decode()


def sse_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """The server-sent events of a byte stream, as ``(type, data)``.

    Per the spec: ``data:`` lines of one event (up to a blank line) are joined with newlines,
    one space after the colon is dropped, comment lines (``:``) and ``id:``/``retry:`` are
    ignored, an event without data is not dispatched, nor is one the stream ends in the
    middle of. The type is ``event:``'s value, else ``message``; llama-server's ``error:``
    line, which the spec would ignore, makes an event of type ``error``.
    """
    kind = ""
    data: list[str] = []
    error: list[str] = []
    for line in sse_lines(chunks):
        if not line:
            if error:
                yield "error", "\n".join(error)
            elif data:
                yield kind or "message", "\n".join(data)
            kind, data, error = "", [], []
            continue
        if line[0] == ":":
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "error":
            error.append(value)
