"""Scripted tasks for the benchmarks: the 30-step task and the robustness trajectories.

A trajectory is plain JSON-able data, so that the fake server process, the benchmark scripts
and the peers' harnesses (in their own virtual environments) all read the same thing:

    {"id", "task", "files": {path: text}, "steps": [...], "checks": [...]}

Each step is a tool call ``{"tool", "args", "expect"}`` or, last, ``{"final": text}``.
``expect`` says how to tell that the step really ran: ``{"marker": s}`` (``s`` appears in a
tool result sent back after the call) or ``{"file": path, "contains": s}`` (the workspace
shows the change). ``checks`` grade the workspace at the end: ``{"file", "contains"}`` or
``{"command"}`` (exits 0 in the workspace), what a user would give localhand as verification
(``localhand.evidence.verify.FileContains``, ``CommandCheck``; ``--verify`` on the command line).
A trajectory run to its end passes all of them.

A step is rendered into a *dialect*, the tool vocabulary of one agent:

- ``tools``: localhand's default tools by name (localhand; the peers that get the same tools);
- ``smolagents``: the same, and the final answer as smolagents' ``final_answer`` tool call;
- ``bash``: one ``bash`` tool (mini-swe-agent), each step written as the shell command a
  model would use, and the final answer as mini-swe-agent's submit command.
"""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path
from typing import Any

Step = dict[str, Any]
Trajectory = dict[str, Any]

DIALECTS = ("tools", "smolagents", "bash")
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def call(tool: str, expect: dict[str, str], **args: Any) -> Step:
    return {"tool": tool, "args": args, "expect": expect}


def marker(text: str) -> dict[str, str]:
    return {"marker": text}


def changed(path: str, contains: str) -> dict[str, str]:
    return {"file": path, "contains": contains}


# -- the 30-step task ---------------------------------------------------------------------------

_CORE = '''\
"""Stock items and their values."""

from __future__ import annotations

from dataclasses import dataclass

from inv.units import to_grams


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    quantity: int
    unit_price: float
    weight_kg: float = 0.0

    @property
    def value(self) -> float:
        return self.quantity * self.unit_price

    @property
    def weight_g(self) -> float:
        return to_grams(self.weight_kg) * self.quantity


def parse_item(row: dict[str, str]) -> Item:
    """Build an Item from one CSV row."""
    return Item(
        sku=row["sku"].strip(),
        name=row["name"].strip(),
        quantity=int(row["quantity"]),
        unit_price=float(row["unit_price"]),
        weight_kg=float(row.get("weight_kg") or 0),
    )


def low_stock(items: list[Item], threshold: int = 5) -> list[Item]:
    """Items with fewer than ``threshold`` units left."""
    return [item for item in items if item.quantity < threshold]


def by_sku(items: list[Item]) -> dict[str, Item]:
    return {item.sku: item for item in items}
'''

_UNITS = '''\
"""Unit conversions."""


def to_grams(kg: float) -> float:
    return kg * 100


def to_kg(grams: float) -> float:
    return grams / 1000
'''

_REPORT = '''\
"""A plain-text stock report."""

from __future__ import annotations

import sys

from inv.core import Item, low_stock
from inv.io import read_items


def render(items: list[Item]) -> str:
    lines = []
    for item in items:
        lines.append(f"{item.sku:<8} {item.name:<20} {item.quantity:>5} {item.value:>10.2f}")
    short = low_stock(items)
    if short:
        lines.append("")
        lines.append("Low stock: " + ", ".join(item.sku for item in short))
    return "\\n".join(lines)


def main(argv: list[str]) -> int:
    items = read_items(argv[0] if argv else "data/stock.csv")
    print(render(items))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

_IO = '''\
"""Reading stock files."""

from __future__ import annotations

import csv
from pathlib import Path

from inv.core import Item, parse_item


def read_items(path: str | Path) -> list[Item]:
    # TODO: skip blank rows instead of failing on them
    with open(path, newline="", encoding="utf-8") as handle:
        return [parse_item(row) for row in csv.DictReader(handle)]


