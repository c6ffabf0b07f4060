"""What stands between a model's commands and the user's machine, one room per thing guarded.

- ``box``: the boundary. Every command the model writes runs in an operating-system sandbox
  (bubblewrap on Linux): the workspace writable, the rest read-only, secrets and other
  processes out of sight, the network optional; its supervisor makes sure nothing a command
  starts outlives it.
- ``risk``: advice. The shell parser and the classifier decide what to ask a person before a
  command runs, never what the command can reach.
- ``approval``: who answers that question, and what a yes covers.
- ``trust``: the files that steer localhand, obeyed only as the user trusted them.
- ``secrets``: secrets kept out of commands, localhand's own process, tool output, the store
  and pages.
- ``undo``: checkpoints of the workspace before dangerous commands, and ``localhand undo``.
"""
