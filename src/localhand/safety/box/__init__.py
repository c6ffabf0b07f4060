"""The box every model-written command runs in: bubblewrap, its supervisor, its mounts, limits
and network.
"""
