"""Checks the rename of calc_total to compute_total."""

import sys

for name in ("billing.py", "report.py"):
    with open(name, encoding="utf-8") as handle:
        if "calc_total" in handle.read():
            sys.exit(f"{name} still names calc_total")
try:
    from billing import compute_total
    from report import render
except ImportError as exc:
    sys.exit(f"cannot import: {exc}")
if compute_total([(2, 1.5)]) != 3.0:
    sys.exit("compute_total([(2, 1.5)]) is not 3.0")
if render("ACME", [(2, 1.5), (1, 0.25)]) != "ACME: 3.25":
    sys.exit(f"render gives {render('ACME', [(2, 1.5), (1, 0.25)])!r}, not 'ACME: 3.25'")
print("the rename is complete")
