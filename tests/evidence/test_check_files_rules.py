"""The rules that make a file the check's (issue 38): pytest's configuration wherever pytest
would find it, ``__init__.py`` on the way to a test, what a Makefile includes, modules that
shadow the check interpreter's own, the task's words read narrowly; and the snapshot facts the
guard fails closed on (a walk cut short, a folder replaced by a link)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.evidence import shadowing, snapshot
from localhand.evidence.checkfiles import PYTEST_CONFIGS, CheckFiles
from localhand.evidence.shadowing import created_shadows, shadowed
from localhand.evidence.snapshot import ChangeTracker, Snapshot
from localhand.evidence.taskwords import written_tests
from localhand.safety.box.sandbox import Sandbox, use_sandbox


@pytest.mark.parametrize(
    ("task", "work"),
    [
        ("Fix calc.py so test_calc.py passes, then add a test in test_multiply.py",
         {"test_multiply.py"}),
        ("Add a test in tests/test_new.py and make tests/test_calc.py pass.",
         {"tests/test_new.py"}),
        ("Add a test in test_new.py so that test_old.py passes too.", {"test_new.py"}),
        ("Write tests for multiply in test_mul.py; test_calc.py must still pass.", {"test_mul.py"}),
        ("Fix the bug in test_calc.py. Then add a test for multiply.", set()),
        ("Make test_api.py pass", set()),
        ("Fix the failing test in test_math.py", set()),
        ("Add a unittest test for it in test_mathutil.py.", {"test_mathutil.py"}),
        ("Create tests/test_a.py and tests/test_b.py with unit tests; keep calc.py as is.",
         {"tests/test_a.py", "tests/test_b.py"}),
        ("Add tests until test_x.py passes and cover it in test_y.py", {"test_y.py"}),
    ],
)  # fmt: skip
def test_only_tests_named_where_new_tests_are_asked_for_are_work(task: str, work: set) -> None:
    assert written_tests(task) == work


@pytest.mark.parametrize("name", PYTEST_CONFIGS)
@pytest.mark.parametrize("folder", ["", "tests", "src/pkg"])
def test_pytest_configuration_is_the_checks_wherever_pytest_could_find_it(
    name: str, folder: str
) -> None:
    assert CheckFiles().holds(os.path.join(folder, name) if folder else name)


def test_init_files_on_the_way_to_a_test_are_the_checks() -> None:
    files = CheckFiles.of(["pytest checks/verify_calc.py"])
    files.trace_ways(
        ["calc/__init__.py", "src/pkg/__init__.py", "src/pkg/sub/test_unit.py",
         "src/pkg/sub/__init__.py", "lib/__init__.py", "lib/core.py", "checks/__init__.py",
         "checks/verify_calc.py", "e2e/it_test.go"]
    )  # fmt: skip
    held = {p for p in ["__init__.py", "src/__init__.py", "src/pkg/__init__.py",
                        "src/pkg/sub/__init__.py", "checks/__init__.py", "e2e/__init__.py",
                        "lib/__init__.py", "calc/__init__.py"] if files.holds(p)}  # fmt: skip
    assert held == {"__init__.py", "src/__init__.py", "src/pkg/__init__.py",
                    "src/pkg/sub/__init__.py", "checks/__init__.py", "e2e/__init__.py"}  # fmt: skip


MAKEFILE = b"""\
include common.mk
-include local.mk
sinclude $(wildcard conf/*.mk)
-include $(OBJS:.o=.d)
include $(DEPS)
test: build
\tpython3 check.py
"""


@pytest.mark.parametrize(
    "command", ["make test", "MAKEFILES=extra.mk make test", "env MAKEFILES=extra.mk make test"]
)
def test_what_a_makefile_includes_is_the_checks_when_the_check_runs_make(command: str) -> None:
    files = CheckFiles.of([command])
    kept = {"Makefile": MAKEFILE, "common.mk": b"build:\n\t./gen.sh\ninclude more.mk\n"}
    while files.include(kept):
        pass
    for path in ["common.mk", "local.mk", "more.mk", "conf/ci.mk", "obj/calc.d"]:
        assert files.holds(path), path
    assert files.holds("extra.mk") == ("MAKEFILES" in command)
    assert not files.holds("calc.c") and not files.holds("README.md")  # $(DEPS) names nothing
    assert sorted(files.run_by(kept)) == [
        "./gen.sh",
        "python3 check.py",
    ]  # recipes of what it includes
    assert not CheckFiles.of(["pytest"]).holds("local.mk")


def test_a_symlinked_folder_is_an_entry_and_replacing_a_folder_by_one_is_a_change(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("x")
    before = Snapshot.take(tmp_path)
    tracker = ChangeTracker(tmp_path)
    (tmp_path / "tests").rename(tmp_path / "suite")
    (tmp_path / "tests").symlink_to("suite", target_is_directory=True)
    after = Snapshot.take(tmp_path)
    assert not after.files["tests"].regular and "tests/test_a.py" not in after.files
    assert tracker.files_modified() == ["suite/test_a.py", "tests", "tests/test_a.py"]
    why = after.unvouched(before, ["tests/test_a.py"])
    assert why == "tests/test_a.py lies behind tests, a link the run created or replaced"
    assert Snapshot.take(tmp_path).unvouched(after, ["tests/test_a.py"]) is None  # same link


def test_a_walk_cut_short_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MAX_FILES", 3)
    for name in "abc":
        (tmp_path / name).write_text(name)
    whole = Snapshot.take(tmp_path)
    (tmp_path / "d").write_text("d")
    cut = Snapshot.take(tmp_path)
    assert (whole.truncated, cut.truncated, len(cut.files)) == (False, True, 3)
    assert "more than 3 files" in (cut.unvouched(whole, []) or "")


@pytest.fixture
def outside_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A venv outside the workspace, first on PATH, whose .pth puts the workspace (an
    editable install) and a folder of its own on the path."""
    venv, workspace, extra = tmp_path / "venv", tmp_path / "ws", tmp_path / "extra"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "installed_pkg").mkdir()
    (site / "installed_pkg" / "__init__.py").write_text("")
    (site / "paths.pth").write_text(f"{workspace}\n{extra}\n")
    workspace.mkdir()
    extra.mkdir()
    (extra / "extra_mod.py").write_text("")
    (workspace / "mine.py").write_text("")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(shadowing, "_KNOWN", {})
    with use_sandbox(Sandbox(mode="off")):  # the box shows no /tmp but the workspace's
        yield workspace, venv


def test_shadowing_names_are_asked_of_the_checks_python(
    outside_venv: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, _ = outside_venv
    names = {"json", "installed_pkg", "extra_mod", "mine", "calc_helpers"}
    assert shadowed(workspace, names) == {"json", "installed_pkg", "extra_mod"}
    asked = []
    monkeypatch.setattr(shadowing, "run_shell", lambda *a, **k: asked.append(a))
    assert shadowed(workspace, names) == {"json", "installed_pkg", "extra_mod"}
    assert shadowed(workspace, {"json", "os"}) == {"json", "os"}
    assert asked == [], "asked once per interpreter, and not at all for the standard library"


def test_created_modules_shadow_from_the_root_and_the_check_scripts_folders(
    outside_venv: tuple[Path, Path],
) -> None:
    workspace, _ = outside_venv
    (workspace / "checks").mkdir()
    (workspace / "checks" / "check.py").write_text("")
    (workspace / "installed_pkg").mkdir()
    (workspace / "installed_pkg" / "old.py").write_text("")
    baseline = Snapshot.of(workspace, ["checks/check.py", "installed_pkg/old.py"])
    created = ["json.py", "checks/json.py", "lib/json.py", "extra_mod/__init__.py",
               "installed_pkg/new.py", "notes.txt", "calc_helpers.py", "types/index.d.ts",
               "html/page.html", "email/util.py"]  # fmt: skip
    homes = CheckFiles.of(["python3 checks/check.py"]).import_homes()
    found = created_shadows(workspace, created, baseline, homes)
    assert found == {"json.py", "checks/json.py", "extra_mod/__init__.py"}


def test_a_check_path_that_became_a_link_to_a_folder_is_unvouched(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "elsewhere").mkdir()
    before = Snapshot.take(tmp_path)
    (tmp_path / "tests" / "helpers").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "tests" / "data.txt").symlink_to(tmp_path / "elsewhere" / "data.txt")
    after = Snapshot.take(tmp_path)
    assert after.unvouched(before, ["tests/data.txt"]) is None  # a file link is laid back
    why = after.unvouched(before, ["tests/data.txt", "tests/helpers"])
    assert why == "tests/helpers is a link the run created or replaced"


@pytest.mark.parametrize(
    "command",
    [
        "sudo -u ci pytest checks/verify_calc.py",
        "setsid timeout -s KILL 60 pytest checks/verify_calc.py",
        "uv run env X=1 pytest checks/verify_calc.py",
    ],
)
def test_a_test_run_through_the_risk_classifiers_wrappers_is_named(command: str) -> None:
    assert "checks/verify_calc.py" in CheckFiles.of([command]).named
