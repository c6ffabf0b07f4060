"""``localhand mcp``: serve localhand over MCP to other agents and editors. Wiring only."""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from pathlib import Path

from localhand.cli.args import (
    Command,
    add_door_options,
    fail,
    number,
    settings_of,
    stderr,
)

TOKEN_VARIABLE = "LOCALHAND_MCP_TOKEN"


def mcp(args: Namespace) -> int:
    """Serve localhand over MCP (stdio, or --http PORT) so other agents can delegate tasks.

    Tools: run_task, plan, list_runs, show_run. A workspace must lie under a root the client
    declares or one given with --root (default: the current directory, unless it is /)."""
    try:
        import mcp as _sdk  # noqa: F401  (the extra: say how to get it before anything else)
    except ImportError:
        fail("localhand mcp needs the MCP SDK: pip install 'localhand[mcp]'")
    from localhand.mcp_server.http import new_token, serve_http  # not needed to parse the options
    from localhand.mcp_server.server import build_server  # not needed to parse the options
    from localhand.safety.trust.store import never_ask  # not needed to parse the options

    never_ask()  # the client cannot answer a question about a changed file: it is refused
    http = args.http
    for directory in args.root or []:
        if not directory.expanduser().is_dir():
            fail(f"--root {directory} is not a directory")
    chosen = os.environ.get(TOKEN_VARIABLE)  # read before secrets go
    token = (chosen or new_token()) if http is not None else ""
    settings = settings_of(args, approve=args.approve, sandbox=args.sandbox)
    app = build_server(settings, roots=args.root or [], db=args.db)
    if http is None:
        app.run("stdio")  # until the client closes stdin
        return 0
    # A token the user chose is theirs to know; a new one is shown, or nobody could connect.
    shown = f"the token in {TOKEN_VARIABLE}" if chosen else token
    stderr().print(
        f"localhand mcp: serving http://127.0.0.1:{http}/mcp; clients must send the header "
        f"'Authorization: Bearer {shown}'"
        + ("" if chosen else f" (set {TOKEN_VARIABLE} to choose the token)")
    )
    serve_http(app, http, token)
    return 0


def mcp_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        type=number(int, 1, 65535),
        metavar="PORT",
        help="Serve Streamable HTTP on 127.0.0.1:PORT/mcp, behind a bearer token "
        f"({TOKEN_VARIABLE}, or a new one printed at start), instead of stdio.",
    )
    parser.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help="A directory workspaces may be under, besides the client's roots. Repeatable "
        "(default: the current directory, unless it is /).",
    )
    add_door_options(
        parser,
        "Which commands need approval; nobody can give it here, so they are refused "
        "(default: dangerous).",
    )


COMMANDS = {"mcp": Command(mcp, mcp_arguments)}
