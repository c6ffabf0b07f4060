"""The built-in eval suite is sound: every task loads and has its workspace; on the untouched
workspace every task fails (a model that does nothing cannot pass); and a scripted "oracle"
that makes the right edits passes every task, so each is achievable as its checks decide it.
The oracle runs through the real loop (and plan mode, for plan tasks): read the solutions as
what a good model would do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.evals.matrix import batch_line, cells, staged
from localhand.evals.measure import grade
from localhand.evals.suites import builtin_root, load_suite
from localhand.models.scripted import ScriptedModel, call
from localhand.session.api import run_any, run_plan
from localhand.taskfile import task_from_dict

SUITE = load_suite()
SETTINGS = Settings(model="oracle", sandbox="off", approve="never")
TASKS = {task.id: task for task in SUITE.tasks}


def write(path: str, content: str) -> Any:
    return call("write_file", path=path, content=content)


def edit(path: str, old: str, new: str) -> Any:
    return call("edit_file", path=path, old_text=old, new_text=new)


def run(command: str) -> Any:
    return call("run_command", command=command)


def repair(action: str, **fields: Any) -> str:
    return json.dumps({"action": action, "reason": "the oracle knows", **fields})


SLUGIFY = """
import re


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
"""
SLUG_TEST = """

class SlugifyTest(unittest.TestCase):
    def test_slugify(self):
        from textutil import slugify

        self.assertEqual(slugify("Hello, World!"), "hello-world")
"""
IS_PRIME = """

def is_prime(n):
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))
"""
PRIME_TEST = """

class PrimeTest(unittest.TestCase):
    def test_is_prime(self):
        from mathutil import is_prime

        self.assertTrue(is_prime(97))
        self.assertFalse(is_prime(1))
"""
DATES = """from datetime import date


def parse_date(text):
    year, month, day = (int(part) for part in text.strip().split("-"))
    return date(year, month, day)
"""
APP = """from dates import parse_date


def days_between(start, end):
    return (parse_date(end) - parse_date(start)).days
"""
WC_OLD = """    parser.add_argument("path")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as handle:
        lines, words, chars = counts(handle.read())
    print(lines, words, chars, args.path)"""
WC_NEW = """    parser.add_argument("path")
    parser.add_argument("--lines", action="store_true")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as handle:
        lines, words, chars = counts(handle.read())
    if args.lines:
        print(lines)
    else:
        print(lines, words, chars, args.path)"""
CLI = """import sys

from convert import c_to_f, f_to_c


def main(argv):
    if argv[0] == "--reverse":
        print(f_to_c(float(argv[1])))
    else:
        print(c_to_f(float(argv[0])))


if __name__ == "__main__":
    main(sys.argv[1:])
