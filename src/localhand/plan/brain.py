"""The brain: when a step fails in agentic mode, ask the model what to do about it.

It sends the failed step, its output and the rolling memory, asks for a correction with
constrained decoding (Ollama's ``format`` set to ``CORRECTION_SCHEMA``), and still accepts
one written as plain text, since other backends and small models ignore the schema. It never
raises: whatever goes wrong becomes an ``abort`` that says why, so the executor always has a
clean answer. The exception, if any, is kept in ``last_error`` for the executor to read (a
guardrail that refused the call must end the plan with its own reason, not as an abort).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from localhand.models.base import ChatModel, ChatOptions
from localhand.parsing.json_load import load_at, loads_lenient
from localhand.parsing.json_scan import scan_spans
from localhand.parsing.thinking import split_thinking
from localhand.plan.model import Plan, Step
from localhand.plan.mutator import ProtoStep
from localhand.plan.runstep import StepOutcome
from localhand.types import Message

Action = Literal["retry", "modify", "insert_steps", "skip", "abort"]
ACTIONS: tuple[str, ...] = ("retry", "modify", "insert_steps", "skip", "abort")
MAX_NEW_STEPS = 3
OUTPUT_CHARS = 3000
MAX_REPLY_CHARS = 50_000


def steps_schema(most: int, *more: str) -> dict[str, Any]:
    """The JSON schema of a list of at most ``most`` steps, each a ``description`` and a
    ``command`` and the text fields ``more``. The draft asks for its plan with it too."""
    texts = ("description", "command", *more)
    properties = {name: {"type": "string"} for name in texts}
    step = {"type": "object", "properties": properties, "required": list(texts[:2])}
    return {"type": "array", "maxItems": most, "items": step}


CORRECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "reason": {"type": "string"},
        "new_command": {"type": "string"},
        "new_steps": steps_schema(MAX_NEW_STEPS),
    },
    "required": ["action", "reason"],
}

SYSTEM_PROMPT = """\
You repair a plan of shell commands that runs step by step. A step just failed. Read its \
output, find the cause, and answer with ONE JSON object:
{"action": "retry" | "modify" | "insert_steps" | "skip" | "abort", "reason": "...", \
"new_command": "...", "new_steps": [{"description": "...", "command": "..."}]}

- retry: run the step again, optionally as new_command (a transient failure).
- modify: replace the step's command with new_command (the command itself is wrong).
- insert_steps: run up to 3 new_steps first (something missing: a directory, a file, a \
dependency), then the failed step again.
- skip: the step is not needed for the goal; go on with the next one.
- abort: the goal cannot be reached safely; stop the plan.

Commands run with bash in the workspace, with no one at the keyboard. Prefer the smallest \
fix. Never use sudo, never delete outside the workspace. Reply with the JSON object only."""

_ALIASES = {
    "insert": "insert_steps",
    "insertsteps": "insert_steps",
    "insert-steps": "insert_steps",
    "replace": "modify",
    "cancel": "abort",
}
_KEYS = {
    "newcommand": "new_command",
    "command": "new_command",
    "newsteps": "new_steps",
    "steps": "new_steps",
}
_LINE = re.compile(
    r"^[ \t*_`-]*(action|reason|new_command)[*_`]*[ \t]*[:=][ \t]*(.+)$", re.I | re.M
)


@dataclass(frozen=True, slots=True)
class Correction:
    """What to do about a failed step."""

    action: Action
    reason: str
    new_command: str | None = None
    new_steps: tuple[ProtoStep, ...] = ()
    dropped_steps: int = 0
    """Proposed steps beyond ``MAX_NEW_STEPS``, discarded."""


class CorrectionError(ValueError):
    """A reply that holds no usable correction; the message says what was wrong."""


class Brain:
    """Diagnoses failed steps with ``model``."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.last_error: BaseException | None = None

    def diagnose(
        self, plan: Plan, step: Step, outcome: StepOutcome, memory: str, note: str = ""
    ) -> Correction:
        """A correction for ``step``'s failure; never raises."""
        self.last_error = None
        try:
            messages = self.messages(plan, step, outcome, memory, note)
            reply = self.model.chat(messages, options=ChatOptions(format=CORRECTION_SCHEMA))
            try:
                return parse_correction(reply.content)
            except CorrectionError:
                if not reply.thinking:
                    raise
                return parse_correction(reply.thinking)
        except Exception as exc:  # never raises: any failure is an abort with its reason
            self.last_error = exc
            return Correction("abort", f"the brain could not diagnose the failure: {exc}")

    def messages(
        self, plan: Plan, step: Step, outcome: StepOutcome, memory: str, note: str
    ) -> list[Message]:
        overview = "\n".join(
            f"  {i}. [{s.status}] {s.id}: {s.command}" + ("   <- failed" if s.id == step.id else "")
            for i, s in enumerate(plan.steps, start=1)
        )
        if outcome.refused:
            what = f"It did not run: {outcome.refused}"
        elif outcome.timed_out:
            what = "It timed out and was killed."
        else:
            what = f"Exit code: {outcome.exit_code}"
        tail = outcome.output.strip()[-OUTPUT_CHARS:] or "(no output)"
        text = (
            f"Goal: {plan.goal}\n\nPlan:\n{overview}\n\n"
            f"Failed step {step.id}: {step.description}\nCommand: {step.command}\n"
            f"Attempt {step.attempts}. {what}\nOutput:\n```\n{tail}\n```\n\n"
            f"What happened so far:\n{memory}"
        )
        if note:
            text += f"\n\n{note}"
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]


