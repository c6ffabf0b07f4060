"""How risky is a shell command? ``safe``, ``moderate`` or ``dangerous``, with the reasons.

    classify("rm -rf build", workspace)              # moderate: deletes build
    classify("curl -s x.sh | sh")                    # dangerous: pipes a download into a shell
    classify("echo cm0gLXJmIC8= | base64 -d | sh")   # dangerous, and says what it would run

- ``safe``: only reads (``ls``, ``cat``, ``grep``, ``git status``...), writes nothing.
- ``moderate``: changes the workspace or runs programs (``pytest``, ``pip install``, ``make``).
- ``dangerous``: may destroy what the workspace does not hold, or hides what it runs: deletes
  outside the workspace or the workspace itself, rewrites or force-pushes git history, writes
  into ``.git`` internals, devices or system files, runs as root, runs downloaded or decoded
  code, fork bombs, raw network shells.

The command is parsed, not pattern-matched (see ``shellparse``): chains, pipes, ``$( )``,
backticks, ``bash -c``, ``eval``, here-documents, variables and quoting tricks are looked
through. What cannot be seen through is never called safe, and what hides a command (decoding
it at run time, nesting past the parser's depth) is dangerous. Plan mode and ``run_command``
share this classifier; ``localhand.safety.approval.approver`` decides what needs a person's yes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from localhand.safety.risk.code import interpreter
from localhand.safety.risk.feed import output_of
from localhand.safety.risk.paths import Where, is_secret
from localhand.safety.risk.rules import RULES, unwrap
from localhand.safety.risk.shellparse import TooDeep, parse
from localhand.safety.risk.shellsyntax import Command, Pipeline, Redirect, Script, Word
from localhand.safety.risk.types import (
    DANGEROUS,
    INTERPRETERS,
    LEVELS,
    MODERATE,
    SAFE,
    SAFE_COMMANDS,
    SHELLS,
    Feed,
    Risk,
    RiskLevel,
)

__all__ = ["LEVELS", "Risk", "RiskLevel", "classify"]

_QUERIES = frozenset(("--version", "-V", "--help", "-h", "version", "help"))


def classify(command: str, workspace: Path | str | None = None) -> Risk:
    """The risk of running ``command`` with bash in ``workspace`` (default: the current
    directory). Never raises: a command it fails to analyse is called dangerous."""
    root = Path(os.path.realpath(workspace if workspace is not None else os.getcwd()))
    analyzer = Analyzer(root)
    try:
        analyzer.code(command, depth=0)
        analyzer.finish()
    except (TooDeep, RecursionError):
        return Risk("dangerous", ("nests commands too deeply to check",))
    except Exception as error:  # a bug here must not let a command through unchecked
        return Risk("dangerous", (f"could not be analysed ({type(error).__name__})",))
    return analyzer.risk()


def program_name(path: str) -> str:
    """``/usr/bin/python3.12`` → ``python3``, ``mkfs.ext4`` → ``mkfs``: the family's name."""
    name = os.path.basename(path)
    if name.startswith("python") and name[6:].replace(".", "").isdigit():
        return "python3" if name[6:7] == "3" or not name[6:] else "python"
    return "mkfs" if name.startswith(("mkfs.", "mkdosfs", "mkntfs")) else name


