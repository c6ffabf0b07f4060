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

NET_RULES: dict[str, Rule] = {}
rule = registry(NET_RULES)


@rule(*DOWNLOADERS)
def _download(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    a.network = True
    with_value = (
        "-o",
        "--output",
        "-O",
        "--output-document",
        "-P",
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "-F",
        "--form",
        "-T",
        "--upload-file",
        "-H",
        "-u",
        "-X",
        "-A",
        "-e",
        "-b",
        "-c",
        "-K",
        "--post-file",
        "--body-file",
        "-i",
    )
    flags, values, operands = options(
        args, with_value if name != "curl" else tuple(v for v in with_value if v != "-O")
    )
    for key in (
        "-d",
        "--data",
        "--data-binary",
        "--data-urlencode",
        "-F",
        "--form",
        "-T",
        "--upload-file",
        "--post-file",
        "--body-file",
    ):
        sent = values.get(key)
        if sent is not None:
            path = sent.text.split("@", 1)[1] if "@" in sent.text else sent.text
            if is_sent_file(key, sent.text) and path:
                a.flag(MODERATE, f"uploads {path}")
                if any(
                    f in path
                    for f in (
                        ".ssh",
                        ".aws",
                        ".netrc",
                        "id_rsa",
                        "id_ed25519",
                        ".gnupg",
                        "credentials",
                        ".env",
                    )
                ):
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


def is_sent_file(option: str, value: str) -> bool:
    return option in ("-T", "--upload-file", "--post-file", "--body-file") or "@" in value


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
