"""``localhand completion bash|zsh|fish``: a shell completion script, made from the parsers.

The script is written from the same ``argparse`` parsers the commands parse with (every
command of ``COMMAND_MODULES``, each with its options, their choices and whether they take a
file or a directory), so it cannot drift from them: a new command or flag is in the next
script printed. Install it as docs/running-tasks.md, "Shell completion", says.

A run (``show``, ``undo``, ``replay``, ``--continue``) completes to ``last`` and the newest run
ids, a ``--model`` to the names the last ``localhand models`` found (``MODELS_CACHE``): the
script asks ``localhand completion --values runs|models``, which reads the store and that
file, never a server.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from localhand.cli.args import Command, fail

SHELLS = ("bash", "zsh", "fish")
MODELS_CACHE = "models.txt"
"""In localhand's data directory: the model names the last ``localhand models`` found."""
VALUES = "localhand completion --values {kind} 2>/dev/null"
"""How a script asks for the runs or models it offers (``values``)."""
_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s")


@dataclass(frozen=True)
class Argument:
    """One option (``names``: ``-w``, ``--workspace``) or positional (``names`` empty)."""

    names: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...] = ()
    completes: str = ""
    """``file``, ``dir``, ``runs``, ``models`` or nothing: what a value of it names."""
    repeatable: bool = False
    metavar: str = ""


@dataclass(frozen=True)
class CommandSpec:
    name: str
    help: str
    options: tuple[Argument, ...]
    positionals: tuple[Argument, ...]


def completion(args: argparse.Namespace) -> int:
    """Print a shell completion script for bash, zsh or fish (to install as
    docs/running-tasks.md says)."""
    shell = args.shell
    if args.values:
        print("\n".join(values(args.values)))
        return 0
    if shell is None:  # argparse has checked a shell given against SHELLS
        fail("say which shell: bash, zsh or fish")
    specs = command_specs()
    script = {"bash": bash, "zsh": zsh, "fish": fish}[shell](specs)
    print(script, end="")
    return 0


def completion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "shell", nargs="?", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish."
    )
    parser.add_argument("--values", choices=("runs", "models"), help=argparse.SUPPRESS)


def values(kind: str) -> list[str]:
    """What a run or a model name completes to: ``last`` and the 20 newest run ids, or the
    names the last ``localhand models`` found. Nothing is asked of a server."""
    from localhand.paths import data_dir, db_path  # not needed to parse the options

    if kind == "models":
        cache = data_dir() / MODELS_CACHE
        return cache.read_text(encoding="utf-8").split() if cache.is_file() else []
    if not db_path().is_file():  # completing creates no store
        return ["last"]
    from localhand.store import open_store  # not needed to parse the options

    with open_store() as store:
        return ["last", *(run.id for run in store.runs(20))]


def remember_models(names: list[str]) -> None:
    """Keep the names ``localhand models`` found, for ``--model`` to complete to."""
    from localhand.paths import data_dir, private_dir  # not needed to parse the options

    try:
        private_dir(data_dir())
        (data_dir() / MODELS_CACHE).write_text("".join(f"{n}\n" for n in names), "utf-8")
    except OSError:
        pass  # completion without model names is no reason to fail the listing


COMMANDS = {"completion": Command(completion, completion_arguments)}


# -- reading the parsers ------------------------------------------------------------------------
def command_specs() -> list[CommandSpec]:
    """Every command, its one-line help and its arguments, from its own parser."""
    # not needed to parse the options
    from localhand.cli import COMMAND_MODULES, _doc, command_parser

    specs = []
    for name in COMMAND_MODULES:
        command, parser = command_parser(name)
        options: list[Argument] = []
        positionals: list[Argument] = []
        for action in parser._actions:
            argument = _argument(action)
            (options if action.option_strings else positionals).append(argument)
        specs.append(
            CommandSpec(name, _doc(command).split("\n")[0], tuple(options), tuple(positionals))
        )
    return specs


def _argument(action: argparse.Action) -> Argument:
    metavar = action.metavar if isinstance(action.metavar, str) else ""
    kind = ""
    if metavar == "RUN":
        kind = "runs"
    elif action.dest == "model":
        kind = "models"
    elif metavar in ("DIR", "DIRECTORY"):
        kind = "dir"
    elif action.type is Path or metavar in ("FILE", "PATH"):
        kind = "file"
    help_text = action.help if isinstance(action.help, str) else ""
    first = _SENTENCE_END.split(help_text)[0].split(" (")[0].strip().rstrip(".")
    return Argument(
        names=tuple(action.option_strings),
        help=first.replace("%(default)s", "").replace("%(default)g", ""),
        takes_value=action.nargs != 0,
        choices=tuple(str(c) for c in action.choices or ()),
        completes=kind,
        repeatable=isinstance(action, argparse._AppendAction),
        metavar=metavar or (action.dest.upper() if action.dest else ""),
    )


# -- bash ---------------------------------------------------------------------------------------
def bash(specs: list[CommandSpec]) -> str:
    names = " ".join(spec.name for spec in specs)
    cases = "".join(_bash_case(spec) for spec in specs)
    return f"""# localhand completion for bash: eval "$(localhand completion bash)"
_localhand() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "{names} --help --version" -- "$cur") )
        return
    fi
    case "${{COMP_WORDS[1]}}" in
{cases}    esac
}}
complete -o default -F _localhand localhand
"""


