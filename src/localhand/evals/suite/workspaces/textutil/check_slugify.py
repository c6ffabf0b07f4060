"""Checks slugify() in textutil.py, and that test_textutil.py tests it."""

import re
import subprocess
import sys

try:
    from textutil import slugify
except ImportError:
    sys.exit("textutil.py has no slugify()")

cases = {
    "Hello, World!": "hello-world",
    "  Already-slugged  ": "already-slugged",
    "Release 2.0 -- final": "release-2-0-final",
    "ABC": "abc",
}
wrong = {text: slugify(text) for text, slug in cases.items() if slugify(text) != slug}
if wrong:
    sys.exit(f"wrong slugs: {wrong} (expected {cases})")
with open("test_textutil.py", encoding="utf-8") as handle:
    if "slugify" not in handle.read():
        sys.exit("test_textutil.py does not test slugify")
done = subprocess.run(
    [sys.executable, "-m", "unittest", "test_textutil"], capture_output=True, text=True
)
ran = re.search(r"Ran (\d+) test", done.stderr)
if done.returncode != 0 or not ran or int(ran.group(1)) < 2:
    sys.exit(f"python3 -m unittest test_textutil must pass with 2+ tests:\n{done.stderr}")
print("slugify is right and tested")
