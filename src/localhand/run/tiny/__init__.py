"""The tiny-model policy the agent holds (see ``policy``): a short prompt, a few tools, and a
per-turn reply schema of the calls that can work, learnt from tool calls and their results."""

from localhand.run.tiny.policy import TINY_PROMPT, TinyPolicy, tiny_policy

__all__ = ["TINY_PROMPT", "TinyPolicy", "tiny_policy"]
