"""Checkpoints of the workspace before dangerous commands, and undo from them."""