def write_items(path: str | Path, items: list[Item]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sku", "name", "quantity", "unit_price", "weight_kg"])
        for item in items:
            writer.writerow([item.sku, item.name, item.quantity, item.unit_price, item.weight_kg])
'''

_TEST_CORE = """\
import unittest

from inv.core import Item, low_stock, total_value
from inv.units import to_grams, to_kg


class UnitsTest(unittest.TestCase):
    def test_round_trip(self):
        self.assertEqual(to_kg(to_grams(2.5)), 2.5)

    def test_grams(self):
        self.assertEqual(to_grams(1.2), 1200)


class CoreTest(unittest.TestCase):
    def setUp(self):
        self.items = [Item("A1", "bolt", 10, 0.5), Item("B2", "nut", 3, 0.25)]

    def test_value(self):
        self.assertEqual(self.items[0].value, 5.0)

    def test_low_stock(self):
        self.assertEqual([i.sku for i in low_stock(self.items)], ["B2"])

    def test_total_value(self):
        self.assertEqual(total_value(self.items), 5.75)


if __name__ == "__main__":
    unittest.main()
"""

_TEST_REPORT = """\
import unittest

from inv.core import Item
from inv.report import render


class ReportTest(unittest.TestCase):
    def test_header_and_total(self):
        text = render([Item("A1", "bolt", 10, 0.5)])
        self.assertTrue(text.startswith("SKU"))
        self.assertIn("Total value: 5.00", text)


if __name__ == "__main__":
    unittest.main()
"""

_STOCK = "sku,name,quantity,unit_price,weight_kg\n" + "".join(
    f"S{n:03d},part {n},{(n * 7) % 23},{(n * 13) % 50 + 0.5},{(n % 5) / 10}\n" for n in range(1, 19)
)

_README = """\
# inv

A tiny stock-keeping library: items, unit conversions, CSV input and output, and a report.

    python -m inv.report data/stock.csv

Run the tests with `python -m unittest -q`.

## Layout

- `inv/core.py`: the Item type and helpers.
- `inv/units.py`: conversions.
- `inv/io.py`: reading and writing stock files.
- `inv/report.py`: the plain-text report.
"""

_PYPROJECT = """\
[project]
name = "inv"
version = "0.3.0"
description = "A tiny stock-keeping library"
requires-python = ">=3.10"

[tool.setuptools]
packages = ["inv"]
"""

_TOTAL_VALUE = '''

def total_value(items: list[Item]) -> float:
    """The value of all items together."""
    return round(sum(item.value for item in items), 2)
'''

_HEADER_OLD = "    lines = []\n    for item in items:"
_HEADER_NEW = (
    "    lines = [f\"{'SKU':<8} {'NAME':<20} {'QTY':>5} {'VALUE':>10}\"]\n    for item in items:"
)


def thirty_step_task(filler_files: int = 12) -> Trajectory:
    """A realistic 30-iteration task: 29 tool calls over a small package, then a summary."""
    files = {
        "README.md": _README,
        "pyproject.toml": _PYPROJECT,
        "inv/__init__.py": '"""inv: stock keeping."""\n',
        "inv/core.py": _CORE,
        "inv/units.py": _UNITS,
        "inv/report.py": _REPORT,
        "inv/io.py": _IO,
        "tests/__init__.py": "",
        "tests/test_core.py": _TEST_CORE,
        "tests/test_report.py": _TEST_REPORT,
        "data/stock.csv": _STOCK,
        "docs/notes.md": "# Notes\n\nThe report should show a header and a total.\n",
    }
    for n in range(filler_files):  # a workspace is more than the files a task touches
        files[f"inv/extra/mod_{n:02d}.py"] = f'"""Helper {n}."""\n\n\ndef helper_{n}(x):\n' + (
            f"    return x + {n}\n"
        )
    unit_test = "python -m unittest -q tests.test_core 2>&1 | tail -n 3"
    report_test = "python -m unittest -q tests.test_report 2>&1 | tail -n 3"
    short_line = '        lines.append("Low stock: " + ", ".join(item.sku for item in short))\n'
    steps = [
        call("list_directory", marker("pyproject.toml"), path="."),
        call("read_file", marker("tiny stock-keeping"), path="README.md"),
        call("list_directory", marker("units.py"), path="inv"),
        call("read_file", marker("def low_stock"), path="inv/core.py"),
        call("read_file", marker("test_total_value"), path="tests/test_core.py"),
        call("run_command", marker("FAILED"), command=unit_test),
        call("search_files", marker("units.py"), pattern=r"def to_grams", path="inv"),
        call("read_file", marker("kg * 100"), path="inv/units.py"),
        call(
            "edit_file",
            changed("inv/units.py", "kg * 1000"),
            path="inv/units.py",
            old_text="return kg * 100",
            new_text="return kg * 1000",
        ),
        call("run_command", marker("FAILED"), command=unit_test, timeout_ms=30000),
        call("read_file", marker("def parse_item"), path="inv/core.py", start_line=20, end_line=45),
        call(
            "edit_file",
            changed("inv/core.py", "def total_value"),
            path="inv/core.py",
            old_text="    return {item.sku: item for item in items}\n",
            new_text="    return {item.sku: item for item in items}\n" + _TOTAL_VALUE,
        ),
        call("run_command", marker("OK"), command=unit_test, timeout_ms=30000),
        call("read_file", marker("def render"), path="inv/report.py"),
        call(
            "edit_file",
            changed("inv/report.py", "low_stock, total_value"),
            path="inv/report.py",
            old_text="from inv.core import Item, low_stock",
            new_text="from inv.core import Item, low_stock, total_value",
        ),
        call(
            "edit_file",
            changed("inv/report.py", "Total value"),
            path="inv/report.py",
            old_text=short_line,
            new_text=short_line + '    lines.append(f"Total value: {total_value(items):.2f}")\n',
        ),
        call("read_file", marker("test_header_and_total"), path="tests/test_report.py"),
        call("run_command", marker("FAILED"), command=report_test),
        call(
            "edit_file",
            changed("inv/report.py", "'SKU'"),
            path="inv/report.py",
            old_text=_HEADER_OLD,
            new_text=_HEADER_NEW,
        ),
        call("run_command", marker("OK"), command=report_test),
        call("search_files", marker("TODO"), pattern="TODO", path="inv", max_results=10),
        call("read_file", marker("def read_items"), path="inv/io.py", start_line=1, end_line=16),
        call(
            "edit_file",
            changed("inv/io.py", "if any(row.values())"),
            path="inv/io.py",
            old_text="        return [parse_item(row) for row in csv.DictReader(handle)]",
            new_text="        rows = csv.DictReader(handle)\n"
            "        return [parse_item(row) for row in rows if any(row.values())]",
        ),
        call("read_file", marker("S001"), path="data/stock.csv", start_line=1, end_line=8),
        call("run_command", marker("Total value"), command="python -m inv.report data/stock.csv"),
        call(
            "write_file",
            changed("CHANGELOG.md", "total_value"),
            path="CHANGELOG.md",
            content="# Changelog\n\n## 0.4.0\n\n- Fix to_grams (it multiplied by 100).\n"
            "- Add total_value() and show it, with a header, in the report.\n"
            "- read_items skips blank rows.\n",
        ),
        call("read_file", marker('version = "0.3.0"'), path="pyproject.toml"),
        call(
            "edit_file",
            changed("pyproject.toml", '"0.4.0"'),
            path="pyproject.toml",
            old_text='version = "0.3.0"',
            new_text='version = "0.4.0"',
        ),
        call("run_command", marker("OK"), command="python -m unittest -q 2>&1 | tail -n 3"),
        {
            "final": "Fixed to_grams (x1000), added total_value() with a report header and "
            "total, made read_items skip blank rows, bumped the version to 0.4.0 and noted it "
            "in CHANGELOG.md. All tests pass."
        },
    ]
    checks = [
        {"file": "inv/units.py", "contains": "kg * 1000"},
        {"file": "inv/core.py", "contains": "def total_value"},
        {"file": "inv/report.py", "contains": "Total value"},
        {"file": "CHANGELOG.md", "contains": "0.4.0"},
        {"command": "python -m unittest -q"},
    ]
    task = (
        "Fix the unit conversion bug in inv/units.py, add total_value() to inv/core.py and show "
        "a header and the total in the report, make read_items skip blank rows, bump the "
        "version to 0.4.0 with a CHANGELOG entry, and make all tests pass."
    )
    return {"id": "thirty", "task": task, "files": files, "steps": steps, "checks": checks}


# -- robustness trajectories ------------------------------------------------------------------

_WORDS = [
    "alpha",
    "bravo",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "gamma",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nimbus",
    "onyx",
    "prairie",
    "quartz",
    "raven",
    "sierra",
    "tundra",
]


def _module(name: str, body: str) -> str:
    return f'"""The {name} module."""\n\n\n{body}'


def _fix_bug(rng: random.Random, n: int) -> Trajectory:
    word = rng.choice(_WORDS)
    factor = rng.randint(3, 9)
    wrong, right = f"return value * {factor - 1}", f"return value * {factor}"
    mod = f"{word}_math.py"
    code = _module(
        word, f"def scale_{word}(value):\n    {wrong}\n\n\ndef name():\n    return {word!r}\n"
    )
    test = (
        f"import unittest\n\nfrom {word}_math import scale_{word}\n\n\n"
        f"class T(unittest.TestCase):\n    def test_scale(self):\n"
        f"        self.assertEqual(scale_{word}(2), {2 * factor})\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    test_cmd = f"python -m unittest -q test_{word} 2>&1 | tail -n 3"
    steps = [
        call("list_directory", marker(f"test_{word}.py"), path="."),
        call("read_file", marker(f"def scale_{word}"), path=mod),
        call("run_command", marker("FAILED"), command=test_cmd, timeout_ms=20000),
        call("edit_file", changed(mod, right), path=mod, old_text=wrong, new_text=right),
        call("run_command", marker("OK"), command=test_cmd),
        {"final": f"Fixed scale_{word}: it multiplied by {factor - 1} instead of {factor}."},
    ]
    return {
        "id": f"fix-{n:02d}",
        "task": f"The test in test_{word}.py fails. Fix {mod} so it passes.",
        "files": {mod: code, f"test_{word}.py": test, "README.md": f"# {word}\n"},
        "steps": steps,
        "checks": [
            {"file": mod, "contains": right},
            {"command": f"python -m unittest -q test_{word}"},
        ],
    }


def _add_function(rng: random.Random, n: int) -> Trajectory:
    word = rng.choice(_WORDS)
    k = rng.randint(2, 7)
    mod = f"{word}_util.py"
    lines = [f"def helper_{i}(x):\n    return x - {i}\n" for i in range(k)]
    code = _module(word, "\n\n".join(lines))
    spec = "\n".join(f"# requirement {i}: keep helper_{i}" for i in range(12))
    spec += f"\n# requirement 12: add double_{word}(x) returning 2 * x\n"
    new = f"\n\ndef double_{word}(x):\n    return 2 * x\n"
    steps = [
        call("read_file", marker(f"helper_{k - 1}"), path=mod),
        call("read_file", marker(f"double_{word}"), path="SPEC.txt", start_line=10, end_line=13),
        call(
            "edit_file",
            changed(mod, f"def double_{word}"),
            path=mod,
            old_text=f"    return x - {k - 1}\n",
            new_text=f"    return x - {k - 1}\n{new}",
        ),
        call(
            "run_command",
            marker("84"),
            command=f"python -c 'import {word}_util as m; print(m.double_{word}(42))'",
        ),
        {"final": f"Added double_{word}(x) to {mod}; it returns 84 for 42."},
    ]
    return {
        "id": f"add-{n:02d}",
        "task": f"Implement requirement 12 of SPEC.txt in {mod}.",
        "files": {mod: code, "SPEC.txt": spec},
        "steps": steps,
        "checks": [
            {"file": mod, "contains": f"def double_{word}"},
            {"command": f"python -c 'import {word}_util as m; assert m.double_{word}(42) == 84'"},
        ],
    }


def _rename(rng: random.Random, n: int) -> Trajectory:
    old, new = rng.sample(_WORDS, 2)
    old_name, new_name = f"load_{old}", f"fetch_{new}"
    a = _module("a", f"def {old_name}(path):\n    return open(path).read()\n")
    b = f"from a import {old_name}\n\n\ndef run():\n    return {old_name}('x.txt')\n"
    filler = "\n".join(f"# line {i}" for i in range(30))
    steps = [
        call("search_files", marker("b.py"), pattern=old_name, max_results=20),
        call("read_file", marker(f"def {old_name}"), path="a.py", start_line=1, end_line=6),
        call(
            "edit_file",
            changed("a.py", f"def {new_name}"),
            path="a.py",
            old_text=f"def {old_name}(path):",
            new_text=f"def {new_name}(path):",
        ),
        call("read_file", marker(f"return {old_name}"), path="b.py"),
        call(
            "write_file",
            changed("b.py", f"return {new_name}"),
            path="b.py",
            content=b.replace(old_name, new_name),
        ),
        call("search_files", marker(new_name), pattern=new_name, path=".", max_results=20),
        {"final": f"Renamed {old_name} to {new_name} in a.py and its use in b.py."},
    ]
    return {
        "id": f"ren-{n:02d}",
        "task": f"Rename {old_name} to {new_name} everywhere.",
        "files": {"a.py": a, "b.py": b, "notes.txt": filler},
        "steps": steps,
        "checks": [
            {"file": "a.py", "contains": f"def {new_name}"},
            {"file": "b.py", "contains": f"return {new_name}"},
            {"command": "python -c 'import b'"},
        ],
    }


def _config(rng: random.Random, n: int) -> Trajectory:
    word = rng.choice(_WORDS)
    port, new_port = rng.randint(3000, 3999), rng.randint(8000, 8999)
    conf = f'[server]\nname = "{word}"\nport = {port}\nworkers = 2\n'
    check = (
        "import tomllib\n"
        "conf = tomllib.load(open('config/app.toml', 'rb'))\n"
        "print('PORT', conf['server']['port'])\n"
    )
    steps = [
        call("list_directory", marker("app.toml"), path="config"),
        call("read_file", marker(f"port = {port}"), path="config/app.toml"),
        call(
            "edit_file",
            changed("config/app.toml", f"port = {new_port}"),
            path="config/app.toml",
            old_text=f"port = {port}",
            new_text=f"port = {new_port}",
        ),
        call(
            "run_command", marker(f"PORT {new_port}"), command="python check.py", timeout_ms=15000
        ),
        {"final": f"The server port is now {new_port}."},
    ]
    return {
        "id": f"cfg-{n:02d}",
        "task": f"Change the server port in config/app.toml to {new_port} and check it loads.",
        "files": {"config/app.toml": conf, "check.py": check, "config/README": "Config.\n"},
        "steps": steps,
        "checks": [{"file": "config/app.toml", "contains": f"port = {new_port}"}],
    }


def _new_file(rng: random.Random, n: int) -> Trajectory:
    word = rng.choice(_WORDS)
    count = rng.randint(3, 12)
    script = f"for i in range({count}):\n    print('{word}', i)\nprint('DONE {word}')\n"
    steps = [
        call("list_directory", marker("README.md"), path="."),
        call("read_file", marker(f"{count} lines"), path="README.md"),
        call("write_file", changed(f"{word}.py", "DONE"), path=f"{word}.py", content=script),
        call("run_command", marker(f"DONE {word}"), command=f"python {word}.py | tail -n 2"),
        {"final": f"Wrote {word}.py; it prints {count} lines and DONE."},
    ]
    readme = f"# Task\n\nWrite {word}.py that prints '{word} i' for {count} lines then DONE.\n"
    return {
        "id": f"new-{n:02d}",
        "task": "Do what README.md asks.",
        "files": {"README.md": readme, "setup.cfg": "[metadata]\nname = demo\n"},
        "steps": steps,
        "checks": [
            {"file": f"{word}.py", "contains": f"range({count})"},
            {"command": f"python {word}.py | grep -q 'DONE {word}'"},
        ],
    }


def _docs(rng: random.Random, n: int) -> Trajectory:
    word = rng.choice(_WORDS)
    line = rng.randint(5, 15)
    body = [f"Paragraph {i} about {word}." for i in range(1, 21)]
    body[line - 1] = f"TODO: describe the {word} option"
    doc = "\n".join(body) + "\n"
    steps = [
        call(
            "search_files", marker(f"guide.md:{line}"), pattern="TODO", path="docs", max_results=5
        ),
        call(
            "read_file",
            marker(f"describe the {word}"),
            path="docs/guide.md",
            start_line=line - 2,
            end_line=line + 2,
        ),
        call(
            "edit_file",
            changed("docs/guide.md", f"The {word} option"),
            path="docs/guide.md",
            old_text=f"TODO: describe the {word} option",
            new_text=f"The {word} option turns on {word} mode.",
        ),
        call(
            "write_file",
            changed("docs/CHANGES.md", word),
            path="docs/CHANGES.md",
            content=f"- Documented the {word} option.\n",
        ),
        {"final": f"Documented the {word} option in docs/guide.md and noted it in CHANGES.md."},
    ]
    return {
        "id": f"doc-{n:02d}",
        "task": "Resolve the TODO in the docs and note it in docs/CHANGES.md.",
        "files": {"docs/guide.md": doc, "docs/index.md": "# Docs\n"},
        "steps": steps,
        "checks": [
            {"file": "docs/guide.md", "contains": f"The {word} option"},
            {"file": "docs/CHANGES.md", "contains": word},
        ],
    }


TEMPLATES = (_fix_bug, _add_function, _rename, _config, _new_file, _docs)


def robustness_trajectories(count: int = 60, seed: int = 7) -> list[Trajectory]:
    """``count`` correct trajectories (5 to 7 steps), cycling through six kinds of task."""
    rng = random.Random(seed)
    return [TEMPLATES[n % len(TEMPLATES)](rng, n) for n in range(count)]


# -- rendering into dialects ------------------------------------------------------------------


def render_call(step: Step, dialect: str) -> tuple[str, dict[str, Any]]:
    """The (tool name, arguments) a model speaking ``dialect`` sends for ``step``."""
    if "final" in step:
        if dialect == "smolagents":
            return "final_answer", {"answer": step["final"]}
        if dialect == "bash":
            return "bash", {"command": SUBMIT}
        raise ValueError("in this dialect the final answer is text, not a call")
    if dialect == "bash":
        return "bash", {"command": to_bash(step["tool"], step["args"])}
    return step["tool"], dict(step["args"])


def is_text_final(step: Step, dialect: str) -> bool:
    return "final" in step and dialect == "tools"


def to_bash(tool: str, args: dict[str, Any]) -> str:
    """The shell command a model given only bash would write for a localhand tool call."""
    q = shlex.quote
    if tool == "read_file":
        start, end = args.get("start_line"), args.get("end_line")
        if start or end:
            return f"nl -ba {q(args['path'])} | sed -n '{start or 1},{end or '$'}p'"
        return f"nl -ba {q(args['path'])}"
    if tool == "list_directory":
        return f"ls -p {q(args.get('path', '.'))}"
    if tool == "search_files":
        limit = args.get("max_results", 50)
        return f"grep -rnE {q(args['pattern'])} {q(args.get('path', '.'))} | head -n {limit}"
    if tool == "write_file":
        return f"cat <<'EOF' > {q(args['path'])}\n{args['content'].rstrip(chr(10))}\nEOF"
    if tool == "edit_file":
        script = (
            "import pathlib\n"
            f"p = pathlib.Path({args['path']!r})\n"
            "s = p.read_text()\n"
            f"old, new = {args['old_text']!r}, {args['new_text']!r}\n"
            "assert s.count(old) == 1, 'old text must occur once'\n"
            "p.write_text(s.replace(old, new))\n"
            "print('edited')"
        )
        return f"python3 - <<'EOF'\n{script}\nEOF"
    if tool == "run_command":
        return args["command"]
    raise ValueError(f"no bash form for {tool}")


# -- workspaces and checks --------------------------------------------------------------------


def write_workspace(root: Path, trajectory: Trajectory) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in trajectory["files"].items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def check_workspace(root: Path, checks: list[dict[str, str]]) -> list[str]:
    """The checks that fail (empty when the workspace is as the trajectory leaves it)."""
    import subprocess

    failed = []
    for check in checks:
        if "command" in check:
            done = subprocess.run(
                check["command"], shell=True, cwd=root, capture_output=True, timeout=60
            )
            if done.returncode != 0:
                failed.append(check["command"])
            continue
        path = root / check["file"]
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        if check["contains"] not in text:
            failed.append(f"{check['file']} lacks {check['contains']!r}")
    return failed


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
