"""The values the risk classifier works with, and the command families it knows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from localhand.safety.risk.shellsyntax import Word

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

RiskLevel = Literal["safe", "moderate", "dangerous"]
LEVELS: tuple[RiskLevel, ...] = ("safe", "moderate", "dangerous")
SAFE, MODERATE, DANGEROUS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Risk:
    """A command's risk and, for ``moderate`` and ``dangerous``, why, in plain sentences."""

    level: RiskLevel
    reasons: tuple[str, ...] = ()
    action: str = ""
    """What is asked for, when it is not a shell command to run (an MCP tool's call): the
    approval question names it instead of "command"."""

    def __str__(self) -> str:
        return f"{self.level}: {'; '.join(self.reasons)}" if self.reasons else self.level


class Feed(NamedTuple):
    """What one stage of a pipeline sends to the next."""

    kind: str
    """``download``, ``decoded``, ``text`` (literal text known now), ``file`` (a file's
    contents), ``paths`` (file names, for xargs) or ``other``."""
    source: str
    """The program or file it comes from, for reasons."""
    text: str | None = None
    """The literal text (``text``, a ``decoded`` literal), or a sample path (``paths``)."""


Rule = Callable[["Analyzer", str, list[Word], "Feed | None"], None]
"""A command family's rule: (analyzer, program name, arguments, what the pipe feeds it)."""


def registry(table: dict[str, Rule]) -> Callable[..., Callable[[Rule], Rule]]:
    """The ``@rule(*names)`` decorator of a family's table: files the rule under each name."""

    def rule(*names: str) -> Callable[[Rule], Rule]:
        def register(function: Rule) -> Rule:
            table.update(dict.fromkeys(names, function))
            return function

        return register

    return rule


def options(
    args: list[Word], with_value: tuple[str, ...] = ()
) -> tuple[set[str], dict[str, Word], list[Word]]:
    """Flags (``-rf`` gives ``-r`` and ``-f``), option values and operands of ``args``."""
    flags: set[str] = set()
    values: dict[str, Word] = {}
    operands: list[Word] = []
    index = 0
    while index < len(args):
        word, text = args[index], args[index].text
        index += 1
        if text == "--":
            operands.extend(args[index:])
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            flags.add(name)
            if eq:
                values[name] = Word(value, word.dynamic, False, word.subs)
            elif name in with_value and index < len(args):
                values[name] = args[index]
                index += 1
        elif text.startswith("-") and len(text) > 1 and not text[1].isdigit():
            for position, letter in enumerate(text[1:], 1):
                flags.add("-" + letter)
                if "-" + letter in with_value:
                    rest = text[position + 1 :]
                    if rest:
                        values["-" + letter] = Word(rest, word.dynamic)
                    elif index < len(args):
                        values["-" + letter] = args[index]
                        index += 1
                    break
        else:
            operands.append(word)
    return flags, values, operands


SAFE_COMMANDS = frozenset(
    ": [ [[ ]] alias basename cal cat cd cksum cmp column comm cut date df diff dirname dirs du "
    "echo egrep env expand expr false fgrep file fmt fold free getconf grep groups head "
    "hexdump hostname id jobs join jq less locale ls lsb_release lscpu md5sum more nl nproc "
    "numfmt od paste popd printenv printf ps pushd pwd readlink realpath rev rg seq sha1sum "
    "sha224sum sha256sum sha384sum sha512sum b2sum shopt sleep stat strings sum tac tail test "
    "tr tree true tty type uname unexpand uniq uptime wait wc whereis which whoami return "
    "exit break continue set shift local declare typeset export readonly unset read getopts "
    "let trap umask ulimit hash history times ag ack fd pgrep pstree lsof base64 base32 "
    "basenc xxd mktemp sort awk gawk mawk sed find git yes".split()
)
"""Commands that only read. Those with writing options (sort -o, sed -i, find -delete...)
have rules that check them."""

DOWNLOADERS = frozenset("curl wget fetch aria2c http https xh lynx links w3m".split())
NETWORK = frozenset(
    "nc ncat netcat socat telnet ssh scp sftp ftp tftp rsync rclone openssl ping dig".split()
)
SHELLS = frozenset("sh bash dash zsh ksh mksh ash fish busybox csh tcsh yash".split())
INTERPRETERS = {
    **dict.fromkeys(("python", "python2", "python3", "pypy", "pypy3"), "python"),
    **dict.fromkeys(("node", "nodejs", "deno", "bun"), "javascript"),
    **{name: name for name in ("perl", "ruby", "php", "lua", "Rscript", "osascript", "tclsh")},
}
"""Programs that run code given inline (``-c``, ``-e``) or on standard input."""
DECODERS = frozenset(
    "base64 base32 basenc xxd uudecode openssl gpg rev tr gunzip zcat gzip bunzip2 bzcat bzip2 "
    "unxz xzcat xz zstd unzstd brotli lzma unlzma".split()
)
"""Programs whose output can be text that was hidden from the command line."""