def parse_correction(text: str) -> Correction:
    """The correction in ``text``: a JSON object (alone, fenced or amid prose, repaired if
    slightly broken) or ``action: ...`` / ``reason: ...`` lines. ``CorrectionError`` if none."""
    visible, _ = split_thinking((text or "")[:MAX_REPLY_CHARS])
    data = json_object(visible, _has_action) or _key_lines(visible)
    if data is None:
        snippet = " ".join(visible.split())[:120] or "(empty)"
        raise CorrectionError(f"the reply holds no correction (not valid JSON): {snippet!r}")
    return _validated(data)


def json_object(text: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The JSON object ``text`` is (read leniently), or else the first one in it, for which
    ``wanted`` holds; None when there is none. The draft reads its plan with it too."""
    ok, value = loads_lenient(text)
    if ok and isinstance(value, dict) and wanted(value):
        return value
    for span in scan_spans(text):
        if text[span.start] != "{":
            continue
        loaded = load_at(text, span)
        if loaded is not None and isinstance(loaded.value, dict) and wanted(loaded.value):
            return loaded.value
    return None


def _has_action(value: dict[str, Any]) -> bool:
    return any(str(key).lower() == "action" for key in value)


def _key_lines(text: str) -> dict[str, Any] | None:
    found = {m.group(1).lower(): m.group(2).strip().strip("`") for m in _LINE.finditer(text)}
    return found if "action" in found else None


def _validated(raw: dict[str, Any]) -> Correction:
    data = {_KEYS.get(_snake(key), _snake(key)): value for key, value in raw.items()}
    action = str(data.get("action") or "").strip().lower()
    action = _ALIASES.get(action, action)
    if action not in ACTIONS:
        raise CorrectionError(
            f"unknown action {data.get('action')!r}; expected one of {', '.join(ACTIONS)}"
        )
    reason = str(data.get("reason") or "").strip() or "(no reason given)"
    command = data.get("new_command")
    command = command.strip() if isinstance(command, str) and command.strip() else None
    steps = _proto_steps(data.get("new_steps"))
    if action == "modify" and command is None:
        raise CorrectionError("action 'modify' needs a non-empty new_command")
    if action == "insert_steps" and not steps:
        raise CorrectionError("action 'insert_steps' needs at least one step with a command")
    kept = tuple(steps[:MAX_NEW_STEPS]) if action == "insert_steps" else ()
    dropped = len(steps) - len(kept) if action == "insert_steps" else 0
    return Correction(action, reason, command, kept, dropped)  # type: ignore[arg-type]


def _proto_steps(value: Any) -> list[ProtoStep]:
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    steps = []
    for item in value:
        if isinstance(item, str) and item.strip():
            steps.append(ProtoStep(item.strip(), item.strip()))
        elif isinstance(item, dict):
            command = str(item.get("command") or item.get("cmd") or "").strip()
            if command:
                description = str(item.get("description") or command).strip()
                steps.append(ProtoStep(description, command))
    return steps


def _snake(key: Any) -> str:
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", str(key)).lower()
    return text.replace("-", "_").replace(" ", "_")
