"""Routing: does a task need the tool loop, or is one streamed answer enough?

Explicit flags win. Otherwise a task that asks to change files or run things is agentic; a
question or a request for text about the code is simple. When unsure, the loop is chosen: it
can do everything the simple path can, only slower.

"Do" opens both questions ("Do the tests pass?", "Do you know why…") and bare imperatives
("Do it.", "Do the refactoring in TODO.md"). Only the question is simple: a sentence that
opens with "do" asks something when it ends with a question mark or "do" is followed by its
subject (I, you, we, they); otherwise it is an order, and orders go to the loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ACTION = re.compile(
    r"\b(fix|change|edit|modify|update|create|write|add|remove|delete|rename|refactor|implement|"
    r"run|test|install|build|make|move|replace|generate|format|lint|upgrade|migrate|patch|"
    r"commit|convert|set up|setup|debug|repair|resolve|clean)\b",
    re.IGNORECASE,
)
_ORDER = re.compile(r"(do|go ahead|proceed|continue|carry on|finish|apply)\b", re.IGNORECASE)
"""Verbs that order the work itself ("Do it.", "Go ahead."): tasks when they open a sentence,
but too common elsewhere ("How do I…") to count anywhere in the text as ``_ACTION`` does."""
_QUESTION = re.compile(
    r"^\s*(explain|what|why|how|which|who|when|where|describe|summari[sz]e|draft|suggest|"
    r"review|list|tell|is|are|does|do|can|could|should|would|compare|propose|outline)\b",
    re.IGNORECASE,
)
_DO_SUBJECT = re.compile(r"\s+(i|you|we|they)\b", re.IGNORECASE)
"""After "do", the subject that makes it a question ("Do you…") rather than an order."""
_TEXT_ONLY = re.compile(r"\b(commit message|explanation|summary|docstring for me)\b", re.IGNORECASE)


_SENTENCE = re.compile(r"[^.?!;\n]*[.?!;\n]*")
_LEAD = re.compile(
    r"^\s*(?:(?:please|then|and|also|now|just|so|ok|okay|yes)\b[\s,]*"
    r"|(?:can|could|would|will)\s+you\s+)*",
    re.IGNORECASE,
)
"""What may come before an order's verb: "Please", "Then", "OK,", "Could you"."""


def _sentences(text: str) -> list[tuple[str, bool]]:
    """Each sentence of ``text`` without its end, and whether that end is a question mark."""
    found = []
    for match in _SENTENCE.finditer(text):
        whole = match.group(0)
        sentence = whole.rstrip(".?!;\n")
        if sentence.strip():
            found.append((sentence, "?" in whole[len(sentence) :]))
    return found


def _asks(sentence: str, question_mark: bool) -> bool:
    """Whether the sentence opens as a question or a request for text."""
    opening = _QUESTION.match(sentence)
    if opening is None:
        return False
    if opening.group(1).lower() != "do":
        return True
    return question_mark or _DO_SUBJECT.match(sentence, opening.end()) is not None


def _imperative(text: str) -> str | None:
    """Why one of the text's sentences is a request for work ("asks to fix something in the
    workspace", "gives an order ('do')"), if one opens as such. A sentence that is itself a
    question ("Do you know?") orders nothing."""
    for sentence, question_mark in _sentences(text):
        lead = _LEAD.match(sentence)  # it matches the empty string too
        rest = sentence[lead.end() if lead else 0 :]
        action = _ACTION.match(rest)
        if action:
            return f"asks to {action.group(0).lower()} something in the workspace"
        if not _asks(rest, question_mark):
            order = _ORDER.match(rest)
            if order:
                return f"gives an order ('{order.group(1).lower()}')"
    return None


@dataclass(frozen=True, slots=True)
class Route:
    agentic: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"agentic": self.agentic, "reason": self.reason}


def route(description: str, explicit: bool | None = None) -> Route:
    """Decide how to run a task, with the reason recorded in the Result and the events."""
    if explicit is not None:
        flag = "--agentic" if explicit else "--simple"
        return Route(explicit, f"set explicitly ({flag} or the task's 'agentic' field)")
    text = description.strip()
    sentences = _sentences(text)
    first = sentences[0] if sentences else ("", False)
    if _asks(*first) or _TEXT_ONLY.search(text):
        # In a question, an action word counts only as a request of its own ("... Please fix
        # it.", "Could you fix it?"), not as a name in the question ("Why is add() slow?").
        action = _imperative(text)
        if action is None or _TEXT_ONLY.search(text):
            return Route(False, "asks a question or for text, and changes nothing")
        return Route(True, f"a question that also {action}")
    action = _imperative(text)
    if action:
        return Route(True, action)
    found = _ACTION.search(text)
    if found:
        return Route(True, f"asks to {found.group(0).lower()} something in the workspace")
    return Route(True, "no clear question: the tool loop can handle anything")
