"""The benchmark's noisy model (benchmarks/_noisy.py): the behaviour kinds (premature final
answers, false claims of success, wrong content and its repair) and correlated errors.

A small driver plays the agent: it runs the model's calls for real in a temporary workspace
(file edits in Python, commands in a shell) and sends the results back, as any agent would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

from _noisy import (  # noqa: E402
    CLAIM_TEXT,
    DEFAULT_RATES,
    PREMATURE_TEXTS,
    PROFILES,
    NoisyModel,
    corrupt,
    last_work,
    wrong_content,
)
from _tasks import check_workspace, robustness_trajectories, write_workspace  # noqa: E402


def run_call(workspace: Path, name: str, args: dict[str, Any]) -> str:
    path = workspace / str(args.get("path", "."))
    if name == "read_file":
        return path.read_text()
    if name == "list_directory":
        return "\n".join(sorted(p.name for p in path.iterdir()))
    if name == "write_file":
        path.write_text(args["content"])
        return "written"
    if name == "edit_file":
        text = path.read_text()
        if text.count(args["old_text"]) != 1:
            return "error: old_text not found"
        path.write_text(text.replace(args["old_text"], args["new_text"]))
        return "edited"
    if name == "search_files":
        done = subprocess.run(
            ["grep", "-rn", args["pattern"], str(args.get("path", "."))],
            cwd=workspace,
            capture_output=True,
            text=True,
        )
        return done.stdout.replace(str(workspace) + "/", "")
    if name == "run_command":
        done = subprocess.run(
            args["command"], shell=True, cwd=workspace, capture_output=True, text=True
        )
        return done.stdout + done.stderr
    raise AssertionError(name)


def drive(model: NoisyModel, workspace: Path, refuse_finals: int = 0, cap: int = 30) -> list:
    """Play the agent until the model gives a final answer it accepts (the first
    ``refuse_finals`` are refused with a nudge). Returns the replies."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    replies = []
    for _ in range(cap):
        item = model({"messages": list(messages)})
        replies.append(item)
        calls = item.get("tool_calls") or []
        messages.append({"role": "assistant", **item})
        if not calls:
            if refuse_finals:
                refuse_finals -= 1
                messages.append({"role": "user", "content": "Use the tools first."})
                continue
            return replies
        for call in calls:
            function = call["function"]
            args = function["arguments"]
            args = json.loads(args) if isinstance(args, str) else args
            out = run_call(workspace, function["name"], args)
            messages.append({"role": "tool", "content": out})
    raise AssertionError("the model never finished")


def trajectory(prefix: str) -> dict[str, Any]:
    return next(t for t in robustness_trajectories(12) if t["id"].startswith(prefix))


def test_corrupt_changes_one_detail() -> None:
    assert corrupt("return value * 7") == "return value * 8"
    assert corrupt("port = 8129") == "port = 8120"
    assert corrupt("def double_alpha") == "def double_alph"
    for text in ("kg * 1000", "The cedar option", "DONE", "'SKU'"):
        assert text not in corrupt(text)


def test_wrong_content_only_for_writes() -> None:
    fix = trajectory("fix")
    edit = next(s for s in fix["steps"] if s.get("tool") == "edit_file")
    bad = wrong_content(edit)
    assert bad is not None
    assert bad["good"] not in bad["step"]["args"]["new_text"]
    assert bad["repair"]["args"]["old_text"] == bad["step"]["args"]["new_text"]
    assert wrong_content(fix["steps"][0]) is None  # list_directory writes nothing


def test_clean_replay_completes(tmp_path: Path) -> None:
    for t in robustness_trajectories(6):
        workspace = write_workspace(tmp_path / t["id"], t)
        model = NoisyModel(t, "tools", workspace, rates={})
        replies = drive(model, workspace)
        assert len(replies) == len(t["steps"])
        assert model.stats()["last_reply"] == "final"
        assert check_workspace(workspace, t["checks"]) == []


