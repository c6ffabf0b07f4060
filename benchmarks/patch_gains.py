"""Measure speed-ups: patches before they are applied, or earlier commits against now.

Each variant is a copy of ``src/`` put first on ``PYTHONPATH``: the working tree as it is
(``as_is``), the working tree with each patch applied (``PATCH``, and ``all`` of them), or
the ``src/`` of a git revision (``--rev REV``, repeatable: how much faster the code is now
than at REV). The variants are measured in alternating rounds so that whatever else the
machine does affects them alike. Per variant:

- ``overhead_bench.py --no-cli`` (localhand's wall and CPU time per iteration on the 30-step
  task, in process: the loop alone, without the command line's recording and git);
- in ``--starts`` interleaved rounds, the import of the CLI path (``localhand.cli`` and the
  backends) as CPU time of the child, and the time from ``localhand run --backend ollama`` to
  its first request, bytecode cache warm; the fastest of the rounds is kept, since other load
  on the machine only ever adds to them.

Prints one JSON object: each variant's medians and its gain over the source as it is (for a
revision, a negative gain is how much the working tree improved on it).

    python benchmarks/patch_gains.py [--rounds 1] [--runs 3] [--starts 6] [--rev REV]... [PATCH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import BENCH, REPO, FakeServer, emit, machine
from startup_bench import first_request


def cpu_python(code: str, env: dict[str, str]) -> float:
    """CPU seconds (user + system) a child ``python -c code`` used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def make_variant(root: Path, name: str, patches: list[Path], rev: str | None = None) -> Path:
    target = root / name.replace(":", "-")  # the path goes into PYTHONPATH, where ":" splits
    if rev is None:
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / "src", target / "src", ignore=ignore)
    else:  # the revision's src/, exactly as committed
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", rev, "src"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    for patch in patches:
        done = subprocess.run(
            ["patch", "-p1", "--forward", "--quiet", "-d", str(target), "-i", str(patch)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{patch.name} does not apply: {done.stdout}{done.stderr}")
    return target / "src"


def variant_env(src: Path, root: Path, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    safe = name.replace(":", "-")
    env["PYTHONPYCACHEPREFIX"] = str(root / f"pycache-{safe}")
    env["LOCALHAND_HOME"] = str(root / f"home-{safe}")
    env.pop("OLLAMA_HOST", None)
    return env


def _imported_from(env: dict[str, str]) -> str:
    code = "import localhand.cli, localhand.session.backend; print(localhand.__file__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return done.stdout.strip()


def measure_loop(env: dict[str, str], runs: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(BENCH / "overhead_bench.py"), "--runs", str(runs), "--no-cli"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    overhead = json.loads(done.stdout)
    return {
        "ms_per_iteration": overhead["localhand_ms_per_iteration"]["median"],
        "cpu_ms_per_iteration": overhead["localhand_cpu_ms_per_iteration"]["median"],
    }


def measure_start(server: FakeServer, env: dict[str, str], root: Path) -> dict[str, float]:
    imported = cpu_python("import localhand.cli, localhand.session.backend", env)
    row = first_request(server, "ollama", root, env)
    return {
        "cli_import_cpu_ms": (imported - cpu_python("pass", env)) * 1000,
        "first_request_ms": (row["first_request_s"] or float("nan")) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="overhead_bench runs per variant")
    parser.add_argument("--runs", type=int, default=3, help="--runs of each overhead_bench")
    parser.add_argument("--starts", type=int, default=6, help="start-ups per variant (min kept)")
    parser.add_argument("--rev", action="append", default=[], help="a git revision to compare")
    parser.add_argument("patches", nargs="*", type=Path)
    args = parser.parse_args(argv)
    patches = args.patches
    if not patches and not args.rev:
        parser.error("nothing to compare: give patches, or --rev REV for an earlier commit")
    root = Path(tempfile.mkdtemp(prefix="lh-patches-"))
    variants: dict[str, list[Path]] = {"as_is": []}
    variants |= {patch.stem: [patch] for patch in patches}
    if len(patches) > 1:
        variants["all"] = list(patches)
    revs = {f"rev:{rev}": rev for rev in args.rev}
    variants |= {name: [] for name in revs}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    starts: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    try:
        envs = {
            name: variant_env(make_variant(root, name, found, revs.get(name)), root, name)
            for name, found in variants.items()
        }
        for env in envs.values():  # compile every variant's bytecode once, and check it is used
            where = _imported_from(env)
            if not where.startswith(env["PYTHONPATH"]):
                raise RuntimeError(f"{env['PYTHONPATH']}: python imports localhand from {where}")
        with FakeServer() as server:
            for _ in range(args.rounds):
                for name, env in envs.items():
                    rows[name].append(measure_loop(env, args.runs))
            for _ in range(args.starts):
                for name, env in envs.items():
                    starts[name].append(measure_start(server, env, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results: dict[str, Any] = {}
    for name, measured in rows.items():
        results[name] = {
            key: round(statistics.median(r[key] for r in measured), 3) for key in measured[0]
        }
        for key in ("cli_import_cpu_ms", "first_request_ms"):
            values = [r[key] for r in starts[name] if r[key] == r[key]]
            results[name][key] = round(min(values), 1) if values else None
    base = results["as_is"]
    for name, row in results.items():
        if name != "as_is":
            row["gain"] = {
                k: round(base[k] - v, 3)
                for k, v in row.items()
                if base.get(k) is not None and v is not None
            }
    emit(
        {
            "benchmark": "patch_gains",
            "machine": machine(),
            "rounds": args.rounds,
            "runs": args.runs,
            "starts": args.starts,
            "note": "per iteration: medians; start-up: the fastest of the interleaved starts",
            "patches": [p.name for p in patches],
            "revisions": args.rev,
            "variants": results,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
