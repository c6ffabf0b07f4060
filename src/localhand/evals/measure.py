"""One run's figures, from its Result and the events the run store kept of it.

From the Result: status, termination reason, iterations, tokens, wall time. From the events:
- **requests** (``model_request``) and how many were **constrained** retries (``constrained``:
  a broken call asked for again with the reply held to a valid call; none in plan runs, whose
  every diagnosis is constrained to a correction's schema);
- **nudges** (``nudge``): replies with neither a usable call nor an answer, met with a hint;
- **guardrail stops** by kind (``guardrail``: ``repetition``, ``stall``, ``iterations``...);
- **time to first token**, per request. With replies read as streams (``--watch-replies``,
  on by default in an eval) the first ``model_progress`` of a request, at most a second after
  the first token, gives it to within a tenth of a second: ``elapsed_s`` less the tokens after
  the first at ``tokens_per_s``. A reply over before its first progress event (under a
  second), or not streamed, gives only an upper bound: the whole reply's ``duration_ms``.
  ``ttft_exact`` counts the requests measured the first way;
- **prefix reuse**: how many prompt tokens repeat the previous request's prompt, which is
  what a server's prompt cache may skip. localhand's history only grows, so each request's
  prompt starts with the previous one's: ``min(previous tokens_in, tokens_in)`` of it is
  reusable. A constrained retry (sent without the tools, so its prompt differs from the
  start) and the request after it count 0, and so does a request after the history was
  compacted (a ``warning`` says so). Left out: the previous reply's own tokens (a server
  that keeps them cached reuses more), what tasks share (the system prompt and tools are the
  same for every task), and whether the server really hit its cache (Ollama does not say;
  a model reload or another task on the same slot loses it). Plan runs, whose model calls
  are separate conversations, have none. It is an estimate; what the server itself said
  (tokens it prefilled and reused, where it says: llama-server, vLLM, newer Ollama) is the
  Result's ``prefill``, kept as ``server_prefill``.

A run can also be downgraded by the eval (``grade``): a model that changed the files its
checks run (``check_*``) or a plan's check steps (ids starting with ``check``) has not passed,
whatever the checks said.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import PurePosixPath
from typing import Any

from localhand.evidence.reports import run_evidence

PASSING = ("pass", "partial_pass")


@dataclass
class _Request:
    constrained: bool
    compacted: bool
    tokens_in: int = 0
    tokens_out: int = 0
    reply_s: float | None = None
    ttft_s: float | None = None
    exact: bool = False


@dataclass
class Timeline:
    """What a run's events say, request by request."""

    requests: list[_Request] = field(default_factory=list)
    nudges: int = 0
    guardrails: Counter[str] = field(default_factory=Counter)


def read_events(events: list[dict[str, Any]]) -> Timeline:
    """Walk a run's events (their public JSON, in order)."""
    line = Timeline()
    current: _Request | None = None
    compacted = False
    for event in events:
        kind = event.get("type")
        if kind == "model_request":
            current = _Request(bool(event.get("constrained")), compacted)
            line.requests.append(current)
            compacted = False
        elif kind == "model_progress" and current is not None and current.ttft_s is None:
            current.ttft_s, current.exact = _first_token(event), True
        elif kind == "model_reply" and current is not None:
            current.tokens_in = int(event.get("tokens_in") or 0)
            current.tokens_out = int(event.get("tokens_out") or 0)
            current.reply_s = float(event.get("duration_ms") or 0) / 1000
            if current.ttft_s is None:
                current.ttft_s = current.reply_s  # an upper bound: the whole reply
            current = None
        elif kind == "nudge":
            line.nudges += 1
        elif kind == "guardrail":
            line.guardrails[str(event.get("guardrail") or "unknown")] += 1
        elif kind == "warning" and "compacted" in str(event.get("message") or ""):
            compacted = True
    return line


