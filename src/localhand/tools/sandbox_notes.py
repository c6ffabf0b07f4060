"""What the model is told when its command met the sandbox's walls.

A command that fails on a read-only file system, a full ``/tmp`` or a missing network gets one
line saying why, by design, so the model does not try the same thing another way.
"""

from __future__ import annotations

from localhand.safety.box.sandbox import Sandbox, available

_NO_NETWORK_SIGNS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "No address associated with hostname",
)


TMP_FULL = "[Sandbox: /tmp, /var/tmp, /dev/shm and $HOME"


def sandbox_note(output: str, sandbox: Sandbox, isolate_network: bool = False) -> str | None:
    """What to tell the model when its command failed on the sandbox's walls, so it does
    not try the same thing another way; None when it did not meet them."""
    if not sandbox.on or available() is not None:
        return None
    if "Read-only file system" in output:
        where = "inside the workspace" if sandbox.mode == "workspace-write" else "nowhere"
        return (
            f"[Sandbox: commands may write {where} (and in a private /tmp that is discarded); "
            "everything else is read-only, by design, so that write cannot succeed. Keep your "
            "work inside the workspace.]"
        )
    if "No space left on device" in output and sandbox.limits.tmp_size is not None:
        return (
            f"{TMP_FULL} hold at most "
            f"{sandbox.limits.tmp_size // 1024**2} MiB each here ([sandbox] tmp_size), and one "
            "is full; write less there, or write inside the workspace.]"
        )
    network_off = isolate_network or not sandbox.network
    if network_off and any(sign in output for sign in _NO_NETWORK_SIGNS):
        return "[Sandbox: commands have no network access in this run, by design.]"
    if not sandbox.host_network and any(sign in output for sign in _NO_NETWORK_SIGNS):
        return (
            "[Sandbox: commands reach the network only through localhand's HTTP proxy "
            "(HTTPS_PROXY and HTTP_PROXY are set; pip, npm, cargo, go, git and curl use "
            "them), and only the allowed hosts: connect through it, not directly.]"
        )
    return None
