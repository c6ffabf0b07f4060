"""``localhand config``: the settings a run would use, merged, and where each came from.

The layers (``localhand.config.settings``): default, the user's ``config.toml``, the workspace file
(``./localhand.toml``, or the file ``LOCALHAND_CONFIG`` names), ``LOCALHAND_*`` variables,
flags. The flags this command takes are the common ones of ``localhand run``, so a person can
see what a flag would change. Keys a file inside the workspace may not give are shown at
their value after that rule, with the warning that says so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.cli.args import (
    APPROVE_POLICIES,
    Command,
    add_json_option,
    add_sandbox_option,
    inert,
)
from localhand.config.options import ModelOptions

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from localhand.config.settings import Settings

FLAG_NAMES = {"isolate_network": "--no-network"}
"""Settings whose flag is not ``--`` and the name with dashes."""


def config(args: Namespace) -> int:
    """Print the merged settings and where each came from (default, file, variable, flag)."""
    from localhand.config.files import user_config_path  # not needed to parse the options

    # not needed to parse the options
    from localhand.config.settings import NAMES, distrusting, load_settings

    notes: list[str] = []
    root = (args.workspace or Path.cwd()).expanduser().resolve()
    settings = ModelOptions.from_args(args).applied_to(load_settings(cwd=root, warn=notes.append))
    settings = settings.with_overrides(approve=args.approve, sandbox=args.sandbox)
    settings, distrusted = distrusting(settings, root)
    notes += distrusted
    user = user_config_path()
    document = {
        "files": {
            "user": str(user) if user else None,
            "user_read": settings.user_file is not None,
            "workspace": settings.config_file,
            "named": bool(os.environ.get("LOCALHAND_CONFIG")),
        },
        "settings": {
            name: {"value": shown(settings, name), "source": source_label(settings, name)}
            for name in NAMES
        },
        "notes": notes,
    }
    if args.json_output:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        _print(document, user)
    return 0


def config_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "-w",
        "--workspace",
        type=Path,
        metavar="DIR",
        help="Show the settings a run in DIR would use (default: this directory).",
    )
    ModelOptions.add_to(parser)
    parser.add_argument("--approve", choices=APPROVE_POLICIES, help="As localhand run takes it.")
    add_sandbox_option(parser)
    add_json_option(parser, "Print the settings as JSON: value and source of each.")


COMMANDS = {"config": Command(config, config_arguments)}


def source_label(settings: Settings, name: str) -> str:
    """``default``, ``user file PATH``, ``workspace file PATH``, ``LOCALHAND_CONFIG PATH``,
    ``env VAR`` or ``flag --NAME``."""
    source = settings.source_of(name)
    if source == "flag":
        return "flag " + FLAG_NAMES.get(name, "--" + name.replace("_", "-"))
    if name == "host" and source == "default" and os.environ.get("OLLAMA_HOST"):
        return "env OLLAMA_HOST"
    return source


def shown(settings: Settings, name: str) -> Any:
    """The value as JSON has it: tuples as lists, MCP servers by name, hooks as ``KIND:
    COMMAND``, the profiles as whether they are changed."""
    value = getattr(settings, name)
    if name == "host" and value is None and os.environ.get("OLLAMA_HOST"):
        return os.environ["OLLAMA_HOST"]
    if name == "mcp_servers":
        return [server.name for server in value]
    if name == "hooks":
        return [f"{hook.kind}: {hook.command}" for hook in value]
    if name == "profiles":  # too large for one line: whether the files change them
        return "changed" if value is not None else "built-in"
    if name == "sandbox_limits":
        return {key: limit for key, limit in value}
    if isinstance(value, tuple):
        return list(value)
    return value


def _print(document: dict[str, Any], user: Path | None) -> None:
    files = document["files"]
    read = "read" if files["user_read"] else "not there"
    lines = [f"user file:      {user} ({read})" if user else "user file:      (no HOME)"]
    kind = "LOCALHAND_CONFIG" if files["named"] else "workspace file"
    lines.append(f"{kind + ':':<15} {files['workspace'] or '(none used)'}")
    lines.append("")
    settings: dict[str, dict[str, Any]] = document["settings"]
    width = max(len(name) for name in settings)
    values = {name: _text(entry["value"]) for name, entry in settings.items()}
    value_width = min(max(len(v) for v in values.values()), 32)
    for name, entry in settings.items():
        lines.append(f"{name:<{width}}  {values[name]:<{value_width}}  {entry['source']}")
    for note in document["notes"]:
        lines.append(f"note: {note}")
    sys.stdout.write("".join(inert(line) + "\n" for line in lines))  # paths and values


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value) if value else "-"
    return str(value)
