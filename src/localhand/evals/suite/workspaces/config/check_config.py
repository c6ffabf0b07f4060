"""Checks config.json: {"name": "demo", "port": 8080, "debug": false} and nothing else."""

import json
import sys

try:
    with open("config.json", encoding="utf-8") as handle:
        data = json.load(handle)
except (OSError, ValueError) as exc:
    sys.exit(f"config.json: {exc}")
expected = {"name": "demo", "port": 8080, "debug": False}
if data != expected:
    sys.exit(f"config.json holds {data!r}; expected {expected!r}")
print("config.json is right")
