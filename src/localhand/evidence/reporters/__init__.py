"""Reporters that run inside a check's own interpreter (``localhand.evidence.reports``).

Each file here stands alone and imports nothing of localhand: it runs in the check's Python or
node, which may be another interpreter or a virtualenv without localhand. This folder alone is
put on the check's ``PYTHONPATH``, so nothing else of localhand becomes importable there.
"""