def _bash_case(spec: CommandSpec) -> str:
    values = []
    for option in spec.options:
        if not option.takes_value:
            continue
        names = "|".join(option.names)
        if option.choices:
            reply = f'COMPREPLY=( $(compgen -W "{" ".join(option.choices)}" -- "$cur") )'
        elif option.completes in ("runs", "models"):
            reply = _bash_values(option.completes)
        elif option.completes == "dir":
            reply = 'COMPREPLY=( $(compgen -d -- "$cur") )'
        elif option.completes == "file":
            reply = 'COMPREPLY=( $(compgen -f -- "$cur") )'
        else:
            reply = "COMPREPLY=()"
        values.append(f"                {names}) {reply}; return ;;\n")
    flags = " ".join(name for option in spec.options for name in option.names)
    choices = " ".join(c for positional in spec.positionals for c in positional.choices)
    rest = f'COMPREPLY=( $(compgen -W "{choices}" -- "$cur") )' if choices else "return"
    if any(positional.completes == "runs" for positional in spec.positionals):
        rest = _bash_values("runs")
    return (
        f"        {spec.name})\n"
        f'            case "$prev" in\n{"".join(values)}            esac\n'
        f'            if [[ "$cur" == -* ]]; then\n'
        f'                COMPREPLY=( $(compgen -W "{flags}" -- "$cur") )\n'
        f"            else\n                {rest}\n            fi\n            ;;\n"
    )


def _bash_values(kind: str) -> str:
    return f'COMPREPLY=( $(compgen -W "$({VALUES.format(kind=kind)})" -- "$cur") )'


# -- zsh ----------------------------------------------------------------------------------------
def zsh(specs: list[CommandSpec]) -> str:
    described = "\n".join(f"        {_zq(f'{spec.name}:{_zhelp(spec.help)}')}" for spec in specs)
    cases = "".join(_zsh_case(spec) for spec in specs)
    return f"""#compdef localhand
# localhand completion for zsh: localhand completion zsh > "${{fpath[1]}}/_localhand"
_localhand() {{
    local -a commands
    commands=(
{described}
    )
    if (( CURRENT == 2 )); then
        _describe -t commands 'localhand command' commands
        return
    fi
    local command=$words[2]
    shift words
    (( CURRENT-- ))
    case $command in
{cases}    esac
}}
if [[ "${{funcstack[1]}}" == "_localhand" ]]; then
    _localhand "$@"
else
    compdef _localhand localhand
fi
"""


def _zsh_case(spec: CommandSpec) -> str:
    lines = []
    for option in spec.options:
        for name in option.names:
            lines.append(_zq(_zsh_spec(name, option)))
    for number, positional in enumerate(spec.positionals, start=1):
        action = _zsh_action(positional)
        lines.append(_zq(f"{number}:{_zhelp(positional.metavar) or 'argument'}:{action}"))
    joined = " \\\n                ".join(lines)
    call = f"_arguments -s \\\n                {joined}"
    return f"        {spec.name})\n            {call}\n            ;;\n"


def _zsh_spec(name: str, option: Argument) -> str:
    star = "*" if option.repeatable else ""
    spec = f"{star}{name}[{_zhelp(option.help)}]"
    if option.takes_value:
        spec += f":{_zhelp(option.metavar) or 'value'}:{_zsh_action(option)}"
    return spec


def _zsh_action(argument: Argument) -> str:
    if argument.choices:
        return f"({' '.join(argument.choices)})"
    asked = "{compadd -- $(" + VALUES.format(kind=argument.completes) + ")}"
    return {"dir": "_files -/", "file": "_files", "runs": asked, "models": asked}.get(
        argument.completes, " "
    )


def _zhelp(text: str) -> str:
    """A help text that cannot end an ``_arguments`` spec early: no brackets or colons."""
    return text.replace("[", "(").replace("]", ")").replace(":", " -").replace("\\", "/")


def _zq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- fish ---------------------------------------------------------------------------------------
def fish(specs: list[CommandSpec]) -> str:
    lines = [
        "# localhand completion for fish: localhand completion fish > "
        "~/.config/fish/completions/localhand.fish",
        "complete -c localhand -f",
    ]
    for spec in specs:
        lines.append(
            f"complete -c localhand -n __fish_use_subcommand -a {spec.name} -d {_fq(spec.help)}"
        )
    for spec in specs:
        when = f"-n {_fq(f'__fish_seen_subcommand_from {spec.name}')}"
        for option in spec.options:
            parts = ["complete -c localhand", when]
            for name in option.names:
                if name.startswith("--"):
                    parts.append(f"-l {name[2:]}")
                elif len(name) == 2:
                    parts.append(f"-s {name[1:]}")
                else:
                    parts.append(f"-o {name[1:]}")
            if option.choices:  # -x: a value is required, and no file names are offered
                parts.append(f"-x -a {_fq(' '.join(option.choices))}")
            elif option.completes in ("runs", "models"):
                parts.append(f"-x -a {_fq(_fish_values(option.completes))}")
            elif option.takes_value:
                parts.append("-r -F" if option.completes else "-x")
            parts.append(f"-d {_fq(option.help)}")
            lines.append(" ".join(parts))
        for positional in spec.positionals:
            if positional.choices:
                lines.append(f"complete -c localhand {when} -a {_fq(' '.join(positional.choices))}")
            elif positional.completes == "runs":
                lines.append(f"complete -c localhand {when} -x -a {_fq(_fish_values('runs'))}")
            elif positional.completes:
                lines.append(f"complete -c localhand {when} -F")
    return "\n".join(lines) + "\n"


def _fish_values(kind: str) -> str:
    return f"({VALUES.format(kind=kind)})"


def _fq(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
