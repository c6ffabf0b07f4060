"""Tools from MCP servers for the model (``localhand mcp``, the server side, is ``mcp_server``).

- ``config``: the servers to start, from ``mcpServers`` JSON files (``--mcp-config``) and
  ``[mcp.servers.NAME]`` in ``localhand.toml``. Plain data: it imports nothing of the SDK.
- ``naming``, ``results``: what the model sees of an MCP tool (its name, a flat schema) and
  of its result (text, capped).
- ``client``: the servers of one run, on an event loop in a thread of their own.
- ``tools``: those servers' tools as localhand ``Tool``s, behind the approval policy.

Nothing here is imported at start-up, and the ``mcp`` SDK only when a server is configured
(``tests/mcp_client/test_mcp_config.py``): importing it costs about half a second.
"""
