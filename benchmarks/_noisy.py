"""A noisy model: replays a correct trajectory, failing the way small models do.

The model keeps a pointer into the trajectory. Each request it answers with the current step,
corrupted with some probability; before answering, it looks at what the agent sent back to
decide whether its previous reply really ran: for a step that changes files it looks at the
workspace, for one that reads it looks for the step's marker in the tool results that follow
its last reply. If the step ran, the pointer moves on; if not (the agent could not read the
call, rejected it, or ran it with wrong arguments), it tries the same step again, as a model
does after an error message or a nudge. So every agent sees the same intended trajectory, and
"extra iterations" is exactly what its handling of the noise cost.

Corruption decisions come from a random stream keyed by (seed, trajectory, reply number), so
two agents at the same point of the same replay get the same corruption.

Format noise (``FORMAT_KINDS``; the model meant the right call and botched its form, or the
server failed):

- ``other_format``: no native call; the call is written in the text in another model family's
  format (Hermes/Qwen ``<tool_call>``, Mistral ``[TOOL_CALLS]``, Llama 3.1 ``<|python_tag|>``,
  Llama 3.2 ``<function=…>``, pythonic ``[f(x=1)]``, a fenced JSON block);
- ``stringly``: numbers and booleans in the arguments sent as strings (``"20"``, ``"true"``);
- ``double_encoded``: the arguments JSON-encoded once more than the wire expects;
- ``think_only``: the call appears only inside the thinking (the ``thinking`` field or a
  ``<think>`` block), with no call after it;
- ``empty``: an empty reply;
- ``truncated``: the reply cut off at the length limit (``done_reason: length``);
- ``repeated``: the previous call sent again instead of the next one;
- ``http_500``: the server answers 500 (a runner crash); the agent should retry.

Behaviour (``BEHAVIOUR_KINDS``; a well-formed reply that does the wrong thing, which no parser
can see):

- ``premature``: a final answer ("Done, the task is complete.") at a step that is not the last
  (in the agent's vocabulary: text, smolagents' ``final_answer`` call, mini-swe-agent's submit
  command);
- ``false_claim``: a final answer saying the work is done and the checks pass, sent instead of
  the trajectory's last step that changes the workspace (``last_work``), so the claim is false;
- ``wrong_content``: the right tool and path, but written text (``edit_file``'s ``new_text``,
  ``write_file``'s ``content``) that lacks what the step needs: the text the step's
  expectation names, with one character changed (a digit off by one, or an identifier or word
  missing its last letter). The model believes it did the step and moves on. If a later step
  then fails after a well-formed reply (the tests still fail, the script does not print what
  it should), it notices, repairs the file with a call of its own and tries that step again;
  if nothing later reveals it, it gives its final answer with the file still wrong.

Rates are per reply, counted where the kind applies (a reply to which a kind does not apply is
sent clean: ``stringly`` needs a number in the arguments, ``false_claim`` the ``last_work``
step, ``wrong_content`` a step that writes a file).

Correlated errors: with ``correlation`` c, a reply that follows a corrupted reply repeats the
same kind with probability c (where the kind applies; else the usual draw), as small models
repeat a mistake once they have made it. A server error (``http_500``) is not a model's
mistake and is not repeated this way. c is 0 in the "format noise" profile, so that profile
replays exactly what it replayed before the behaviour kinds existed.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from pathlib import Path
from typing import Any

from _tasks import Step, Trajectory, is_text_final, render_call

FORMAT_KINDS = (
    "other_format",
    "stringly",
    "double_encoded",
    "think_only",
    "empty",
    "truncated",
    "repeated",
    "http_500",
)
BEHAVIOUR_KINDS = ("premature", "false_claim", "wrong_content")
KINDS = FORMAT_KINDS + BEHAVIOUR_KINDS
EARLY_FINALS = ("premature", "false_claim")

DEFAULT_RATES: dict[str, float] = {
    "other_format": 0.06,
    "stringly": 0.06,
    "double_encoded": 0.03,
    "think_only": 0.03,
    "empty": 0.03,
    "truncated": 0.02,
    "repeated": 0.03,
    "http_500": 0.03,
}
"""Format noise, probability per reply (about 0.29 in all). Chosen, not measured: the order of
magnitude reported for 1-8B models without grammar-constrained decoding; every script takes a
scale."""

BEHAVIOUR_RATES: dict[str, float] = {
    "premature": 0.03,
    "false_claim": 0.10,
    "wrong_content": 0.05,
}
"""Behaviour, probability per reply where the kind applies: a premature final answer in 3% of
replies; a false claim of success in 10% of the replies made at the last step that changes the
workspace; wrong content in 5% of the calls that write a file. Chosen, not measured."""

DEFAULT_CORRELATION = 0.5

PROFILES: dict[str, tuple[dict[str, float], bool]] = {
    "format": (DEFAULT_RATES, False),
    "format+behaviour": ({**DEFAULT_RATES, **BEHAVIOUR_RATES}, True),
}
"""Noise profiles: their rates, and whether ``--correlation`` applies (else 0)."""

PREMATURE_TEXTS = (
    "Done, the task is complete.",
    "I have finished the task.",
    "The changes are made. Task complete.",
)
CLAIM_TEXT = "All done: I made the change and ran the checks; they all pass."

FAMILIES = ("hermes", "mistral", "llama31", "llama32", "pythonic", "fenced")

wire = threading.local()
"""``wire.path`` is set by the server for each request: ``/api/chat`` or ``/v1/...``."""


def _uniform(seed: str) -> random.Random:
    return random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


def last_work(steps: list[Step]) -> int | None:
    """The index of the trajectory's last step that changes the workspace."""
    found = [i for i, s in enumerate(steps) if "file" in (s.get("expect") or {})]
    return found[-1] if found else None


