"""How many mismatched edit_file calls land, loosely or exactly, and how many are refused.

Runs each case of ``edit_recovery_corpus.py`` (mismatch kinds reported from real models,
built here from those reports) through localhand's edit matching (``tools.edits``, the code
edit_file calls) and prints one JSON object: the share of edits that land exactly, loosely or
are refused, per kind, and the cases whose outcome or resulting file differs from the
corpus' expectation. What it leaves out: the model's retry after a refusal (no model runs
here), so "refused" cases are counted as refused even when their message would let the next
call land; the message is checked to contain the text that makes that possible.

    PYTHONPATH=src python benchmarks/edit_recovery_bench.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edit_recovery_corpus import CASES, Case

from localhand.errors import ToolError
from localhand.tools.edits import replace_once


def run_case(case: Case) -> tuple[str, str, str]:
    """(outcome, resulting file or refusal message, loose note) for one case."""
    try:
        edit = replace_once(case["file"], case["old"], case["new"], where="f")
    except ToolError as refusal:
        return "refused", str(refusal), ""
    return ("loose" if edit.loose else "exact"), edit.text, edit.loose


def main() -> None:
    outcomes: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    wrong = []
    for index, case in enumerate(CASES):
        outcome, out, _note = run_case(case)
        outcomes[outcome] += 1
        by_kind[case["kind"]][outcome] += 1
        if outcome != case["expect"]:
            wrong.append({"case": index, "kind": case["kind"], "got": outcome})
        elif outcome == "refused" and case.get("hint", "") not in out:
            wrong.append({"case": index, "kind": case["kind"], "missing_hint": case["hint"]})
        elif outcome != "refused" and out != case.get("result"):
            wrong.append({"case": index, "kind": case["kind"], "wrong_result": out})
    total = len(CASES)
    print(
        json.dumps(
            {
                "cases": total,
                "share": {k: round(outcomes[k] / total, 3) for k in ("exact", "loose", "refused")},
                "landed_without_retry": round((outcomes["exact"] + outcomes["loose"]) / total, 3),
                "by_kind": {kind: dict(counts) for kind, counts in sorted(by_kind.items())},
                "not_as_expected": wrong,
                "source": "corpus built here from public reports; see edit_recovery_corpus.py",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
