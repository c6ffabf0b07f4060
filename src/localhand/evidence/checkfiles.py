"""Which files are a check's own: what a check command runs, rather than the code it checks.

A model that cannot make the tests pass can make the tests say they pass: rewrite the script
``--verify`` names, a test, a ``conftest.py`` that skips everything, a ``pytest.ini`` whose
``addopts`` selects nothing, a ``package.json`` test script that is ``exit 0``, a
``sitecustomize.py`` the check's Python imports at start-up. ``CheckFiles`` tells those files
apart by their paths (and, for a verify command, by what the command names), so that
``localhand.evidence.checkguard`` can run the checks against them as they were before the run.

Never the code under test: a file counts only for what it is to the test runner, and a file
whose test settings sit beside other settings (``pyproject.toml``, ``setup.cfg``,
``package.json``) counts only when its test part changed (``check_part``).
"""

from __future__ import annotations

import configparser
import dataclasses
import fnmatch
import json
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localhand.paths import is_within
from localhand.safety.risk.shellparse import TooDeep, parse
from localhand.safety.risk.shellsyntax import Command, Script, Word
from localhand.safety.risk.types import INTERPRETERS, SHELLS

TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "t"})
"""A file anywhere under a folder of one of these names is a test's."""
PYTEST_NAME = r"test_.*\.py|.*_test\.py"
"""The files pytest collects as tests unless told otherwise (its ``python_files``)."""
TEST_NAME = re.compile(
    rf"""^(?:{PYTEST_NAME}|.*_tests\.py|conftest\.py|.*_test\.go|.*_spec\.rb|.*[._-](?:test|spec)
    \.[cm]?[jt]sx?|.*\.(?:test|spec)\..+|test[^/]*\.sh|.*Tests?\.(?:java|kt|cs|php|swift))$""",
    re.VERBOSE,
)
"""A test's file name (``test_calc.py``, ``calc.spec.ts``)."""
PYTEST_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                  "tox.ini", "setup.cfg")  # fmt: skip
"""pytest's discovery order (``_pytest.config.findpaths``): the first of these in its rootdir
or up the tree is its configuration. Each is a check file at any depth (where pytest could
find it), a sectioned one (``SECTIONED``) by its test part."""
TEST_CONFIGS = frozenset(
    {*PYTEST_CONFIGS, "noxfile.py", ".rspec", "phpunit.xml", "phpunit.xml.dist"}
) - {"pyproject.toml", "setup.cfg"}
"""Files that are test configuration through and through."""
_CONFIG_PREFIXES = ("jest.config.", "vitest.config.", "vitest.workspace.", ".mocharc",
                    "karma.conf.", "playwright.config.", "cypress.config.",
                    "ava.config.")  # fmt: skip
SECTIONED = frozenset({"pyproject.toml", "setup.cfg", "package.json"})
"""Files with a test part beside other settings: they count when that part changed."""
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
"""Python imports these at start-up from anywhere on its path: so does a check's Python."""
TOOL_CONFIGS = frozenset({".npmrc", ".yarnrc", ".yarnrc.yml", "bunfig.toml", ".pnpmfile.cjs"})
"""Settings of the tools that run tests (``.npmrc``'s ``script-shell`` runs every script)."""
_FIXED_NAMES = TEST_CONFIGS | SECTIONED | STARTUP_HOOKS | TOOL_CONFIGS
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
"""Package metadata on ``sys.path`` (the working directory is, for ``python -m pytest``):
its ``entry_points.txt`` loads pytest plugins."""
MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_INTERPRETERS = SHELLS | INTERPRETERS.keys() | {"tsx", "ts-node", "julia"}
_RUNNERS = frozenset({"pytest", "py.test", "jest", "mocha", "vitest", "tap", "ava", "rspec",
                      "phpunit", "bats", "unittest"})  # fmt: skip
"""Test runners whose path arguments are tests (``pytest check_calc.py``)."""
_RUN_VIA = {"uv": "run", "poetry": "run", "pipenv": "run", "hatch": "run", "pdm": "run",
            "npx": "", "pnpx": "", "bunx": ""}  # fmt: skip


