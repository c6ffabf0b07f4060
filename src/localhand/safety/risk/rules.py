"""What particular commands do: wrappers to look through, and one rule per command family.

A rule gets the analyzer, the program's name, its arguments and what the previous pipeline
stage feeds it, and calls ``a.flag``/``a.write``/``a.delete``. Commands without a rule are
``moderate`` unless ``risk_types.SAFE_COMMANDS`` lists them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from localhand.safety.risk.code import run_file
from localhand.safety.risk.files import FILE_RULES
from localhand.safety.risk.git import git
from localhand.safety.risk.net import NET_RULES
from localhand.safety.risk.shellsyntax import Word
from localhand.safety.risk.system import SYSTEM_RULES
from localhand.safety.risk.types import DANGEROUS, MODERATE, Feed, Rule, options, registry

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

RULES: dict[str, Rule] = {"git": git, **SYSTEM_RULES, **FILE_RULES, **NET_RULES}

_RESERVED = frozenset("if then else elif fi do done while until ! time { } esac in coproc".split())
_ROOT = frozenset("sudo doas pkexec run0 su".split())
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # name: (options that take a value, positional arguments before the command)
    "env": (frozenset("-u --unset -C --chdir".split()), 0),
    "sudo": (frozenset("-u -g -h -p -C -D -r -t -U -T --user --group --host".split()), 0),
    "doas": (frozenset(("-u", "-C")), 0),
    "pkexec": (frozenset(("--user",)), 0),
    "run0": (frozenset(("-u", "--user", "-D")), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "time": (frozenset(("-f", "-o", "--format", "--output")), 0),
    "nice": (frozenset(("-n", "--adjustment")), 0),
    "ionice": (frozenset(("-c", "-n", "--class", "--classdata")), 0),
    "stdbuf": (frozenset(("-i", "-o", "-e")), 0),
    "timeout": (frozenset(("-s", "-k", "--signal", "--kill-after")), 1),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset(("-a",)), 0),
    "chronic": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset(("-t", "-w")), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "flock": (frozenset(("-w", "-E", "--timeout", "--conflict-exit-code")), 1),
    "strace": (frozenset("-o -e -p -s -u -a -b -I -O -S -P -X".split()), 0),
    "ltrace": (frozenset(("-o", "-e", "-p", "-s", "-u", "-n")), 0),
    "torsocks": (frozenset(), 0),
    "proxychains": (frozenset(("-f",)), 0),
    "proxychains4": (frozenset(("-f",)), 0),
    "firejail": (frozenset(), 0),
    "xvfb-run": (frozenset(("-n", "-s", "-e", "-f", "-p")), 0),
    "dbus-run-session": (frozenset(), 0),
    "numactl": (frozenset(), 0),
    "fakeroot": (frozenset(), 0),
    "unshare": (frozenset(("-S", "-G", "--setuid", "--setgid", "-w", "--wd")), 0),
    "chroot": (frozenset(("--userspec", "--groups")), 1),
    "then": (frozenset(), 0),
}


def unwrap(a: Analyzer, words: list[Word]) -> list[Word]:
    """The command that wrappers such as ``sudo``, ``env``, ``nohup`` and ``timeout`` run,
    flagging the wrappers that matter (running as root); ``[]`` when nothing runs."""
    while words:
        head = words[0]
        name = os.path.basename(head.text)
        if head.leading_dynamic:
            return words
        if name in _RESERVED:
            words = words[1:]
        elif name in ("for", "select", "case", "function"):
            return []
        elif name == "busybox" and len(words) > 1:
            words = words[1:]
        elif name in ("command", "type") and len(words) > 1 and words[1].text in ("-v", "-V"):
            return []
        elif name in ("su", "sg", "watch", "systemd-run") or (
            name == "env" and any(w.text.startswith(("-S", "--split-string")) for w in words)
        ):
            _runs_text(a, name, words[1:])
            return []
        elif name in _WRAPPERS:
            if name in _ROOT:
                a.flag(DANGEROUS, f"runs as root ({name})")
            if name == "time" or name == "strace":
                _option_writes(a, words[1:], ("-o", "--output"))
            with_value, positional = _WRAPPERS[name]
            words = _skip_options(words[1:], with_value, positional, assignments=name == "env")
        else:
            return words
    return []


def _runs_text(a: Analyzer, name: str, args: list[Word]) -> None:
    """``su -c CMD``, ``watch CMD…``, ``env -S CMD``, ``systemd-run CMD…``."""
    if name in ("su",):
        a.flag(DANGEROUS, "runs as another user (su)")
    if name == "systemd-run":
        a.flag(DANGEROUS, "starts a system service that outlives the command (systemd-run)")
    for index, word in enumerate(args):
        if word.text in ("-c", "--command", "-S") or word.text.startswith("--split-string"):
            value = word.text.partition("=")[2]
            if value:
                a.run_text(Word(value, word.dynamic, word.leading_dynamic, word.subs), "runs")
            elif index + 1 < len(args):
                a.run_text(args[index + 1], "runs")
            return
    rest = _skip_options(args, frozenset(("-n", "--interval", "-u", "--unit", "-p")), 0)
    if rest and name != "su":
        joined = " ".join(w.text for w in rest)
        a.run_text(
            Word(joined, any(w.dynamic for w in rest), False, [s for w in rest for s in w.subs]),
            "runs",
        )


def _skip_options(
    args: list[Word], with_value: frozenset[str], positional: int, *, assignments: bool = False
) -> list[Word]:
    index = 0
    while index < len(args):
        text = args[index].text
        if text == "--":
            index += 1
            break
        if text.startswith("-") and len(text) > 1:
            index += 2 if text in with_value else 1
        elif assignments and "=" in text and text.partition("=")[0].isidentifier():
            index += 1
        else:
            break
    return args[index + positional :]


def _option_writes(a: Analyzer, args: list[Word], names: tuple[str, ...]) -> None:
    _, values, _ = options(args, names)
    for name in names:
        if name in values:
            a.write(values[name])


rule = registry(RULES)


@rule("cd", "pushd")
def _cd(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    operands = [w for w in args if not w.text.startswith("-") or w.text == "-"]
    a.where.chdir(operands[0] if operands else None)


@rule("rm", "unlink", "rmdir", "shred", "srm", "wipe")
def _rm(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    flags, _, operands = options(args)
    recursive = bool(flags & {"-r", "-R", "--recursive"}) and name == "rm"
    verb = "overwrites and deletes" if name in ("shred", "srm", "wipe") else "deletes"
    if not operands:
        a.flag(MODERATE, f"deletes files ({name})")
    for target in operands:
        a.delete(target, recursive=recursive, verb=verb)


def find_roots(args: list[Word]) -> list[str]:
    roots = []
    for word in args:
        if word.text.startswith(("-", "(", "!")) and word.text not in ("-", "--"):
            break
        roots.append(word.text)
    return [root for root in roots if root not in ("-H", "-L", "-P")] or ["."]


_FIND_TESTS = frozenset(
    "-name -iname -path -ipath -wholename -regex -iregex -type -newer -mtime -mmin -atime "
    "-ctime -size -empty -user -group -perm -links -inum -samefile -lname -maxdepth".split()
)


@rule("find")
def _find(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    root_texts = find_roots(args)
    roots = [w for w in args if w.text in root_texts] or [Word(".")]
    filtered = any(w.text in _FIND_TESTS for w in args)
    for index, word in enumerate(args):
        text = word.text
        if text == "-delete":
            for root in roots:
                place = a.where.locate(root)
                if not filtered or place.kind not in ("inside", "workspace", "temp"):
                    a.delete(root, recursive=True)
                else:
                    a.flag(MODERATE, f"deletes the files it finds under {place.shown}")
        elif text in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = []
            for piece in args[index + 1 :]:
                if piece.text in (";", "+"):
                    break
                if "{}" in piece.text:
                    item = (
                        roots[0].text.rstrip("/") + "/(found files)" if filtered else roots[0].text
                    )
                    piece = Word(
                        piece.text.replace("{}", item),
                        roots[0].dynamic,
                        piece.leading_dynamic
                        or (piece.text.startswith("{}") and roots[0].leading_dynamic),
                    )
                inner.append(piece)
            if inner:
                a.run(inner, None)
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls") and index + 1 < len(args):
            a.write(args[index + 1])


@rule("xargs", "parallel")
def _xargs(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    with_value = ("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--max-args", "-j")
    start = _command_start(args, with_value)
    _, values, _ = options(args[:start], with_value)
    inner = args[start:] or [Word("echo")]
    items = [Word("$ITEM", True, True)]
    if feed is not None and feed.kind == "paths" and feed.text:
        items = [Word(feed.text)]
    elif feed is not None and feed.kind == "text" and feed.text and feed.text.split():
        items = [Word(text) for text in feed.text.split()[:20]]
    marker = values.get("-I")
    for item in items:
        if marker is None:
            a.run([*inner, item], None)
            continue
        a.run([_substitute(word, marker.text, item) for word in inner], None)


def _substitute(word: Word, marker: str, item: Word) -> Word:
    if marker not in word.text:
        return word
    leading = word.leading_dynamic or (word.text.startswith(marker) and item.dynamic)
    return Word(word.text.replace(marker, item.text), word.dynamic or item.dynamic, leading)


def _command_start(args: list[Word], with_value: tuple[str, ...]) -> int:
    index = 0
    while index < len(args) and args[index].text.startswith("-"):
        index += 2 if args[index].text in with_value else 1
    return min(index, len(args))


@rule("eval")
def _eval(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    joined = Word(
        " ".join(w.text for w in args),
        any(w.dynamic for w in args),
        False,
        [s for w in args for s in w.subs],
    )
    a.run_text(joined, "evaluates")


@rule("source", ".")
def _source(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    if not args:
        return
    run_file(a, args[0], "the current shell")
