"""``localhand acp``: localhand as an editor's agent over the Agent Client Protocol. Wiring only
(the agent is ``localhand.acp``)."""

from __future__ import annotations

import asyncio
import os
import sys
from argparse import ArgumentParser, Namespace
from dataclasses import replace
from typing import Any

from localhand.cli.args import Command, add_door_options, fail, settings_of


def acp(args: Namespace) -> int:
    """Be an editor's agent over the Agent Client Protocol (stdio), for Zed, JetBrains and others.

    Each prompt is a localhand run in the session's directory, recorded like any other (see
    `localhand runs`); what needs approval is asked in the editor. stdout carries only the
    protocol; messages go to stderr."""
    try:
        import acp as _sdk  # noqa: F401  (the extra: say how to get it before anything else)
    except ImportError:
        fail("localhand acp needs the ACP SDK: pip install 'localhand[acp]'")
    from localhand.acp.agent import LocalhandAgent  # not needed to parse the options
    from localhand.safety.trust.store import never_ask  # not needed to parse the options

    never_ask()  # stdin is the protocol: a question about a changed file is refused, not asked
    settings = settings_of(args, approve=args.approve, sandbox=args.sandbox)
    # Replies read as streams: the editor's Stop then stops a reply as it comes, instead
    # of waiting for the whole of it (and a reply that loops is cut short, as it is then).
    settings = replace(settings, watch_replies=True)
    protocol = _protocol_stdout()
    try:
        asyncio.run(_serve(LocalhandAgent(settings, db=args.db), protocol))
    except KeyboardInterrupt:
        return 130
    return 0


def _protocol_stdout() -> Any:
    """The real stdout, for the protocol alone; file descriptor 1 and ``sys.stdout`` become
    stderr, so nothing else printed (a library, a native backend) can corrupt the stream."""
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


async def _serve(agent: Any, protocol: Any) -> None:
    from acp import run_agent, stdio_streams  # the acp extra

    real, sys.stdout = sys.stdout, protocol  # stdio_streams writes to sys.stdout's pipe
    try:
        reader, writer = await stdio_streams(limit=50 * 1024 * 1024)
    finally:
        sys.stdout = real
    await run_agent(agent, writer, reader)


def acp_arguments(parser: ArgumentParser) -> None:
    add_door_options(
        parser, "Which commands need approval, asked in the editor (default: dangerous)."
    )


COMMANDS = {"acp": Command(acp, acp_arguments)}