@dataclass(slots=True)
class CheckFiles:
    """The check files of a set of verify commands: those they name, and every file that is
    a test, test configuration or a Python start-up hook by its path."""

    named: set[str] = field(default_factory=set)
    """Workspace-relative files (or folders) the commands run or hand to a test runner."""
    makefile: bool = False
    """A command runs ``make``: the Makefile is the check's own."""
    make_targets: set[str] = field(default_factory=set)
    """The targets ``make`` is asked for (``""``: the default one)."""
    package_scripts: set[str] = field(default_factory=set)
    """The ``package.json`` scripts a command runs (``npm test``: test, pretest, posttest)."""
    make_includes: set[str] = field(default_factory=set)
    """What the Makefiles include (``include``, ``-include``, ``sinclude``, ``MAKEFILES``):
    paths, or patterns where a variable or wildcard stands (``*.d``)."""
    ways: frozenset[str] = frozenset({""})
    """The folders on the way to a test (``trace_ways``): their ``__init__.py`` is imported
    before it (pytest imports a test module's packages)."""
    work: frozenset[str] = frozenset()
    """Test files the task itself asks to be written or extended (``written_tests``): the
    run's work, not the check's, unless a verify command runs them by name."""
    _folders: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, commands: Iterable[str]) -> CheckFiles:
        files = cls()
        for command in commands:
            try:
                script = parse(command)
            except (TooDeep, RecursionError):
                continue  # nothing named: the path rules still hold
            for cmd in _simple_commands(script):
                files._add(cmd)
        return files

    def _add(self, cmd: Command) -> None:
        given = [f"{n}={v.text}" for n, v in cmd.assignments]
        given += [w.text for w in cmd.words if not w.leading_dynamic]
        words = _unwrapped(cmd.words)
        if not words:
            return
        program = os.path.basename(words[0])
        name = _family(program)
        if "/" in words[0]:
            self.named.add(_relative(words[0]))
        args = words[1:]
        if name in MAKEFILES or program in ("make", "gmake"):
            self.makefile = True
            targets = [a for a in args if not a.startswith("-") and "=" not in a]
            self.make_targets.update(targets or [""])
            listed = [w[10:] for w in given if w.startswith("MAKEFILES=")]
            for value in [*listed, os.environ.get("MAKEFILES", "")]:
                self.make_includes.update(map(_relative, value.split()))
        if name in _PACKAGE_TOOLS:
            script = _package_script(name, args)
            if script:
                self.package_scripts.update((script, "pre" + script, "post" + script))
        if name in _INTERPRETERS:
            self._interpreter(name, args)
        elif name in _RUNNERS or (name == "go" and args[:1] == ["test"]):
            self.named.update(_relative(a) for a in args if not a.startswith("-"))
        elif name in ("source", "."):
            self.named.update(_relative(a) for a in args[:1])

    def _interpreter(self, name: str, args: list[str]) -> None:
        position = 0
        while position < len(args):
            arg = args[position]
            position += 1
            if name in SHELLS and arg.startswith("-") and "c" in arg[1:]:
                if position < len(args):  # bash -c '...': what it runs, parsed in turn
                    self.merge(CheckFiles.of([args[position]]))
                return
            if arg in ("-c", "-e", "--eval", "-p", "--print"):
                return  # inline code names no file
            if arg == "-m" and position < len(args):
                module = args[position]
                if module in _RUNNERS:
                    rest = args[position + 1 :]
                    self.named.update(_relative(a) for a in rest if not a.startswith("-"))
                else:  # python -m check_calc: the module is the check
                    self.named.add(module.replace(".", "/") + ".py")
                return
            if not arg.startswith("-"):
                self.named.add(_relative(arg))
                return

    def merge(self, other: CheckFiles) -> None:
        self.named |= other.named
        self.makefile |= other.makefile
        self.make_targets |= other.make_targets
        self.package_scripts |= other.package_scripts
        self.make_includes |= other.make_includes
        self._folders = None

    def run_by(self, kept: dict[str, bytes]) -> list[str]:
        """The commands the check runs through ``package.json`` scripts and Makefile targets
        (their files are the check's too), from their contents in ``kept`` (path → bytes)."""
        commands: list[str] = []
        if self.package_scripts and (data := kept.get("package.json")) is not None:
            scripts = package_scripts(data)
            commands += [str(scripts[n]) for n in sorted(self.package_scripts) if n in scripts]
        if self.make_targets:
            makefiles = [kept[n] for n in sorted(kept) if n in MAKEFILES or self.included(n)]
            text = b"\n".join(makefiles).decode("utf-8", "replace")
            commands += _recipes(text, self.make_targets)
        return commands

    def include(self, kept: dict[str, bytes]) -> bool:
        """Add what the Makefiles in ``kept`` include to ``make_includes``; whether that
        named anything new (their own includes are then to be read in turn)."""
        before = len(self.make_includes)
        for relpath, data in kept.items() if self.makefile else ():
            if relpath in MAKEFILES or self.included(relpath):
                self.make_includes |= _includes(data.decode("utf-8", "replace"))
        return len(self.make_includes) > before

    def included(self, relpath: str) -> bool:
        """Whether a Makefile includes ``relpath``."""
        patterns = self.make_includes
        return relpath in patterns or any(fnmatch.fnmatchcase(relpath, p) for p in patterns)

    def trace_ways(self, relpaths: Iterable[str]) -> None:
        """Set ``ways`` from the workspace's files: the folders from the root to each test."""
        ways = {""}
        for relpath in relpaths:
            if self._test(relpath, *relpath.rpartition(os.sep)[::2]):
                folder = os.path.dirname(relpath)
                while folder not in ways:
                    ways.add(folder)
                    folder = os.path.dirname(folder)
        self.ways = frozenset(ways)

    def holds(self, relpath: str) -> bool:
        """Whether ``relpath`` (as the change tracker names files) is a check file. Asked of
        every file when the run starts: the cheap tests go first."""
        folder, _, name = relpath.rpartition(os.sep)
        run_by_name = relpath in self.named or relpath.startswith(self.folders())
        if relpath in self.work and not run_by_name:  # the task's work, not the check's
            return False
        if (
            name in _FIXED_NAMES
            or name.endswith(".pth")
            or name.startswith(_CONFIG_PREFIXES)
            or (name == "__init__.py" and folder in self.ways)
            or (self.makefile and (name in MAKEFILES or self.included(relpath)))
        ):
            return True
        if folder:
            parts = folder.split(os.sep)
            if parts[-1].endswith(_METADATA_SUFFIXES):
                return True
            if parts[-1] == ".cargo" and name in ("config", "config.toml"):
                return True  # a target's runner runs the test binaries
        return self._test(relpath, folder, name)

    def _test(self, relpath: str, folder: str, name: str) -> bool:
        """Whether ``relpath`` is a test: named by a command, in a test folder, or so named."""
        if relpath in self.named or (self.named and relpath.startswith(self.folders())):
            return True
        if folder and not TEST_DIRS.isdisjoint(folder.split(os.sep)):
            return True
        lowered = name.lower()  # most names have neither: no pattern to match
        return ("test" in lowered or "spec" in lowered) and TEST_NAME.match(name) is not None

    def folders(self) -> tuple[str, ...]:
        """What lies under a named path is named too (``pytest checks/``)."""
        if self._folders is None:
            self._folders = tuple(name.rstrip(os.sep) + os.sep for name in self.named)
        return self._folders

    def inside(self, workspace: str | os.PathLike[str]) -> CheckFiles:
        """These check files with the absolute paths in ``workspace`` made relative to it."""
        root = os.path.realpath(workspace)
        named = {
            os.path.relpath(n, root) if os.path.isabs(n) and is_within(n, root) else n
            for n in self.named
        }
        return dataclasses.replace(self, named=named, _folders=None)

    def import_homes(self) -> set[str]:
        """The folders a check's Python imports from first: the workspace (``python -m``,
        pytest's rootdir) and the folders of the Python scripts it runs."""
        return {""} | {os.path.dirname(n) for n in self.named if n.endswith(".py")}


