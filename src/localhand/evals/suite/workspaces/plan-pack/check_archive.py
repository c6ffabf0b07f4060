"""Checks build/notes.tar.gz: it holds notes/a.txt and notes/b.txt."""

import sys
import tarfile

try:
    with tarfile.open("build/notes.tar.gz", "r:gz") as archive:
        names = {name.removeprefix("./") for name in archive.getnames()}
except (OSError, tarfile.TarError) as exc:
    sys.exit(f"build/notes.tar.gz: {exc}")
missing = {"notes/a.txt", "notes/b.txt"} - names
if missing:
    sys.exit(f"build/notes.tar.gz lacks {sorted(missing)}")
print("the archive is right")
