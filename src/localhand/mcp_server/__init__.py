"""``localhand mcp``: a door into a run for other agents and editors, over MCP.

- ``server``: the tools it offers (``run_task``, ``plan``, ``list_runs``, ``show_run``), each
  run through the one door (``localhand.session``).
- ``jobs``: one run on a thread of its own, with progress and cancellation.
- ``http``: Streamable HTTP on loopback, behind a bearer token.

The other direction, tools from MCP servers offered to the model, is ``localhand.mcp``: that
sits below the session, which starts it; this sits above, as the other doors do.
"""
