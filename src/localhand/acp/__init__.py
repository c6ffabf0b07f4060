"""``localhand acp``: localhand as an Agent Client Protocol agent, for editors (Zed, JetBrains,
Neovim...). A door like the others: each ``session/prompt`` is one ``Session`` run, recorded in
the store; this package only translates (``agent``: the protocol's methods; ``editor``: the
run's thread talking to the editor; ``tools``: each tool call shown, reads through the editor's
buffers; ``presenter``: the run's events as ``session/update``s; ``servers``: the editor's MCP
servers as localhand's). Needs the ``acp`` extra (``agent-client-protocol``)."""
