"""What an ``a`` ("yes to the rest of this run") answer at the approval prompt covers.

    scope_of("git commit -m 'fix'")            # ('git commit',)
    scope_of("git add -A && git commit -m x")  # ('git add', 'git commit')
    scope_of("rm -rf build")                   # ('rm',)
    scope_of("bash -c 'rm -rf ~'")             # None: a shell runs whatever its argument says

A command's prefix is its program and, for programs that take subcommands (``git``, ``npm``,
``cargo``...), the subcommand: what a person reads as "the kind of command" it is. A later
command is covered when every simple command in it has a prefix the person already said ``a``
to. Where a prefix cannot say what runs, there is none, and ``a`` is not offered: programs
that run code or commands given as arguments (shells, interpreters, ``sudo``, ``xargs``,
``find``), substitutions (``$(...)``), variable assignments (``LD_PRELOAD=...``), a program
named by a variable, output redirected anywhere but ``/dev/null``, or text that does not
parse cleanly. A request that is not a shell command (an MCP tool's call, a connection) is
covered by its first line: the same server and tool, the same host and port.
"""

from __future__ import annotations

import os
import re

from localhand.safety.risk.rules import _ROOT, _WRAPPERS
from localhand.safety.risk.shellparse import TooDeep, parse
from localhand.safety.risk.shellsyntax import Command, Redirect, Script
from localhand.safety.risk.types import INTERPRETERS, SHELLS, Risk

SUBCOMMAND_PROGRAMS = frozenset(
    "git npm pnpm yarn bun deno cargo go docker podman kubectl helm pip pip3 uv poetry pdm "
    "hatch conda mamba apt apt-get dnf yum zypper brew snap flatpak systemctl journalctl gh "
    "glab terraform dotnet rustup gradle mvn composer bundle rails rake nix ollama tmux svn hg "
    "aws gcloud az heroku fly flyctl vercel netlify firebase npx pipx cmake just task make "
    "ninja localhand".split()
)
"""Programs whose first word says what they do (``git commit``, ``npm install``)."""
RUNS_WHAT_IT_IS_GIVEN = frozenset(
    {*SHELLS, *INTERPRETERS, *_WRAPPERS, *_ROOT}
    | set("eval source . xargs find parallel watch ssh env exec nohup trap".split())
)
"""Programs whose arguments are code or another command: their name says nothing of what runs."""
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9._:-]*")
_QUIET_TARGETS = frozenset(("/dev/null",))


def scope_of(command: str, risk: Risk | None = None) -> tuple[str, ...] | None:
    """The prefixes an ``a`` to ``command`` would cover (in order, each once), or None when
    no prefix can say what it runs (see the module docstring). ``risk.action`` set: not a
    shell command, and its first line is its scope."""
    if risk is not None and risk.action:
        first = command.split("\n", 1)[0].strip().removesuffix(":").removesuffix(", arguments")
        return (first,) if first else None
    try:
        script = parse(command)
    except (TooDeep, RecursionError):
        return None
    prefixes = _script_prefixes(script)
    if not prefixes or None in prefixes:
        return None
    return tuple(dict.fromkeys(p for p in prefixes if p is not None))


def _script_prefixes(script: Script) -> list[str | None]:
    if script.notes:  # an unclosed quote, say: what runs is not what it reads as
        return [None]
    prefixes: list[str | None] = []
    for pipeline in script.pipelines:
        for command in pipeline.commands:
            prefixes.append(_prefix(command))
    return prefixes


def _prefix(command: Command) -> str | None:
    if command.body is not None or command.function or command.subs or command.assignments:
        return None
    if not command.words or any(word.subs for word in command.words):
        return None
    if not all(_quiet(redirect) for redirect in command.redirects):
        return None
    first = command.words[0]
    if first.dynamic or not first.text:
        return None
    name = os.path.basename(first.text)
    if name in RUNS_WHAT_IT_IS_GIVEN or name.startswith("python"):
        return None
    program = first.text if "/" in first.text else name
    if name not in SUBCOMMAND_PROGRAMS:
        return program
    if len(command.words) < 2:
        return None
    second = command.words[1]
    if second.dynamic or not _SUBCOMMAND.fullmatch(second.text):
        return None  # `git -C dir ...`: options before the subcommand can change what it is
    return f"{program} {second.text}"


def _quiet(redirect: Redirect) -> bool:
    """Whether ``redirect`` writes nothing a later command could not: reads, ``2>&1``, and
    output thrown away."""
    if redirect.heredoc is not None:
        return not redirect.heredoc_subs
    target = redirect.target
    if target is None or target.dynamic or target.subs:
        return False
    if redirect.op == "<":
        return True
    if redirect.op in (">&", "<&"):
        return target.text.isdigit() or target.text == "-"  # 2>&1, 1>&-: no file
    return target.text in _QUIET_TARGETS
