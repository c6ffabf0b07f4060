"""Checks greet.py."""

import sys

from greet import greet

for name in ("Ada", "Linus"):
    if greet(name) != f"Hello, {name}!":
        sys.exit(f"greet({name!r}) is {greet(name)!r}, not 'Hello, {name}!'")
print("greet.py is right")
