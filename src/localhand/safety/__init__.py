"""What stands between a model's commands and the user's machine.

- ``sandbox``: the boundary. Every command the model writes runs in an operating-system
  sandbox (bubblewrap on Linux): the workspace writable, the rest read-only, secrets and other
  processes out of sight, the network optional.
- ``supervise`` / ``_supervisor`` / ``proc``: nothing a command starts outlives it.
- ``risk`` and the shell parser (``shellparse``, ``shellsyntax``, ``risk_*``): advice. They
  decide what to ask a person before it runs, never what the command can reach.
- ``approval``: who answers that question, and how.
- ``environment`` and ``scrub``: secrets kept out of commands, tool output, the store and pages.
"""
