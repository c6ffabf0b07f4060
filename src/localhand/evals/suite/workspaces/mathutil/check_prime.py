"""Checks is_prime() in mathutil.py, and that test_mathutil.py tests it."""

import re
import subprocess
import sys

try:
    from mathutil import is_prime
except ImportError:
    sys.exit("mathutil.py has no is_prime()")

cases = {-7: False, 0: False, 1: False, 2: True, 3: True, 4: False, 91: False, 97: True}
wrong = {n: is_prime(n) for n, prime in cases.items() if is_prime(n) != prime}
if wrong:
    sys.exit(f"wrong: {wrong} (expected {cases})")
with open("test_mathutil.py", encoding="utf-8") as handle:
    if "is_prime" not in handle.read():
        sys.exit("test_mathutil.py does not test is_prime")
done = subprocess.run(
    [sys.executable, "-m", "unittest", "test_mathutil"], capture_output=True, text=True
)
ran = re.search(r"Ran (\d+) test", done.stderr)
if done.returncode != 0 or not ran or int(ran.group(1)) < 2:
    sys.exit(f"python3 -m unittest test_mathutil must pass with 2+ tests:\n{done.stderr}")
print("is_prime is right and tested")
