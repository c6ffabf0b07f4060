"""``localhand trust``: approve the exact content of a file that steers localhand.

A ``localhand.toml`` in the project, an MCP config, a task, batch or plan file can be written
by the model's commands; localhand uses one only with content the user approved
(``localhand.safety.trust.store``). This command shows the file (or what changed since it was last
trusted), asks, and pins its sha256 and a copy in localhand's data directory.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.cli.args import Command, fail, inert

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from localhand.safety.trust.store import TrustStore


def trust(args: Namespace) -> int:
    """Trust the content of FILE (default: ./localhand.toml) after showing it or its changes."""
    from localhand.safety.trust.store import TrustStore  # not needed to parse the options

    store, forget = TrustStore(), args.forget
    if args.list_files:
        return _list(store)
    if forget is not None:
        if not store.forget(forget):
            fail(f"{forget} is not trusted; 'localhand trust --list' shows what is")
        _say(f"{forget} is no longer trusted")
        return 0
    return _trust(store, args.file or Path("localhand.toml"), args.yes)


def _trust(store: TrustStore, path: Path, yes: bool) -> int:
    from localhand.safety.trust.store import confirm, may_ask  # not needed to parse the options

    if not path.is_file():
        fail(f"{path} is not a file; name the file to trust: localhand trust FILE")
    seen = store.read(path)
    if seen.state == "trusted":
        _say(f"{path} is already trusted as it is (sha256 {seen.sha256[:12]})")
        return 0
    if not yes:
        if not may_ask():
            fail(
                f"there is no terminal to ask on: read {path}, then trust it with "
                f"'localhand trust {path} --yes'"
            )
        if not confirm(seen, "The file"):
            _say(f"{path} is not trusted: localhand will not use this content")
            return 1
    store.trust(seen)
    _say(f"trusted {path} as it is now (sha256 {seen.sha256[:12]})")
    return 0


def _list(store: TrustStore) -> int:
    import os  # loaded only when used
    import time  # loaded only when used

    entries = store.entries()
    if not entries:
        _say("no files are trusted yet: localhand trust FILE")
        return 0
    for entry in entries:
        state = "missing"
        if os.path.isfile(entry.path):
            state = "trusted" if store.read(Path(entry.path)).state == "trusted" else "changed"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.trusted_at))
        sys.stdout.write(inert(f"{state:8} {entry.sha256[:12]}  {when}  {entry.path}") + "\n")
    return 0


def _say(message: str) -> None:
    sys.stderr.write(inert(message) + "\n")


def trust_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "file",
        nargs="?",
        type=Path,
        metavar="FILE",
        help="The file to trust (default: localhand.toml in the current directory).",
    )
    parser.add_argument(
        "--yes", action="store_true", help="Trust it without asking (you have read it)."
    )
    parser.add_argument(
        "--list", action="store_true", dest="list_files", help="List the trusted files."
    )
    parser.add_argument("--forget", type=Path, metavar="FILE", help="Trust FILE no more.")


COMMANDS = {"trust": Command(trust, trust_arguments)}
