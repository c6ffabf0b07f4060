"""Rules for commands that use the network: downloads (remembered, so that running a
downloaded file later on the same line is caught), uploads, and shells served over sockets."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from localhand.safety.risk.shellsyntax import Word
from localhand.safety.risk.types import (
    DANGEROUS,
    DOWNLOADERS,
    MODERATE,
    NETWORK,
    Feed,
    Rule,
    options,
    registry,
)

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

_UPLOADS = ("-T", "--upload-file", "--post-file", "--body-file")
"""Options whose value is a file sent as it is (and ``-d @FILE``, ``-F name=@FILE``)."""
_SENDS = ("-d", "--data", "--data-binary", "--data-urlencode", "-F", "--form", *_UPLOADS)
"""Options whose value is sent: text, or a file (``_UPLOADS``, or named after ``@``)."""
_WITH_VALUE = (
    *_SENDS,
    "--data-raw",
    "-o",
    "--output",
    "--output-document",
    "-P",
    "-H",
    "-u",
    "-X",
    "-A",
    "-e",
    "-b",
    "-c",
    "-K",
    "-i",
)
"""The downloaders' options that take a value (wget's ``-O`` too: curl's takes none)."""
_SECRET_HINTS = (".ssh", ".aws", ".netrc", "id_rsa", "id_ed25519", ".gnupg", "credentials", ".env")
"""In the path of a file sent: it holds credentials."""

NET_RULES: dict[str, Rule] = {}
rule = registry(NET_RULES)


@rule(*DOWNLOADERS)
def _download(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    a.network = True
    with_value = _WITH_VALUE if name == "curl" else (*_WITH_VALUE, "-O")  # curl's -O takes none
    flags, values, operands = options(args, with_value)
    for key in _SENDS:
        sent = values.get(key)
        if sent is not None:
            path = sent.text.split("@", 1)[1] if "@" in sent.text else sent.text
            if (key in _UPLOADS or "@" in sent.text) and path:
                a.flag(MODERATE, f"uploads {path}")
                if any(hint in path for hint in _SECRET_HINTS):
                    a.secrets.append(path)
    url = next((w.text for w in operands if "://" in w.text or "." in w.text), "")
    remote_name = os.path.basename(url.split("?")[0].rstrip("/")) or "index.html"
    output = values.get("-o") or values.get("--output") or values.get("--output-document")
    if name == "wget" and "-O" in values:
        output = values["-O"]
    if output is not None and output.text != "-":
        a.write(output, "downloads to")
        a.downloads.add(os.path.normpath(output.text))
    elif ("-O" in flags and name == "curl") or (name == "wget" and output is None):
        directory = values.get("-P")
        a.downloads.add(
            os.path.normpath(os.path.join(directory.text if directory else ".", remote_name))
        )
        a.flag(MODERATE, f"downloads {remote_name}")
    a.flag(MODERATE, f"uses the network ({name})")


@rule(*NETWORK)
def _network(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    a.network = True
    texts = [w.text for w in args]
    if name in ("nc", "ncat", "netcat") and any(
        t in ("-e", "-c", "--exec", "--sh-exec", "--lua-exec") for t in texts
    ):
        a.flag(DANGEROUS, f"serves a shell over the network ({name} -e)")
    elif name == "socat" and any(
        t.lower().startswith(("exec:", "system:")) or ",exec:" in t.lower() for t in texts
    ):
        a.flag(DANGEROUS, "connects a program to the network (socat exec:)")
    elif name in ("scp", "rsync", "sftp", "rclone"):
        a.flag(MODERATE, f"copies files over the network ({name})")
    elif name == "ssh":
        a.flag(MODERATE, "runs commands on another machine (ssh)")
    else:
        a.flag(MODERATE, f"uses the network ({name})")