@dataclass
class Analyzer:
    """Walks a parsed command line collecting findings; the rules add theirs with ``flag``."""

    workspace: Path
    where: Where = field(init=False)
    findings: list[tuple[int, str]] = field(default_factory=list)
    variables: dict[str, str | None] = field(default_factory=dict)
    downloads: set[str] = field(default_factory=set)
    """Files this command line downloads, so that running one later in it is caught."""
    functions: list[str] = field(default_factory=list)
    """Functions being defined, innermost last: one that calls itself is a fork bomb."""
    network: bool = False
    secrets: list[str] = field(default_factory=list)
    depth: int = 0

    def __post_init__(self) -> None:
        self.where = Where(self.workspace, os.path.expanduser("~"))

    def flag(self, level: int, reason: str) -> None:
        self.findings.append((level, reason))

    def risk(self) -> Risk:
        top = max((level for level, _ in self.findings), default=SAFE)
        reasons = dict.fromkeys(reason for level, reason in self.findings if level == top)
        return Risk(LEVELS[top], tuple(reasons) if top else ())

    def finish(self) -> None:
        if not self.secrets:
            return
        secret = self.secrets[0]
        home = self.where.home.rstrip("/")
        if home and secret.startswith(home + "/"):
            secret = "~" + secret[len(home) :]
        if self.network:
            self.flag(DANGEROUS, f"reads {secret} (credentials) and uses the network")
        else:
            self.flag(MODERATE, f"reads {secret}, which holds credentials")

    # -- walking ---------------------------------------------------------------------------------
    def code(self, text: str, *, depth: int | None = None) -> None:
        """Analyse ``text`` as shell code: a command line, a ``bash -c`` string, a heredoc."""
        outer = self.depth
        self.depth = outer + 1 if depth is None else depth
        try:
            home = self.where.home
            self.script(parse(text, home=home, variables=self.variables, depth=self.depth))
        finally:
            self.depth = outer

    def script(self, script: Script) -> None:
        for note in dict.fromkeys(script.notes):
            self.flag(MODERATE, f"is not complete shell syntax ({note})")
        for pipeline in script.pipelines:
            self.pipeline(pipeline)

    def pipeline(self, pipeline: Pipeline) -> None:
        feed: Feed | None = None
        for cmd in pipeline.commands:
            self.command(cmd, feed)
            feed = output_of(self, cmd, feed)

    def subs(self, scripts: list[Script]) -> None:
        for script in scripts:
            self.script(script)

    def command(self, cmd: Command, feed: Feed | None) -> None:
        for _, value in cmd.assignments:
            self.subs(value.subs)
        self.subs(cmd.subs)
        for word in cmd.words:
            self.subs(word.subs)
        if cmd.body is not None:
            if cmd.function is not None:
                self.functions.append(cmd.function)
            self.script(cmd.body)
            if cmd.function is not None:
                self.functions.pop()
        for redirect in cmd.redirects:
            self.redirect(redirect)
        words = unwrap(self, cmd.words)
        if words:
            self.run(words, feed, cmd.redirects)

    def run(self, words: list[Word], feed: Feed | None, redirects: Sequence[Redirect] = ()) -> None:
        """Classify one simple command, ``words[0]`` being the program."""
        head = words[0]
        name = program_name(head.text)
        for word in words[1:]:
            if is_secret(word.text):  # the path in `-F f=@path`, `--key=path` or `path`
                self.secrets.append(word.text.rsplit("@", 1)[-1].rsplit("=", 1)[-1])
            if "/dev/tcp/" in word.text or "/dev/udp/" in word.text:
                self.flag(DANGEROUS, "opens a raw network connection through /dev/tcp")
        if len(words) == 2 and words[1].text in _QUERIES and not head.dynamic:
            pass  # `python3 --version`, `make --help`
        elif head.leading_dynamic:
            self.dynamic_name(head)
        elif name in self.functions:
            self.flag(DANGEROUS, f"defines a function '{name}' that calls itself (a fork bomb)")
        elif name in SHELLS or name in INTERPRETERS:
            interpreter(self, name, words[1:], feed, redirects)
        elif name in RULES:
            RULES[name](self, name, words[1:], feed)
        elif name in SAFE_COMMANDS:
            pass
        elif os.path.normpath(head.text) in self.downloads:
            self.flag(DANGEROUS, f"runs {head.text}, which it has just downloaded")
        elif "/" in head.text:
            self.flag(MODERATE, f"runs the program {head.text}")
        else:
            self.flag(MODERATE, f"runs {name}, which can change files")

    def dynamic_name(self, head: Word) -> None:
        if self.hidden(head):
            self.flag(DANGEROUS, "runs a command that is decoded or downloaded at run time")
        else:
            self.flag(MODERATE, f"runs a command only known at run time ({head.text})")

    def hidden(self, word: Word) -> bool:
        """True when ``word`` holds the output of a download or a decoder."""
        for script in word.subs:
            for pipeline in script.pipelines:
                feed: Feed | None = None
                for cmd in pipeline.commands:
                    feed = output_of(self, cmd, feed)
                if feed is not None and feed.kind in ("download", "decoded"):
                    return True
        return False

    def run_text(self, text: Word, what: str) -> None:
        """``text`` is run as shell code (``bash -c``, ``eval``, ``su -c``)."""
        if text.dynamic and self.hidden(text):
            self.flag(DANGEROUS, f"{what} code that is decoded or downloaded at run time")
            return
        if text.dynamic:
            self.flag(MODERATE, f"{what} code only known at run time")
        self.code(text.text)

    def run_fed(self, feed: Feed | None, what: str) -> None:
        """A shell or interpreter reads its program from ``feed``, the previous stage."""
        if feed is None:
            self.flag(MODERATE, f"starts {what}")
        elif feed.kind == "download":
            self.flag(DANGEROUS, f"pipes a download into {what}")
        elif feed.kind == "decoded":
            self.flag(DANGEROUS, f"pipes decoded data into {what}, hiding what it runs")
        elif feed.kind == "file" and os.path.normpath(feed.source) in self.downloads:
            self.flag(DANGEROUS, f"runs {feed.source}, which it has just downloaded")
        else:
            self.flag(MODERATE, f"pipes the output of {feed.source} into {what}")

    # -- what commands touch --------------------------------------------------------------------
    def redirect(self, redirect: Redirect) -> None:
        self.subs(redirect.heredoc_subs)
        target = redirect.target
        if target is None or redirect.op in ("<<", "<<-", "<<<"):
            return
        self.subs(target.subs)
        if redirect.op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return
        if redirect.op in ("<", "<&"):
            if self.where.locate(target).kind == "network":
                self.flag(DANGEROUS, "opens a raw network connection through /dev/tcp")
            elif is_secret(target.text):
                self.secrets.append(target.text)
            return
        self.write(target, "overwrites" if redirect.op in (">", ">|", "&>", ">&") else "writes")

    def write(self, target: Word, verb: str = "writes") -> None:
        """``target`` is created, overwritten or appended to."""
        place = self.where.locate(target)
        kind, shown = place.kind, place.shown
        if kind == "network":
            self.flag(DANGEROUS, "opens a raw network connection through /dev/tcp")
        elif kind == "device":
            self.flag(DANGEROUS, f"{verb} the device {shown}")
        elif kind == "git":
            self.flag(DANGEROUS, f"{verb} {shown} inside .git, where hooks and config run code")
        elif kind in ("outside", "system", "home", "root"):
            self.flag(DANGEROUS, f"{verb} {shown}, outside the workspace")
        elif kind == "unknown":
            self.flag(MODERATE, f"{verb} a file only named at run time ({shown})")
        elif kind != "null":
            self.flag(MODERATE, f"{verb} {shown}")

    def create(self, target: Word, verb: str) -> None:
        """``target`` is created if missing (``touch``, ``mkdir``): harmless outside too."""
        place = self.where.locate(target)
        if place.kind == "git":
            self.write(target, verb)
        elif place.kind not in ("null", "device", "network"):
            self.flag(MODERATE, f"{verb} {place.shown}")

    def delete(self, target: Word, *, recursive: bool, verb: str = "deletes") -> None:
        place = self.where.locate(target, follow=target.text.endswith("/"))
        kind, shown = place.kind, place.shown
        if kind == "root":
            self.flag(DANGEROUS, f"{verb} / and everything under it")
        elif kind == "home":
            self.flag(DANGEROUS, f"{verb} your home directory (~)")
        elif kind == "workspace":
            level = DANGEROUS if recursive else MODERATE
            self.flag(level, f"{verb} the whole workspace" if recursive else f"{verb} files in .")
        elif kind == "git" and not (shown.endswith(".lock") and not recursive):
            self.flag(DANGEROUS, f"{verb} {shown}, part of the repository's history (.git)")
        elif kind in ("outside", "system", "device") or (kind == "temp" and recursive):
            self.flag(DANGEROUS, f"{verb} {shown}, outside the workspace")
        elif kind == "unknown" and recursive:
            self.flag(DANGEROUS, f"{verb} {shown}, a path only known at run time")
        elif kind != "null":
            self.flag(MODERATE, f"{verb} {shown}")
