from __future__ import annotations

import pytest

from localhand.run.routing import route


@pytest.mark.parametrize(
    "description",
    [
        "Fix the bug in calc.py so check_calc.py passes",
        "Add a --verbose flag to the CLI",
        "Rename the function foo to bar everywhere",
        "Run the tests and make them pass",
        "How do I fix the failing test? Please fix it.",
        "The parser crashes on empty input",
        # bare orders: "do" opens them as it opens questions
        "Do it.",
        "do it",
        "Just do it.",
        "OK, do it.",
        "Do the refactoring described in TODO.md",
        "Go ahead.",
        "What is left? Do it.",
        # polite requests are requests
        "Could you fix the failing test?",
        "Can you add a test for parse()?",
    ],
)
def test_tasks_that_change_or_run_things_are_agentic(description: str) -> None:
    decision = route(description)
    assert decision.agentic is True
    assert decision.reason


@pytest.mark.parametrize(
    "description",
    [
        "Explain what this module does",
        "What does calc.py do?",
        "Draft a commit message for this diff",
        "Summarize the README",
        "Why is add() slow?",
        # "do" asking, not ordering: a question mark, or its subject after it
        "Do the tests pass?",
        "Do you know why add() is slow",
        "Do we need the cache? Explain.",
        "Does calc.py handle zero?",
        "Why is it slow? Do you know?",
        "Can you explain the parser?",
        "What should I do?",
    ],
)
def test_questions_and_text_requests_are_simple(description: str) -> None:
    decision = route(description)
    assert decision.agentic is False
    assert "question" in decision.reason or "text" in decision.reason


def test_explicit_choice_wins_and_is_recorded() -> None:
    assert route("Explain calc.py", explicit=True).agentic is True
    assert route("Fix calc.py", explicit=False).agentic is False
    assert "explicitly" in route("Fix calc.py", explicit=False).reason


def test_a_bare_order_says_why_it_is_a_task() -> None:
    assert route("Do it.").reason == "gives an order ('do')"
    assert route("What is left? Do it.").reason == "a question that also gives an order ('do')"
    assert route("Fix calc.py").reason == "asks to fix something in the workspace"