"""

SOLUTIONS: dict[str, list[Any]] = {
    "create-hello": [write("hello.txt", "hello world\n")],
    "create-config": [write("config.json", '{"name": "demo", "port": 8080, "debug": false}\n')],
    "create-usage-page": [
        run("mkdir -p docs"),
        write("docs/usage.md", "# Usage\n\nRun it with `python3 main.py`.\n"),
    ],
    "edit-typo": [run("sed -i 's/recieve/receive/g' README.md")],
    "edit-constant": [edit("settings.py", "TIMEOUT_SECONDS = 30", "TIMEOUT_SECONDS = 60")],
    "edit-changelog": [
        edit("CHANGELOG.md", "## Unreleased\n", "## Unreleased\n\n- Fixed the login timeout\n")
    ],
    "edit-checklist": [edit("TODO.md", "- [ ] write the report", "- [x] write the report")],
    "edit-requirements": [
        edit("requirements.txt", "pyyaml>=6.0\n", "pyyaml>=6.0\nrequests>=2.31\n")
    ],
    "edit-remove-debug": [edit("app.py", '    print("DEBUG total:", result)\n', "")],
    "ask-line-count": [run("wc -l < data/names.txt > answer.txt")],
    "fix-greet": [edit("greet.py", 'return "Hello " + name', 'return f"Hello, {name}!"')],
    "fix-calc": [
        call("read_file", path="calc.py"),
        edit("calc.py", '"""a plus b."""\n    return a - b', '"""a plus b."""\n    return a + b'),
        run("python3 -m unittest test_calc"),
    ],
    "fix-paginate": [edit("pages.py", "start = number * size", "start = (number - 1) * size")],
    "fix-mutable-default": [
        edit("cart.py", "cart=[]):\n", "cart=None):\n    cart = [] if cart is None else cart\n")
    ],
    "fix-price-format": [edit("money.py", 'return "$" + str(amount)', 'return f"${amount:,.2f}"')],
    "fix-word-count": [edit("counter.py", 'text.split(" ")', "text.split()")],
    "add-slugify": [
        run(f"cat >> textutil.py <<'EOF'\n{SLUGIFY}EOF"),
        edit("test_textutil.py", "\n\nif __name__", f"{SLUG_TEST}\n\nif __name__"),
    ],
    "add-is-prime": [
        run(f"cat >> mathutil.py <<'EOF'\n{IS_PRIME}EOF"),
        edit("test_mathutil.py", "\n\nif __name__", f"{PRIME_TEST}\n\nif __name__"),
    ],
    "shell-count-todos": [run("grep -r TODO src | wc -l > todo_count.txt")],
    "shell-rename-ext": [run('cd notes && for f in *.txt; do mv "$f" "${f%.txt}.md"; done')],
    "shell-archive": [run("tar -czf backup.tar.gz data")],
    "ask-function-count": [run("grep -c '^def ' lib/geometry.py > answer.txt")],
    "ask-which-raises": [
        call("search_files", pattern="PermissionError"),
        write("answer.txt", "delete_user\n"),
    ],
    "shell-csv-total": [
        run("awk -F, 'NR > 1 {s += $2} END {printf \"%.2f\\n\", s}' sales.csv > total.txt")
    ],
    "edit-ini-config": [edit("config.ini", "port = 8000\n", "port = 9000\nworkers = 4\n")],
    "plan-pack-notes": [
        repair(
            "insert_steps", new_steps=[{"description": "make build/", "command": "mkdir -p build"}]
        )
    ],
    "refactor-rename-function": [run("sed -i 's/calc_total/compute_total/g' billing.py report.py")],
    "refactor-extract-module": [write("dates.py", DATES), write("app.py", APP)],
    "refactor-tax-constant": [
        write("config.py", "TAX_RATE = 0.2\n"),
        edit(
            "cart.py", '"""Cart totals."""\n', '"""Cart totals."""\n\nfrom config import TAX_RATE\n'
        ),
        edit("cart.py", "(1 + 0.2)", "(1 + TAX_RATE)"),
        edit(
            "invoice.py",
            '"""Invoice lines."""\n',
            '"""Invoice lines."""\n\nfrom config import TAX_RATE\n',
        ),
        edit("invoice.py", "net * 0.2", "net * TAX_RATE"),
    ],
    "fix-across-files": [
        run("python3 -m unittest test_inventory"),
        edit("utils.py", "int(text.strip())", 'int(text.strip().replace(",", ""))'),
    ],
    "add-cli-option": [edit("wc.py", WC_OLD, WC_NEW)],
    "add-reverse-conversion": [
        run("printf '\\n\\ndef f_to_c(f):\\n    return (f - 32) * 5 / 9\\n' >> convert.py"),
        write("cli.py", CLI),
    ],
    "plan-wrong-script": [
        repair("modify", new_command="python3 build_report.py data.csv report.txt")
    ],
    "plan-init-config": [
        repair(
            "insert_steps",
            new_steps=[{"description": "config", "command": "python3 stats.py --init"}],
        )
    ],
}


def fresh_copy(task_id: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(TASKS[task_id].task.workspace, tmp_path / "ws"))


def test_the_suite_has_30_plus_tasks_in_graded_tiers_of_every_kind_the_issue_names() -> None:
    assert len(SUITE.tasks) >= 30
    assert SUITE.tiers == [1, 2, 3]
    kinds = {task.kind for task in SUITE.tasks}
    assert {"create", "edit", "fix", "add", "refactor", "shell", "ask", "plan"} <= kinds
    assert all(task.is_plan or task.task.agentic for task in SUITE.tasks), "no task left to routing"
    assert set(SOLUTIONS) == set(TASKS), "every task has an oracle solution"


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_task_loads_as_a_batch_line_with_its_workspace(task_id: str) -> None:
    task = TASKS[task_id]
    assert task.task.workspace.is_dir() and task.task.workspace.is_relative_to(builtin_root())
    line = batch_line(cells(SUITE.select(ids=[task_id]), ["m"], 1, "t")[0], SUITE.root)
    again = task_from_dict(line, SUITE.root.parent)  # the copy's layout: suite/ beside the file
    assert again.description == task.task.description and again.checks == task.task.checks


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_a_model_that_does_nothing_fails_every_task(task_id: str, tmp_path: Path) -> None:
    task = TASKS[task_id]
    workspace = fresh_copy(task_id, tmp_path)
    if task.is_plan:  # its steps are its checks: run as written, the plan fails
        result = run_plan(task.task.plan, workspace, SETTINGS, mode="planner")
        assert (result.status, result.termination_reason) == ("fail", "step_failed")
    else:
        outcomes = [check.run(workspace) for check in task.task.checks]
        assert not any(o.passed for o in outcomes), [o.output_tail for o in outcomes]


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_an_oracle_that_makes_the_right_edits_passes(task_id: str, tmp_path: Path) -> None:
    task = TASKS[task_id]
    workspace = fresh_copy(task_id, tmp_path)
    script = [*SOLUTIONS[task_id], "Done."]
    if task.is_plan:
        script += ["a summary"] * 3  # rolling memory may ask for one
    model = ScriptedModel(script)
    result = run_any(task.task.with_changes(workspace=workspace), SETTINGS, model=model).to_dict()
    assert result["status"] == "pass", result
    assert grade(result, plan=task.is_plan) == ("pass", None)
    if not task.is_plan:
        assert result["termination_reason"] == "final_answer"
        model.assert_exhausted()
    else:
        assert result["steps_added"] + sum(s["modified"] for s in result["steps"]) == 1


def test_the_copy_of_the_suite_runs_from_a_batch_file_beside_it(tmp_path: Path) -> None:
    runs = cells(SUITE.select(tiers=[3]), ["a:1b", "b/2"], 2, "tag")
    assert len(runs) == 8 * 2 * 2 and len({r.id for r in runs}) == len(runs)
    with staged(SUITE.select(tiers=[3]), runs) as tasks_file:
        lines = [json.loads(line) for line in tasks_file.read_text().splitlines()]
        from localhand.batch.tasks import load_batch

        loaded = load_batch(tasks_file)
        assert all(item.task.workspace.is_relative_to(tasks_file.parent) for item in loaded)
        assert all(Path(item.task.workspace).is_dir() for item in loaded)
        assert all(not line["workspace"].startswith("/") for line in lines)
        stage = tasks_file.parent
    assert not stage.exists(), "the copy is removed"
    # The lines do not depend on where the copy was made: resume matches them again.
    with staged(SUITE.select(tiers=[3]), runs) as again:
        assert [json.loads(line) for line in again.read_text().splitlines()] == lines


def test_suites_and_selections_that_do_not_exist_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown suite 'nope'"):
        load_suite("nope")
    with pytest.raises(ConfigError, match="has no tier 9; it has 1, 2, 3"):
        SUITE.select(tiers=[9])
    with pytest.raises(ConfigError, match="has no task 'nope'"):
        SUITE.select(ids=["nope"])
    (tmp_path / "tier1").mkdir()
    (tmp_path / "tier1" / "x.yaml").write_text("description: do it\nagentic: true\n")
    with pytest.raises(ConfigError, match="has no checks"):
        load_suite(tmp_path)
    (tmp_path / "tier1" / "x.yaml").write_text(
        "description: do it\nworkspace: ../..\nverify: ['true']\n"
    )
    with pytest.raises(ConfigError, match="outside the suite folder"):
        load_suite(tmp_path)
