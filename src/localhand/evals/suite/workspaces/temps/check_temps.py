"""Checks f_to_c() and cli.py --reverse."""

import subprocess
import sys

try:
    from convert import f_to_c
except ImportError:
    sys.exit("convert.py has no f_to_c()")
if f_to_c(212) != 100.0 or f_to_c(32) != 0.0:
    sys.exit(f"f_to_c(212) is {f_to_c(212)!r} and f_to_c(32) is {f_to_c(32)!r}")
for args, expected in ((["--reverse", "212"], "100.0"), (["100"], "212.0")):
    done = subprocess.run([sys.executable, "cli.py", *args], capture_output=True, text=True)
    if done.returncode != 0 or done.stdout.strip() != expected:
        sys.exit(
            f"python3 cli.py {' '.join(args)} printed {done.stdout.strip()!r} "
            f"(exit {done.returncode}); expected {expected}"
        )
print("the conversions are right")
