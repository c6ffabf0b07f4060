"""What one stage of a pipeline feeds the next: a download, decoded text, literal text, a
file or file names (a ``Feed``).

A shell that runs what ``curl`` or ``base64 -d`` hands it is dangerous, where the same shell
reading a literal ``echo`` is only as risky as the text it runs; so the analyzer asks, for each
stage, what comes out of it (``output_of``) and passes that to the next.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import TYPE_CHECKING

from localhand.safety.risk.rules import find_roots, unwrap
from localhand.safety.risk.shellsyntax import Command, Word, decode_escapes
from localhand.safety.risk.types import DECODERS, DOWNLOADERS, NETWORK, Feed

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer


def output_of(a: Analyzer, cmd: Command, feed: Feed | None) -> Feed:
    """What ``cmd`` writes to its standard output, as far as running it later matters."""
    for redirect in cmd.redirects:
        if redirect.op in ("<<", "<<-", "<<<") and redirect.heredoc is not None:
            feed = Feed("text", "a here-document", redirect.heredoc)
        elif redirect.op == "<" and redirect.target is not None:
            feed = Feed("file", redirect.target.text)
    words = unwrap(a, cmd.words) if cmd.words else []
    if not words:
        return _group_output(a, cmd)
    name, args = os.path.basename(words[0].text), words[1:]
    flags = {w.text for w in args if w.text.startswith("-")}
    if name in DOWNLOADERS:
        to_file = flags & {"-o", "--output", "-O", "--remote-name", "-P"}
        to_stdout = name == "wget" and any(w.text in ("-O-", "-qO-", "-") for w in args)
        if (name == "wget" and not to_stdout) or to_file:
            return Feed("other", name)
        return Feed("download", name)
    if name in NETWORK:
        return Feed("download", name)
    if name in DECODERS:
        return _decoded(name, flags, args, feed)
    if name in ("echo", "printf"):
        return _printed(name, args) or Feed("other", name)
    if name in ("cat", "tee", "head", "tail", "sort", "uniq", "grep", "sed", "awk", "cut"):
        operands = [w for w in args if not w.text.startswith("-")]
        if name == "cat" and operands:
            return Feed("file", operands[0].text)
        if feed is not None and feed.kind in ("download", "decoded", "file"):
            return feed
        if feed is not None and name in ("cat", "tee"):
            return feed
        return Feed("other", name)
    if name in ("find", "ls", "fd", "git") or (name == "grep" and "-l" in flags):
        roots = find_roots(args) if name == "find" else ["."]
        return Feed("paths", name, roots[0].rstrip("/") + "/(found files)")
    return Feed("other", name)


def _group_output(a: Analyzer, cmd: Command) -> Feed:
    if cmd.body is None:
        return Feed("other", "a command")
    kinds = []
    for pipeline in cmd.body.pipelines:
        inner: Feed | None = None
        for inner_cmd in pipeline.commands:
            inner = output_of(a, inner_cmd, inner)
        kinds.append(inner.kind if inner else "other")
    for kind in ("download", "decoded"):
        if kind in kinds:
            return Feed(kind, "a group of commands")
    return Feed("other", "a group of commands")


def _decoded(name: str, flags: set[str], args: list[Word], feed: Feed | None) -> Feed:
    decoding = name in (
        "rev",
        "tr",
        "uudecode",
        "gunzip",
        "zcat",
        "bzcat",
        "unxz",
        "xzcat",
        "unzstd",
        "unlzma",
    ) or flags & {"-d", "--decode", "-D", "-r", "--decrypt", "--decompress", "-dc", "-cd"}
    if not decoding:
        return Feed("other", name)
    if feed is not None and feed.kind == "download":
        return feed
    text = None
    if name == "base64" and feed is not None and feed.kind == "text" and feed.text:
        try:
            raw = base64.b64decode("".join(feed.text.split()), validate=False)
            text = raw.decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            text = None
    return Feed("decoded", name, text)


def _printed(name: str, args: list[Word]) -> Feed | None:
    if any(word.dynamic for word in args):
        return None
    texts = [word.text for word in args]
    if name == "echo":
        escapes = False
        while texts and texts[0] in ("-n", "-e", "-E", "-ne", "-en"):
            escapes = escapes or "e" in texts.pop(0)
        line = " ".join(texts)
        return Feed("text", "echo", (decode_escapes(line)[0] if escapes else line) + "\n")
    if not texts:
        return None
    fmt, rest = decode_escapes(texts[0])[0], texts[1:]
    for value in rest:
        for spec in ("%s", "%b"):
            if spec in fmt:
                fmt = fmt.replace(spec, decode_escapes(value)[0] if spec == "%b" else value, 1)
                break
    return Feed("text", "printf", fmt)