def check_part(relpath: str, data: bytes | None) -> Any:
    """What of a sectioned file (``SECTIONED``) the test runners read; the whole content for
    any other file. Content that does not parse stands for itself: a change to it counts."""
    name = os.path.basename(relpath)
    if data is None or name not in SECTIONED:
        return data
    text = data.decode("utf-8", "replace")
    try:
        if name == "pyproject.toml":
            return tomllib.loads(text).get("tool", {}).get("pytest")
        if name == "package.json":
            package = json.loads(text)
            keys = ("scripts", "jest", "mocha", "vitest", "ava", "c8", "nyc")
            return {key: package.get(key) for key in keys} if isinstance(package, dict) else text
        config = configparser.ConfigParser(interpolation=None)
        config.read_string(text)
        return {s: dict(config[s]) for s in config.sections() if "test" in s}
    except (ValueError, configparser.Error):
        return text


def package_scripts(data: str | bytes) -> dict[str, Any]:
    """The ``scripts`` of a ``package.json`` with content ``data``; empty when it does not parse
    or has none."""
    try:
        scripts = json.loads(data).get("scripts") or {}
    except (ValueError, AttributeError):
        return {}
    return scripts if isinstance(scripts, dict) else {}


def _package_script(tool: str, args: list[str]) -> str | None:
    """The ``package.json`` script ``npm test``, ``npm run lint``, ``yarn check`` runs."""
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return None
    if words[0] in ("test", "t", "tst"):
        return "test"
    if words[0] in ("run", "run-script", "rum", "urn"):
        return words[1] if len(words) > 1 else None
    if tool in ("yarn", "pnpm") and words[0] not in ("install", "add", "exec", "dlx"):
        return words[0]  # yarn lint: a script when one is so named
    return None