def _first_token(progress: dict[str, Any]) -> float:
    """When the first token came, from a ``model_progress`` event: its rate is counted from
    the first token (``(tokens - 1) / (now - first)``), so ``first = now - (tokens - 1) /
    rate``; with a single token the event came with it."""
    elapsed = float(progress.get("elapsed_s") or 0)
    tokens = int(progress.get("tokens") or 0)
    rate = progress.get("tokens_per_s")
    if tokens > 1 and rate:
        return max(0.0, round(elapsed - (tokens - 1) / float(rate), 2))
    return elapsed


def reusable_tokens(requests: list[_Request]) -> int:
    """Prompt tokens that repeat the previous request's prompt (see the module docstring)."""
    total = 0
    for before, now in pairwise(requests):
        if now.constrained or before.constrained or now.compacted:
            continue
        total += min(before.tokens_in, now.tokens_in)
    return total


def grade(result: dict[str, Any], *, plan: bool) -> tuple[str, str | None]:
    """The status the eval counts, and why it differs from the Result's, if it does."""
    status = str(result.get("status") or "error")
    if status not in PASSING:
        return status, None
    if plan:
        for step in result.get("steps") or []:
            if not str(step.get("id") or "").startswith("check"):
                continue
            if step.get("modified") or step.get("status") != "done":
                why = "changed" if step.get("modified") else str(step.get("status"))
                return "fail", f"the plan's check step {step.get('id')!r} was {why}"
        return status, None
    touched = sorted(
        path
        for path in result.get("files_modified") or []
        if PurePosixPath(str(path)).name.startswith("check_")
    )
    if touched:
        return "fail", f"the model changed the checks it is graded by: {', '.join(touched)}"
    return status, None


def run_figures(
    result: dict[str, Any], events: list[dict[str, Any]] | None, *, plan: bool
) -> dict[str, Any]:
    """One run's figures (the keys of a report's ``runs`` entries, less where it ran)."""
    status, note = grade(result, plan=plan)
    figures: dict[str, Any] = {
        "mode": "plan" if plan else "loop",
        "status": status,
        "result_status": result.get("status"),
        "termination_reason": result.get("termination_reason"),
        # what its checks rested on: a test runner's report, or only an exit code
        "evidence": run_evidence(result),
        "note": note,
        "error": result.get("error"),
        "iterations": int(result.get("iterations_used") or 0),
        "tokens_in": int(result.get("tokens_in") or 0),
        "tokens_out": int(result.get("tokens_out") or 0),
        "duration_s": round(float(result.get("duration_s") or 0), 3),
        "events": events is not None,
        "requests": None,
        "constrained": None,
        "nudges": None,
        "guardrails": {},
        "ttft_s": [],
        "ttft_exact": 0,
        "reply_s": None,
        "prompt_tokens": None,
        "reusable_tokens": None,
        # what the server itself said of its prefill and cache (the Result's ``prefill``);
        # None for plans and Results from before it
        "server_prefill": result.get("prefill")
        if isinstance(result.get("prefill"), dict)
        else None,
    }
    if events is None:
        return figures
    line = read_events(events)
    if plan and not figures["iterations"]:  # a plan has steps, not turns: count its calls
        figures["iterations"] = len(line.requests)
    figures.update(
        requests=len(line.requests),
        # A plan's diagnoses are always constrained (to a correction's schema): they are not
        # the parser's retries of a broken call.
        constrained=None if plan else sum(1 for r in line.requests if r.constrained),
        nudges=line.nudges,
        guardrails=dict(sorted(line.guardrails.items())),
        ttft_s=[round(r.ttft_s, 3) for r in line.requests if r.ttft_s is not None],
        ttft_exact=sum(1 for r in line.requests if r.exact),
        reply_s=round(sum(r.reply_s or 0 for r in line.requests), 3),
    )
    if not plan:
        figures["prompt_tokens"] = sum(r.tokens_in for r in line.requests)
        figures["reusable_tokens"] = reusable_tokens(line.requests)
    return figures
