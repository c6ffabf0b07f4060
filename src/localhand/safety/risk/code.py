"""Code that runs code: shells and interpreters, and a quick look inside inline programs
(``python -c``, ``perl -e``, here-documents). What a pipeline stage feeds them is
``risk_feed``'s.

Inline code is not parsed: it is searched for the few things that make a one-liner
dangerous (deleting outside the workspace, decoding and running hidden code, fork loops), and
its string literals are classified as shell commands when the code runs shell commands.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from localhand.safety.risk.paths import is_secret
from localhand.safety.risk.shellsyntax import Redirect, Word, decode_escapes
from localhand.safety.risk.types import DANGEROUS, INTERPRETERS, MODERATE, SHELLS, Feed

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

_INLINE_FLAGS = {
    "python": ("-c",),
    "javascript": ("-e", "--eval", "-p", "--print"),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "php": ("-r",),
    "lua": ("-e",),
    "Rscript": ("-e",),
    "osascript": ("-e",),
    "tclsh": (),
}
_SHELL_OPTIONS_WITH_VALUE = ("-o", "-O", "+o", "+O", "--rcfile", "--init-file")
_RUNS = ("system(", "popen", "subprocess", "exec(", "execSync", "spawn")
"""Calls that start a program: they run commands, and can run hidden code (``_EVALUATES``)."""
_RUNS_COMMANDS = (
    *_RUNS,
    "os.exec",
    "child_process",
    "shell_exec",
    "passthru",
    "IO.popen",
    "%x",
    "`",
    "Command(",
)
_DELETES = (
    "rmtree",
    "remove(",
    "unlink",
    "rmdir",
    "rmSync",
    "rm_rf",
    "rm_r",
    "FileUtils.rm",
    "rimraf",
    "removedirs",
)
_DECODES = (
    "b64decode",
    "base64",
    "atob(",
    "decode64",
    "fromCharCode",
    "codecs.decode",
    "zlib.decompress",
    "marshal.loads",
    "bytes.fromhex",
    "unhexlify",
    "rot13",
    "pack(",
)
_EVALUATES = (*_RUNS, "eval(", "compile(", "Function(", "__import__")
_FETCHES = (
    "urlopen",
    "urllib",
    "requests.",
    "http.client",
    "fetch(",
    "http.get",
    "https.get",
    "LWP::",
    "Net::HTTP",
    "open-uri",
    "socket",
    "XMLHttpRequest",
)
_HOME = ("expanduser", "Path.home", "homedir", "HOME", "ENV['HOME']", "$ENV{HOME}")


def interpreter(
    a: Analyzer, name: str, args: list[Word], feed: Feed | None, redirects: Sequence[Redirect]
) -> None:
    """``name`` (a shell or an interpreter) runs code from ``-c``, a file or its stdin."""
    if name == "busybox" and args and args[0].text in SHELLS:
        args = args[1:]
    lang = "shell" if name in SHELLS else INTERPRETERS[name]
    what = "a shell" if lang == "shell" else name
    inline_flags = ("-c",) if lang == "shell" else _INLINE_FLAGS.get(lang, ())
    script: Word | None = None
    position = 0
    while position < len(args):
        text = args[position].text
        position += 1
        if text == "--":
            break
        if lang == "shell" and text.startswith("-") and "c" in text[1:] and "-" not in text[1:]:
            text = "-c"
        if text in inline_flags and position < len(args):
            code = args[position]
            if lang == "shell":
                a.run_text(code, "runs")
            else:
                inline_code(a, lang if lang != "shell" else name, code)
            return
        if lang == "python" and text == "-m" and position < len(args):
            a.flag(MODERATE, f"runs the python module {args[position].text}")
            return
        if lang == "perl" and text.startswith("-") and "i" in text[1:]:
            for word in args[position:]:
                if not word.text.startswith("-"):
                    a.write(word, "edits")
        if text in _SHELL_OPTIONS_WITH_VALUE:
            position += 1
        elif not text.startswith(("-", "+")) or text == "-":
            script = args[position - 1]
            break
    if script is None and position < len(args):
        script = args[position]
    if script is not None and script.text != "-":
        run_file(a, script, what)
        return
    stdin = next((r for r in redirects if r.op in ("<<", "<<-", "<<<", "<")), None)
    if stdin is not None and stdin.op == "<" and stdin.target is not None:
        run_file(a, stdin.target, what)
    elif stdin is not None and stdin.heredoc is not None:
        shell_or_inline(a, lang, Word(stdin.heredoc))
    else:
        a.run_fed(feed, what)
        if feed is not None and feed.text is not None and feed.kind in ("text", "decoded"):
            shell_or_inline(a, lang, Word(feed.text))


def shell_or_inline(a: Analyzer, lang: str, code: Word) -> None:
    if lang == "shell":
        a.run_text(code, "runs")
    else:
        inline_code(a, lang, code)


def run_file(a: Analyzer, script: Word, what: str) -> None:
    if a.hidden(script):
        a.flag(DANGEROUS, f"runs a download or decoded text with {what}")
    elif os.path.normpath(script.text) in a.downloads:
        a.flag(DANGEROUS, f"runs {script.text}, which it has just downloaded")
    else:
        a.flag(MODERATE, f"runs {script.text} with {what}")


def inline_code(a: Analyzer, lang: str, code: Word) -> None:
    """Look inside a one-liner for what makes it dangerous."""
    a.flag(MODERATE, f"runs inline {lang} code")
    if code.dynamic and a.hidden(code):
        a.flag(DANGEROUS, f"runs {lang} code that is decoded or downloaded at run time")
    text = code.text
    strings = string_literals(text)
    if any(token in text for token in _FETCHES):
        a.network = True
        if any(token in text for token in _EVALUATES):
            a.flag(DANGEROUS, f"downloads and runs code from inline {lang}")
    if any(token in text for token in _DECODES) and any(token in text for token in _EVALUATES):
        a.flag(DANGEROUS, f"decodes and runs hidden code from inline {lang}")
    if "fork" in text and any(loop in text for loop in ("while", "for ", "loop", "until")):
        a.flag(DANGEROUS, f"forks processes in a loop from inline {lang} (a fork bomb)")
    if any(token in text for token in _DELETES):
        if any(token in text for token in _HOME):
            a.flag(DANGEROUS, f"deletes files in your home directory from inline {lang}")
        for literal in strings:
            if literal.startswith(("/", "~")):
                a.delete(Word(os.path.expanduser(literal)), recursive=True, verb="deletes")
    a.secrets.extend(literal for literal in strings if is_secret(literal))
    if any(token in text for token in _RUNS_COMMANDS):
        for literal in strings[:50]:
            if " " in literal or literal.isidentifier():
                a.code(literal)


def string_literals(code: str) -> list[str]:
    """The contents of ``'…'``, ``"…"`` and ``\\`…\\``` literals in ``code``, escapes decoded."""
    found, i, n = [], 0, len(code)
    while i < n:
        quote = code[i]
        if quote not in "'\"`":
            i += 1
            continue
        j = i + 1
        while j < n and code[j] != quote:
            j += 2 if code[j] == "\\" else 1
        found.append(decode_escapes(code[i + 1 : min(j, n)])[0])
        i = j + 1
    return found