_INCLUDE = re.compile(r"^[ \t]*(?:-include|sinclude|include)[ \t]+([^#\n]*)", re.MULTILINE)
_SUBSTITUTION = re.compile(r"\$[({][^:)}]*:[^=)}]*=([^)}]*)[)}]")  # $(OBJS:.o=.d)
_VARIABLE = re.compile(r"\$(?:[({][^)}]*[)}]|.)")


def _includes(makefile: str) -> set[str]:
    """What ``makefile`` includes: paths, or patterns where a variable stands (``$(OBJS:.o=.d)``
    as ``*.d``). One that is nothing but a variable names nothing that can be told."""
    found = set()
    for line in _INCLUDE.findall(makefile):
        line = re.sub(r"\$[({]wildcard\s+", "", line)
        for word in line.split():
            pattern = _VARIABLE.sub("*", _SUBSTITUTION.sub(r"*\1", word)).rstrip(")}")
            if pattern.strip("*/"):
                found.add(_relative(pattern))
    return found


def _recipes(makefile: str, targets: set[str]) -> list[str]:
    """The recipe lines of ``targets`` (``""``: the first target) and of what they depend on."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    first, current = "", None
    for line in makefile.splitlines():
        if line.startswith("\t") and current is not None:
            rules[current][1].append(line.strip().lstrip("@-+").strip())
            continue
        current = None
        head, colon, rest = line.partition(":")
        if not colon or line.startswith((" ", "#", ".")) or "=" in head or rest.startswith("="):
            continue
        for target in head.split():
            rules.setdefault(target, ([], []))[0].extend(rest.split(";")[0].split())
            current = current or target
            first = first or target
    wanted = [first if t == "" else t for t in targets]
    seen: set[str] = set()
    commands: list[str] = []
    while wanted:
        target = wanted.pop()
        if target in seen or target not in rules:
            continue
        seen.add(target)
        needs, recipe = rules[target]
        wanted += needs
        commands += recipe
    return commands


_PACKAGE_TOOLS = frozenset({"npm", "yarn", "pnpm", "bun"})


def _simple_commands(script: Script) -> Iterator[Command]:
    for pipeline in script.pipelines:
        for cmd in pipeline.commands:
            yield cmd
            if cmd.body is not None:
                yield from _simple_commands(cmd.body)
            for sub in [*cmd.subs, *(s for w in cmd.words for s in w.subs)]:
                yield from _simple_commands(sub)


def _unwrapped(words: list[Word]) -> list[str]:
    """``words`` without the programs that only run the next one (``env X=1``, ``uv run``):
    the risk classifier's wrappers (``sudo``, ``setsid``…), whose findings are not wanted here,
    and the runners of a project's tools."""
    # deferred: the risk classifier is loaded when a check is read, not before the first request
    from localhand.safety.risk.classify import Analyzer
    from localhand.safety.risk.rules import unwrap  # deferred too, as part of it

    words = [w for w in words if not w.leading_dynamic]
    while words := unwrap(Analyzer(Path.cwd()), words):
        via = _RUN_VIA.get(os.path.basename(words[0].text))
        if via is None or (via and [w.text for w in words[1:2]] != [via]):
            break
        words = words[1 + bool(via) :]
        while words and words[0].text.startswith("-"):
            words = words[1:]
    return [w.text for w in words]


def _family(program: str) -> str:
    if program.startswith("python") and program[6:].replace(".", "").isdigit():
        return "python3"
    return program


def _relative(path: str) -> str:
    return os.path.normpath(path.removeprefix("./")) if path else path


__all__ = ["TEST_NAME", "CheckFiles", "check_part", "package_scripts"]
