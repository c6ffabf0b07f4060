"""``localhand models``: what every reachable backend serves (``localhand.models.catalog``).

Exit code 0 when some backend has a model, 1 when none has (the text says how to get one),
2 for bad usage or settings.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from localhand.cli.args import Command, inert, number, settings_of
from localhand.config.options import ModelOptions

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from localhand.models.catalog import Listed, Place


def models(args: Namespace) -> int:
    """List the models every reachable backend serves (size, context, tools, profile)."""
    from localhand.models.catalog import gather  # not needed to parse the options
    from localhand.profiles import ProfileSettings  # not needed to parse the options

    settings = settings_of(args, forget=False)  # nothing here runs a command
    # The built-in profiles, unchanged, when no file changes them.
    profiles = settings.profiles if settings.profiles is not None else ProfileSettings()
    places = gather(
        settings.backend,
        settings.host,
        settings,
        timeout=args.timeout,
        profile_of=lambda name: profiles.resolve(name).name,
    )
    found = any(p.models for p in places)
    if found:
        from localhand.cli.completion import remember_models  # not needed to parse the options

        remember_models(sorted({m.name for p in places for m in p.models}))
    if args.json_out:
        document = {
            "backend": settings.backend,
            "model": settings.model,  # what `localhand run` uses unless --model says otherwise
            "places": [p.as_json() for p in places],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        _print(places)
        _say_default(settings.model, places)
    return 0 if found else 1


def _say_default(model: str, places: list[Place]) -> None:
    """Which model `localhand run` takes, and whether a server listed here has it."""
    from localhand.models._ollama_wire import canonical  # not needed to parse the options

    wanted = canonical(model)
    has = [p for p in places if any(canonical(m.name) == wanted for m in p.models)]
    where = f"{has[0].kind} has it" if has else "no server listed here has it"
    line = f"localhand run uses {model} unless --model says otherwise ({where})."
    sys.stdout.write(inert(line) + "\n")


def _print(places: list[Place]) -> None:
    out: list[str] = []
    for place in places:
        head = f"{place.kind} at {place.where}"
        if place.error is not None and not place.models:
            out.append(f"{head}: not available ({place.error})")
            continue
        out.append(f"{head}:" + (f" ({place.error})" if place.error else ""))
        if not place.models:
            out.append("  no models")
        rows = [_row(m) for m in place.models]
        widths = [max(len(r[i]) for r in rows) for i in range(5)] if rows else []
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            out.append("  " + "  ".join(cells).rstrip())
    if not any(p.models for p in places):
        out.append(
            "No models found. Pull one with `ollama pull qwen3:8b` (Ollama), start "
            "llama-server/vLLM/LM Studio, or `pip install 'localhand[embedded]'` for a tiny "
            "demo model."
        )
    sys.stdout.write("".join(inert(line) + "\n" for line in out))


def _row(model: Listed) -> list[str]:
    tools = {True: "tools", False: "no tools", None: "tools ?"}[model.tools]
    context = f"{model.context:,} ctx" if model.context else "ctx ?"
    note = f"  {model.detail}" if model.detail else ""
    return [model.name, _size(model.size), context, tools, f"profile {model.profile}{note}"]


def _size(size: int | None) -> str:
    if size is None:
        return "size ?"
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def models_arguments(parser: ArgumentParser) -> None:
    ModelOptions.add_to(
        parser,
        ("host", "backend"),
        host={
            "help": "Ask this server (as Ollama, else as OpenAI-compatible) instead of the "
            "defaults."
        },
        backend={"help": "Ask only this backend (default: all of them)."},
    )
    asking_servers(parser)


def asking_servers(parser: ArgumentParser) -> None:
    """``--json`` and ``--timeout``, of every command that asks the servers (models, doctor)."""
    parser.add_argument(
        "--json", action="store_true", dest="json_out", help="Print one JSON document."
    )
    parser.add_argument(
        "--timeout",
        type=number(float, 0.1, 60),
        default=2.0,
        metavar="SECONDS",
        help="How long each server may take to answer (default: 2).",
    )


COMMANDS = {"models": Command(models, models_arguments)}