def test_wrong_content_is_noticed_when_a_later_step_fails(tmp_path: Path) -> None:
    t = trajectory("fix")  # the edit, then the tests: the tests reveal a wrong edit
    workspace = write_workspace(tmp_path, t)
    model = NoisyModel(t, "tools", workspace, rates={"wrong_content": 1.0})
    drive(model, workspace)
    stats = model.stats()
    assert stats["corruptions"] == {"wrong_content": 1}
    assert stats["wrong_content_landed"] == 1
    assert stats["wrong_content_repaired"] == 1
    assert stats["last_reply"] == "final"
    assert stats["replies"] == len(t["steps"]) + 2  # the repair, and the tests again
    assert check_workspace(workspace, t["checks"]) == []


def test_wrong_content_not_revealed_ends_in_a_false_finish(tmp_path: Path) -> None:
    t = trajectory("doc")  # nothing after the edits reads them back
    workspace = write_workspace(tmp_path, t)
    model = NoisyModel(t, "tools", workspace, rates={"wrong_content": 1.0})
    drive(model, workspace)
    stats = model.stats()
    assert stats["wrong_content_left"] == 2
    assert stats["last_reply"] == "wrong_content"
    assert stats["reached_final"]
    assert check_workspace(workspace, t["checks"])  # the checks see it


def test_premature_final_and_retry_after_a_refusal(tmp_path: Path) -> None:
    t = trajectory("cfg")
    workspace = write_workspace(tmp_path, t)
    model = NoisyModel(t, "tools", workspace, rates={"premature": 1.0})
    replies = drive(model, workspace, refuse_finals=1)
    assert replies[0]["content"] in PREMATURE_TEXTS and not replies[0].get("tool_calls")
    assert replies[1]["content"] in PREMATURE_TEXTS  # tried again: still premature
    stats = model.stats()
    assert [e["refused"] for e in stats["early_finals"]] == [True, False]
    assert stats["last_reply"] == "premature"
    assert not stats["reached_final"]


def test_false_claim_comes_at_the_last_piece_of_work(tmp_path: Path) -> None:
    t = trajectory("add")
    workspace = write_workspace(tmp_path, t)
    model = NoisyModel(t, "tools", workspace, rates={"false_claim": 1.0})
    replies = drive(model, workspace)
    assert replies[-1]["content"] == CLAIM_TEXT
    assert len(replies) == last_work(t["steps"]) + 1
    assert model.stats()["last_reply"] == "false_claim"
    assert check_workspace(workspace, t["checks"])


@pytest.mark.parametrize("dialect", ["smolagents", "bash"])
def test_early_finals_in_the_peers_vocabulary(tmp_path: Path, dialect: str) -> None:
    t = trajectory("cfg")
    model = NoisyModel(t, dialect, tmp_path, rates={"premature": 1.0})
    item = model({"messages": [{"role": "user", "content": "task"}]})
    name = item["tool_calls"][0]["function"]["name"]
    assert name == ("final_answer" if dialect == "smolagents" else "bash")


def test_correlated_errors_repeat_the_kind(tmp_path: Path) -> None:
    t = trajectory("fix")
    kinds = []
    for correlation in (0.0, 1.0):
        model = NoisyModel(t, "tools", tmp_path, rates={"empty": 0.3}, correlation=correlation)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
        for _ in range(12):
            item = model({"messages": list(messages)})
            messages += [{"role": "assistant", **item}, {"role": "user", "content": "nudge"}]
        kinds.append([c["reply"] for c in model.corruptions])
    independent, correlated = kinds
    first = correlated[0]
    assert correlated == list(range(first, 12))  # once empty, always empty
    assert independent[0] == first  # the same draw up to there
    assert len(independent) < len(correlated)


def test_format_profile_is_the_old_noise() -> None:
    rates, correlated = PROFILES["format"]
    assert rates == DEFAULT_RATES and not correlated
    assert abs(sum(DEFAULT_RATES.values()) - 0.29) < 1e-9
