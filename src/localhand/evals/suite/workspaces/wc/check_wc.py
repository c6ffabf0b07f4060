"""Checks wc.py with and without --lines."""

import subprocess
import sys


def run(*args):
    done = subprocess.run([sys.executable, "wc.py", *args], capture_output=True, text=True)
    return done.returncode, done.stdout.strip()


CASES = ((("--lines", "sample.txt"), "3"), (("sample.txt",), "3 6 28 sample.txt"))
for args, expected in CASES:
    code, out = run(*args)
    if code != 0 or out != expected:
        sys.exit(
            f"python3 wc.py {' '.join(args)} printed {out!r} (exit {code}); expected {expected!r}"
        )
print("wc.py is right")
