"""Mismatched ``edit_file`` calls of the kinds real models send, for edit_recovery_bench.py.

Built here, by hand, from what public reports describe (not replayed from their logs): each
case is a small file and one edit call whose ``old_text`` is wrong in one way those reports
name. The reports (read Nov 2026):

- tabs vs spaces: anthropics/claude-code#9163, #26996, #37403 (Go/JSX files indented with
  tabs, the model sends spaces); charmbracelet/crush#3452 (models send the wrong indent style).
- indentation, trailing whitespace, CRLF, missing final newline: kdeps/kdeps#795;
  strands-agents/harness-sdk#3175 (no CRLF/whitespace tolerance, non-diagnostic errors).
- re-wrapped lines / stale view / close-but-wrong text, where the model gives up or rewrites
  the whole file: anomalyco/opencode#42908 (SWE-bench traces), co-l/openfox#29 (Gemma 4
  12B/26B retrying 3-5 times, then write_file), xal-sh/xal#37.

``expect`` is what localhand should do: "exact" (applied as sent), "loose" (applied to the one
region equal up to whitespace, reported as loose) or "refused" (nothing written; the message
must quote the closest region or name every candidate). ``result`` is the file afterwards for
the cases that apply; ``hint`` a text the refusal must contain.
"""

from __future__ import annotations

from typing import TypedDict


class Case(TypedDict, total=False):
    kind: str
    file: str
    old: str
    new: str
    expect: str
    result: str
    hint: str


GO = "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
PY = (
    "class A:\n    def f(self):\n        x = 1\n        return x\n\n"
    "    def g(self):\n        return 2\n"
)
JS = "function add(a, b) {\n  return a + b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n"

CASES: list[Case] = [
    {
        "kind": "exact",
        "file": PY,
        "old": "        x = 1\n",
        "new": "        x = 2\n",
        "expect": "exact",
        "result": PY.replace("x = 1", "x = 2"),
    },
    {
        "kind": "tabs vs spaces",
        "file": GO,
        "old": "    if ok {\n        run()\n    }",
        "new": "    if ok {\n        run()\n        log()\n    }",
        "expect": "loose",
        "result": "func main() {\n\tif ok {\n\t\trun()\n\t\tlog()\n\t}\n}\n",
    },
    {
        "kind": "tabs vs spaces",
        "file": GO,
        "old": "        run()",
        "new": "        go run()",
        "expect": "loose",
        "result": GO.replace("\t\trun()", "\t\tgo run()"),
    },
    {
        "kind": "indentation",
        "file": PY,
        "old": "def f(self):\n    x = 1\n    return x",
        "new": "def f(self):\n    x = 1\n    y = x + 1\n    return y",
        "expect": "loose",
        "result": PY.replace(
            "        x = 1\n        return x", "        x = 1\n        y = x + 1\n        return y"
        ),
    },
    {
        "kind": "indentation",
        "file": PY,
        "old": "x = 1\n    return x",
        "new": "x = 3\n    return x",
        "expect": "loose",
        "result": PY.replace("x = 1", "x = 3"),
    },
    {
        "kind": "indentation",
        "file": JS,
        "old": "    return a - b;",
        "new": "    return b - a;",
        "expect": "loose",
        "result": JS.replace("a - b", "b - a"),
    },
    {
        "kind": "whitespace",
        "file": "total = price  *  qty\n",
        "old": "total = price * qty",
        "new": "total = price * qty * rate",
        "expect": "loose",
        "result": "total = price * qty * rate\n",
    },
    {
        "kind": "whitespace",
        "file": "a = 1   \nb = 2\n",
        "old": "a = 1\nb = 2",
        "new": "a = 10\nb = 2",
        "expect": "loose",
        "result": "a = 10\nb = 2\n",
    },
    {
        "kind": "rewrapped lines",
        "file": "# Keep the cache warm between\n# requests of one task.\nkeep = True\n",
        "old": "# Keep the cache warm between requests of one task.\nkeep = True",
        "new": "# Keep the cache warm.\nkeep = True",
        "expect": "refused",
        "hint": "     2| # requests of one task.",
    },
    {
        "kind": "partial line",
        "file": "if  retries  >  3:\n    stop()\n",
        "old": "retries > 3:",
        "new": "retries > 5:",
        "expect": "loose",
        "result": "if  retries > 5:\n    stop()\n",
    },
    {
        "kind": "partial line",
        "file": "values = [1, 2, 3]\n",
        "old": "[1, 2, 3]",
        "new": "[1, 2, 3, 4]",
        "expect": "exact",
        "result": "values = [1, 2, 3, 4]\n",
    },
    {
        "kind": "crlf",
        "file": "one\r\ntwo\r\nthree\r\n",
        "old": "one\ntwo",
        "new": "1\n2",
        "expect": "exact",
        "result": "1\r\n2\r\nthree\r\n",
    },
    {
        "kind": "crlf",
        "file": "if x:\r\n    go()\r\n",
        "old": "if x:\n  go()",
        "new": "if x:\n  go()\n  done()",
        "expect": "loose",
        "result": "if x:\r\n    go()\r\n    done()\r\n",
    },
    {
        "kind": "stale view",
        "file": PY.replace("x = 1", "x = 5"),
        "old": "        x = 1\n",
        "new": "        x = 2\n",
        "expect": "refused",
        "hint": "     3|         x = 5",
    },
    {
        "kind": "stale view",
        "file": JS.replace("a - b", "a - b - 0"),
        "old": "function sub(a, b) {\n  return a - b;\n}",
        "new": "function sub(a, b) {\n  return b - a;\n}",
        "expect": "refused",
        "hint": "file has 'return a - b - 0;'",
    },
    {
        "kind": "misremembered",
        "file": "def area(r):\n    return 3.14 * r * r\n",
        "old": "def area(radius):\n    return 3.14 * radius * radius",
        "new": "def area(radius):\n    return math.pi * radius ** 2",
        "expect": "refused",
        "hint": "     1| def area(r):",
    },
    {
        "kind": "ambiguous",
        "file": "if a:\n    x = 1\nif b:\n\tx = 1\n",
        "old": "x  =  1",
        "new": "x = 2",
        "expect": "refused",
        "hint": "(lines 2, 4)",
    },
    {
        "kind": "whitespace only",
        "file": "a = 1\n",
        "old": "  \n",
        "new": "b = 2\n",
        "expect": "refused",
        "hint": "only whitespace",
    },
    {
        "kind": "word boundary",
        "file": "max = 10\n",
        "old": "x  = 1",
        "new": "x = 2",
        "expect": "refused",
        "hint": "old_text was not found",
    },
    {
        "kind": "line-number prefix",
        "file": "a = 1\n",
        "old": "     1| a = 1",
        "new": "a = 2",
        "expect": "refused",
        "hint": "leave those prefixes out",
    },
]
