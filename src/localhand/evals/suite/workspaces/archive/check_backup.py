"""Checks backup.tar.gz: the files of data/, under data/, unchanged."""

import os
import sys
import tarfile

try:
    with tarfile.open("backup.tar.gz", "r:gz") as archive:
        files = {
            m.name.removeprefix("./"): archive.extractfile(m).read()
            for m in archive.getmembers()
            if m.isfile()
        }
except (OSError, tarfile.TarError) as exc:
    sys.exit(f"backup.tar.gz: {exc}")
for name in sorted(os.listdir("data")):
    if f"data/{name}" not in files:
        sys.exit(f"backup.tar.gz lacks data/{name}; it holds {sorted(files)}")
    with open(f"data/{name}", "rb") as handle:
        if files[f"data/{name}"] != handle.read():
            sys.exit(f"data/{name} differs in the archive")
print("backup.tar.gz is right")
