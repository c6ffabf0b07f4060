"""``localhand doctor``: each model server localhand would use, what it runs and how, and the
exact flag that would serve localhand better (``localhand.models.checkup``).

Exit code 0 when nothing needs changing, 1 when something does, 2 when no server answered
(or for bad usage).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.cli.args import Command, inert, number, settings_of
from localhand.cli.models import asking_servers
from localhand.config.options import POOL_HOSTS, ModelOptions

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from localhand.models.checkup import Checkup


def doctor(args: Namespace) -> int:
    """Check each model server localhand would use, and name the flag that fixes each finding."""
    from localhand.models.catalog import gather  # not needed to parse the options
    from localhand.models.checkup import Needs, examine  # not needed to parse the options
    from localhand.prompt.context import expected_tokens  # not needed to parse the options

    settings = settings_of(args, forget=False)  # nothing here runs a command
    first = _first_prompt()
    needs = Needs(
        tokens=expected_tokens(first, None, None) + settings.max_reply_tokens,  # and a reply
        first_prompt=first,
        model=settings.model,
        model_given=args.model is not None,
        concurrency=args.concurrency,
        num_ctx_max=settings.num_ctx_max,
        probe=not args.no_probe,
        named=bool(args.hosts) or args.backend not in (None, "auto"),
    )
    places = [
        place
        for host in args.hosts or [settings.host]
        for place in gather(settings.backend, host, settings, timeout=args.timeout)
        if place.backend != "embedded"  # a file, not a server: nothing to set
    ]
    checkups = [examine(place, needs, args.timeout) for place in places]
    if not any(c.reached for c in checkups):
        said = "; ".join(f.what for c in checkups for f in c.findings) or "none to ask"
        sys.stderr.write(f"localhand doctor: no model server answered: {said}\n")
    if args.json_out:
        servers = [c.as_json(args.verbose) for c in checkups]
        sys.stdout.write(json.dumps({"servers": servers}, indent=2) + "\n")
    elif any(c.reached for c in checkups):
        _print(checkups, args.verbose)
    if not any(c.reached for c in checkups):
        return 2
    counted = [f for c in checkups for f in c.findings if f.severity not in ("note", "suggestion")]
    return 1 if counted else 0


def _first_prompt() -> int:
    """The tokens of the first request localhand would send from here (prompt, tools)."""
    from localhand.models.tokens import estimate_prompt_tokens  # not needed to parse the options
    from localhand.prompt.instructions import with_instructions  # not needed to parse the options
    from localhand.prompt.system import build_messages, system_prompt  # not needed to parse
    from localhand.tools import default_tools  # not needed to parse the options

    workspace = Path.cwd()
    messages = build_messages("", workspace, system_prompt(None))
    messages = with_instructions(messages, workspace, lambda _: None)
    with default_tools(workspace) as tools:
        return estimate_prompt_tokens(messages, tools.definitions())


def _print(checkups: list[Checkup], verbose: bool) -> None:
    out: list[str] = []
    for checkup in checkups:
        model = f" ({checkup.model})" if checkup.model else ""
        out.append(f"{checkup.backend} at {checkup.url}{model}:")
        for finding in checkup.findings or []:
            out.append(f"  {finding.severity}: {finding.what}")
            if finding.fix:
                out.append(f"    fix: {finding.fix}")
            if verbose and finding.basis:
                out.append(f"    read: {finding.basis}")
        if not checkup.findings:
            out.append("  nothing to change")
    sys.stdout.write("".join(inert(line) + "\n" for line in out))


def doctor_arguments(parser: ArgumentParser) -> None:
    asking_servers(parser)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="Say what each finding rests on."
    )
    ModelOptions.add_to(
        parser,
        ("model", "backend", "host"),
        host={**POOL_HOSTS, "help": "A server to check; repeatable (default: as `models`)."},
        backend={"help": "Check only this backend's servers (default: all of them)."},
    )
    parser.add_argument(
        "--concurrency",
        type=number(int, 1),
        metavar="N",
        help="The batch concurrency to check the servers' parallel slots against.",
    )
    parser.add_argument(
        "--no-probe",
        action="store_true",
        help="Do not probe llama-server's prompt cache (a few thousand tokens of prefill).",
    )


COMMANDS = {"doctor": Command(doctor, doctor_arguments)}
