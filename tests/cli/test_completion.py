"""``localhand completion bash|zsh|fish``: scripts made from the parsers, so they cannot drift.

Every command and every flag of every command's own parser must be in each script; bash's
and fish's answer real completion requests; zsh's and fish's parse (``zsh -n``, ``fish -n``)
where those shells are installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.cli import COMMAND_MODULES, command_named
from localhand.cli.args import Parser


def every_flag() -> dict[str, set[str]]:
    """Each command's option strings, read from the parser it parses with."""
    flags = {}
    for name in COMMAND_MODULES:
        command = command_named(name)
        parser = Parser(prog=f"localhand {name}")
        command.arguments(parser)
        flags[name] = {o for action in parser._actions for o in action.option_strings}
    return flags


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    cwd = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in ("bash", "zsh", "fish"):
        done = localhand("completion", shell, cwd=cwd)
        assert done.returncode == 0, done.stderr
        out[shell] = done.stdout
    return out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_command_and_flag_is_in_the_script(scripts: dict[str, str], shell: str) -> None:
    script = scripts[shell]
    flags = every_flag()
    assert {"run", "plan", "completion"} <= set(flags)
    for name, options in flags.items():
        assert name in script, (shell, name)
        for option in options:
            if shell == "fish":  # fish names options without their dashes: -l model, -s w
                spelled = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            else:
                spelled = option
            assert spelled in script, (shell, name, option)
    for flag in ("--show-thinking", "--verbose", "--quiet"):
        assert flag.lstrip("-") in script


def bash_complete(script: str, line: str, tmp_path: Path) -> list[str]:
    """What bash offers for ``line`` (its last word being completed)."""
    (tmp_path / "complete.bash").write_text(script)
    words = line.split(" ")
    program = (
        f"source {tmp_path / 'complete.bash'}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        '_localhand\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [word for word in done.stdout.splitlines() if word]


def test_bash_completes_commands_flags_and_choices(scripts: dict[str, str], tmp_path: Path) -> None:
    assert bash_complete(scripts["bash"], "localhand ru", tmp_path) == ["run", "runs"]
    assert bash_complete(scripts["bash"], "localhand run --show-th", tmp_path) == [
        "--show-thinking"
    ]
    assert bash_complete(scripts["bash"], "localhand run --approve ", tmp_path) == [
        "never",
        "dangerous",
        "always",
    ]
    assert bash_complete(scripts["bash"], "localhand completion f", tmp_path) == ["fish"]
    (tmp_path / "subdir").mkdir()
    assert "subdir" in bash_complete(scripts["bash"], "localhand run -w su", tmp_path)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_parses_and_completes(scripts: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "localhand.fish"
    path.write_text(scripts["fish"])
    assert subprocess.run(["fish", "-n", str(path)]).returncode == 0
    asked = f"source {path}; complete -C 'localhand run --sandbox '"
    done = subprocess.run(["fish", "-c", asked], capture_output=True, text=True)
    offered = {line.split("\t")[0] for line in done.stdout.splitlines()}
    assert offered == {"workspace-write", "read-only", "off", "required"}


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_parses(scripts: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "_localhand"
    path.write_text(scripts["zsh"])
    done = subprocess.run(["zsh", "-n", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert scripts["zsh"].startswith("#compdef localhand\n")


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    done = localhand("completion", "tcsh", cwd=tmp_path)
    assert done.returncode == 2
    assert "invalid choice: 'tcsh'" in done.stderr and done.stdout == ""