class NoisyModel:
    """Answers the requests of one run of one trajectory (see the module docstring)."""

    def __init__(
        self,
        trajectory: Trajectory,
        dialect: str,
        workspace: str | Path,
        rates: dict[str, float] | None = None,
        seed: int = 0,
        correlation: float = 0.0,
    ) -> None:
        self.trajectory = trajectory
        self.steps: list[Step] = trajectory["steps"]
        self.dialect = dialect
        self.workspace = Path(workspace)
        self.rates = dict(DEFAULT_RATES if rates is None else rates)
        self.seed = seed
        self.correlation = correlation
        self.last_work = last_work(self.steps)
        self.pointer = 0
        self.replies = 0
        self.faults = 0
        self.corruptions: list[dict[str, Any]] = []
        self.items: list[Any] = []
        self.final_sent = False
        self.botched: list[dict[str, Any]] = []
        """Wrong contents the model believes were right steps: ``{"step", "repair", "bad"}``."""
        self.repairing: dict[str, Any] | None = None
        """The botched step being repaired now, when the model has noticed one."""
        self.repairs = 0
        self.wrong_landed = 0
        self.early_finals: list[dict[str, Any]] = []
        """Early final answers sent (premature, false claims), and whether the agent asked for
        more after one (``refused``)."""
        self._assistants = -1
        self._last_kind: str | None = None
        self._sent: dict[str, Any] = {"kind": None}
        """What the last reply was: its corruption kind, and the wrong content it carried."""
        self._lock = threading.Lock()

    # -- what the server calls ----------------------------------------------------------------
    def __call__(self, body: dict[str, Any]) -> Any:
        with self._lock:
            messages = body.get("messages") or []
            assistants = sum(1 for m in messages if m.get("role") == "assistant")
            new_turn = assistants != self._assistants and self.replies
            if new_turn:
                self._advance(messages)
            self._assistants = assistants
            number = self.replies + self.faults
            rng = _uniform(f"{self.seed}:{self.trajectory['id']}:{number}")
            kind, item = self._choose(rng, number)
            if kind is not None:
                self.corruptions.append({"reply": number, "step": self.pointer, "kind": kind})
            if kind == "http_500":
                self.faults += 1
            else:
                self.replies += 1
                self._last_kind = kind
                if kind in EARLY_FINALS:
                    self.early_finals.append(
                        {"reply": number, "step": self.pointer, "kind": kind, "refused": False}
                    )
                at_final = self.repairing is None and "final" in self.steps[self.pointer]
                if at_final and kind is None:
                    self.final_sent = True
            self.items.append(item)
            return _to_item(item)

    def stats(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for c in self.corruptions:
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
        return {
            "trajectory": self.trajectory["id"],
            "steps": len(self.steps),
            "pointer": self.pointer,
            "reached_final": self.pointer == len(self.steps) - 1,
            "final_sent": self.final_sent,
            "replies": self.replies,
            "faults": self.faults,
            "corruptions": kinds,
            "early_finals": self.early_finals,
            "wrong_content_landed": self.wrong_landed,
            "wrong_content_repaired": self.repairs,
            "wrong_content_left": len(self.botched),
            "last_reply": self._ending(),
        }

    def _ending(self) -> str:
        """What the model's last reply was, for a run that ended on it: an early final
        (``premature``, ``false_claim``); the final answer over a wrong content it never
        noticed (``wrong_content``); the final answer (``final``); else the last reply's
        corruption, or ``call`` for a clean call."""
        kind = self._sent["kind"]
        if kind is None and self.final_sent and self.pointer == len(self.steps) - 1:
            return "wrong_content" if self.botched else "final"
        return str(kind or "call")

    # -- progress -------------------------------------------------------------------------------
    def current(self) -> Step:
        """The call the model means to make now: a repair, or the trajectory's step."""
        return self.repairing or self.steps[self.pointer]

    def _advance(self, messages: list[dict[str, Any]]) -> None:
        """A new turn: the agent sent back what came of the last reply. Decide what the model
        does next (see the module docstring)."""
        if self.early_finals and self._sent["kind"] in EARLY_FINALS:
            self.early_finals[-1]["refused"] = True  # the agent asked for more after it
        sent = self._sent
        # a botched file may have been put right meanwhile (a repeated call wrote it again)
        self.botched = [
            b
            for b in self.botched
            if b["repair"] is self.repairing
            or not _changed_as_expected(self.workspace, b["repair"]["expect"])
        ]
        if self.repairing is not None:
            if _changed_as_expected(self.workspace, self.repairing["expect"]):
                self.botched = [b for b in self.botched if b["repair"] is not self.repairing]
                self.repairing = None
                self.repairs += 1
            return
        if sent["kind"] == "wrong_content" and sent.get("bad") is not None:
            bad = sent["bad"]
            if _landed(self.workspace, bad):  # it ran: the model believes the step is done
                self.wrong_landed += 1
                self.botched.append(bad)
                self.pointer = min(self.pointer + 1, len(self.steps) - 1)
            return
        if self._step_ran(messages):
            self.pointer = min(self.pointer + 1, len(self.steps) - 1)
        elif sent["kind"] is None and self.botched and "final" not in self.steps[self.pointer]:
            # a well-formed call that did not do what it should: the model looks back and
            # finds the file it got wrong
            self.repairing = self.botched[0]["repair"]

    def _step_ran(self, messages: list[dict[str, Any]]) -> bool:
        step = self.steps[self.pointer]
        if "final" in step:
            return False
        expect = step["expect"]
        if "file" in expect:
            return _changed_as_expected(self.workspace, expect)
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        results = [
            str(m.get("content") or "")
            for m in messages[last + 1 :]
            if m.get("role") in ("tool", "user")
        ]
        forms = _marker_forms(expect["marker"])
        return any(form in text for text in results for form in forms)

    # -- replies ---------------------------------------------------------------------------------
    def _choose(self, rng: random.Random, number: int) -> tuple[str | None, dict[str, Any]]:
        """The kind of this reply (None: clean) and the reply itself."""
        self._sent = {"kind": None}
        previous = self._last_kind
        if self.correlation and previous is not None and previous != "http_500":
            again = _uniform(f"{self.seed}:{self.trajectory['id']}:{number}:again")
            if again.random() < self.correlation:
                item = self._reply(previous, rng)
                if item is not None:
                    self._sent["kind"] = previous
                    return previous, item
        kind = self._draw(rng)
        item = self._reply(kind, rng)
        if item is None:  # the kind does not apply to this step: a clean reply
            kind, item = None, self._clean(self.current())
        self._sent["kind"] = kind
        return kind, item

    def _draw(self, rng: random.Random) -> str | None:
        roll = rng.random()
        for kind in KINDS:
            roll -= self.rates.get(kind, 0.0)
            if roll < 0:
                return kind
        return None

    def _clean(self, step: Step) -> dict[str, Any]:
        if is_text_final(step, self.dialect):
            return {"content": step["final"]}
        name, args = render_call(step, self.dialect)
        return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": args}}]}

    def _reply(self, kind: str | None, rng: random.Random) -> Any:
        step = self.current()
        if kind is None:
            return self._clean(step)
        if kind == "http_500":
            return {"fault": 500}
        if kind == "empty":
            return {"content": ""}
        if kind == "repeated":
            if self.repairing is not None or self.pointer == 0:
                return None
            if "final" in self.steps[self.pointer - 1]:
                return None
            return self._clean(self.steps[self.pointer - 1])
        if kind in BEHAVIOUR_KINDS:
            return self._behaviour(kind, step, rng)
        text_final = is_text_final(step, self.dialect)
        if kind == "truncated":
            text = (
                step["final"]
                if text_final
                else _as_text("hermes", *render_call(step, self.dialect))
            )
            cut = max(1, int(len(text) * rng.uniform(0.3, 0.8)))
            return {"content": text[:cut], "done_reason": "length"}
        if text_final:
            return None  # the other kinds corrupt calls, and this reply is plain text
        name, args = render_call(step, self.dialect)
        if kind == "other_format":
            family = rng.choice(FAMILIES)
            return {"content": _as_text(family, name, args)}
        if kind == "think_only":
            call_text = _as_text("hermes", name, args)
            if rng.random() < 0.5:
                return {"content": "", "thinking": f"Next I should call {name}.\n{call_text}"}
            return {"content": f"<think>\nNext I should call {name}.\n{call_text}\n</think>"}
        if kind == "stringly":
            if not any(isinstance(v, bool | int | float) for v in args.values()):
                return None
            quoted = {k: _quote(v) for k, v in args.items()}
            return {
                "content": "",
                "tool_calls": [{"function": {"name": name, "arguments": quoted}}],
            }
        if kind == "double_encoded":
            once = json.dumps(args)
            # native arguments are an object, so a string is one encoding too many; OpenAI's are
            # already a JSON string, so one more encoding makes a string of a string
            encoded = once if getattr(wire, "path", "").startswith("/api/") else json.dumps(once)
            return {
                "content": "",
                "tool_calls": [{"function": {"name": name, "arguments": encoded}}],
            }
        raise ValueError(f"unknown corruption {kind!r}")

    def _behaviour(self, kind: str, step: Step, rng: random.Random) -> Any:
        if self.repairing is not None or "final" in step:
            return None  # a repair is done deliberately; the last step is the final answer
        if kind == "premature":
            return self._final(rng.choice(PREMATURE_TEXTS))
        if kind == "false_claim":
            return self._final(CLAIM_TEXT) if self.pointer == self.last_work else None
        if kind == "wrong_content":
            bad = wrong_content(step)
            if bad is None:
                return None
            self._sent["bad"] = bad
            return self._clean(bad["step"])
        raise ValueError(f"unknown corruption {kind!r}")

    def _final(self, text: str) -> dict[str, Any]:
        """A final answer with ``text``, in the dialect's form."""
        return self._clean({"final": text})


def corrupt(text: str) -> str:
    """``text`` with one character changed, as a small model gets a detail wrong: its last
    digit off by one, else the last letter of its last word dropped."""
    for i in range(len(text) - 1, -1, -1):
        if text[i].isdigit():
            return text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
    for i in range(len(text) - 1, -1, -1):
        if text[i].isalpha():
            return text[:i] + text[i + 1 :]
    return text + "?"


def wrong_content(step: Step) -> dict[str, Any] | None:
    """A well-formed version of ``step`` (an ``edit_file`` or ``write_file`` that should leave
    ``expect["contains"]`` in a file) whose text lacks it, and the call that repairs it:
    ``{"step", "repair", "path", "good", "bad"}``; None for any other step."""
    tool, expect = step.get("tool"), step.get("expect") or {}
    field = {"edit_file": "new_text", "write_file": "content"}.get(str(tool))
    if field is None or "file" not in expect:
        return None
    good = expect["contains"]
    text = step["args"][field]
    if good not in text:
        return None
    bad = corrupt(good)
    wrong_text = text.replace(good, bad)
    wrong = {**step, "args": {**step["args"], field: wrong_text}}
    if tool == "edit_file":
        args = {"path": step["args"]["path"], "old_text": wrong_text, "new_text": text}
        repair = {"tool": "edit_file", "args": args, "expect": expect}
    else:
        repair = {**step}
    return {"step": wrong, "repair": repair, "path": expect["file"], "good": good, "bad": bad}


def _read(workspace: Path, rel: str) -> str | None:
    try:
        return (workspace / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _changed_as_expected(workspace: Path, expect: dict[str, str]) -> bool:
    text = _read(workspace, expect["file"])
    return text is not None and expect["contains"] in text


def _landed(workspace: Path, bad: dict[str, Any]) -> bool:
    """Whether the wrong content is in the file (the agent ran the call)."""
    text = _read(workspace, bad["path"])
    return text is not None and bad["bad"] in text and bad["good"] not in text


def _marker_forms(marker: str) -> set[str]:
    """The marker as it may appear in a tool result: as is, or JSON-escaped inside a JSON
    observation (mini-swe-agent's template runs the output through Jinja's ``tojson``)."""
    escaped = json.dumps(marker)[1:-1]
    html_safe = escaped
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        html_safe = html_safe.replace(char, code)
    return {marker, escaped, html_safe}


def _quote(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _as_text(family: str, name: str, args: dict[str, Any]) -> str:
    """The call as a model of ``family`` writes it in plain text."""
    body = json.dumps({"name": name, "arguments": args})
    if family == "hermes":
        return f"<tool_call>\n{body}\n</tool_call>"
    if family == "mistral":
        return f"[TOOL_CALLS][{body}]"
    if family == "llama31":
        return "<|python_tag|>" + json.dumps({"name": name, "parameters": args})
    if family == "llama32":
        return f"<function={name}>{json.dumps(args)}</function>"
    if family == "pythonic":
        inner = ", ".join(
            f"{k}={v!r}" if isinstance(v, bool) else f"{k}={json.dumps(v)}" for k, v in args.items()
        )
        return f"[{name}({inner})]"
    if family == "fenced":
        return f"I will call {name} now.\n```json\n{body}\n```"
    raise ValueError(family)


def _to_item(item: dict[str, Any]) -> Any:
    """A JSON-able reply description as a FakeOllama script item."""
    if "fault" in item:
        from localhand.testing import Fault

        return Fault.status(int(item["fault"]))
    return item


def clean_replies(trajectory: Trajectory, dialect: str) -> list[dict[str, Any]]:
    """The trajectory's replies, uncorrupted, in order: a replay script for a clean run."""
    model = NoisyModel(trajectory, dialect, ".", rates={})
    return [model._clean(step) for step in trajectory["steps"]]
