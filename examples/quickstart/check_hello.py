"""Exits 0 when hello.txt says hello world: the quick start's check, which needs no model."""

import sys
from pathlib import Path

path = Path(__file__).with_name("hello.txt")
if not path.is_file():
    sys.exit("hello.txt does not exist")
text = path.read_text(encoding="utf-8").strip()
if "hello world" not in text.lower():
    sys.exit(f"hello.txt says {text!r}, not hello world")
print("hello.txt says hello world")
