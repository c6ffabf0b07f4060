"""``--output-schema FILE``: the final answer as JSON that validates against a JSON schema.

Servers refuse or ignore a schema sent alongside tools (Ollama's ``format``, llama-server's
``response_format``/``json_schema``, an embedded grammar), so the tool loop runs as usual and,
once it ends with an answer, one more request without tools asks for the answer as JSON,
constrained by the schema where the backend can (``ChatOptions.format``: each backend turns it
into its own form). The reply is validated with ``jsonschema`` all the same (a backend may
ignore the format, a schema may say more than a grammar can); if it does not validate, the
model is told why and asked once more. The value is the Result's ``answer_json``; a run whose
answer still does not validate fails, with the reason in ``error``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from localhand.errors import ModelError
from localhand.events import EventBus, ModelReply, ModelRequest, Warning
from localhand.models.base import ChatOptions

if TYPE_CHECKING:
    from localhand.models.base import ChatModel
    from localhand.types import Message, Result

ASK = (
    "Now give your final answer as JSON only, no other text, that follows this JSON "
    "schema:\n{schema}"
)
AGAIN = (
    "That JSON does not follow the schema: {problem}\n"
    "Answer again with JSON only that follows the schema."
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def problem_with(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """The JSON in ``text`` (a code fence around it is forgiven) and what is wrong with it
    under ``schema``, or None when it validates."""
    from jsonschema import validators  # jsonschema loads only when used

    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        return None, f"it is not valid JSON ({exc})"
    errors = sorted(validators.validator_for(schema)(schema).iter_errors(value), key=str)
    if not errors:
        return value, None
    first = errors[0]
    where = "/".join(str(part) for part in first.absolute_path) or "the top level"
    return value, f"at {where}: {first.message}"


def answer_as_json(
    result: Result,
    messages: Sequence[Message],
    model: ChatModel,
    schema: dict[str, Any],
    bus: EventBus,
) -> None:
    """``result``'s ``answer_json``, asked of ``model`` after the run's conversation
    (``messages``); only a run that ended with an answer is asked. One whose JSON does not
    follow ``schema`` fails, with the reason in ``error``."""
    if result.termination_reason != "final_answer" or result.status == "error":
        return
    task_id = result.task_id
    ask = ASK.format(schema=json.dumps(schema, ensure_ascii=False))
    conversation = [*messages, {"role": "user", "content": ask}]
    for attempt in (1, 2):
        iteration = result.iterations_used + attempt
        bus.emit(
            ModelRequest(
                task_id=task_id,
                iteration=iteration,
                messages=len(conversation),
                constrained=True,
            )
        )
        started = time.perf_counter()
        try:
            reply = model.chat(conversation, None, ChatOptions(format=schema))
        except ModelError as exc:
            return _failed(result, f"the answer as JSON could not be asked for: {exc}")
        bus.emit(ModelReply.of(reply, task_id=task_id, iteration=iteration, started=started))
        result.tokens_in += reply.usage.prompt_tokens
        result.tokens_out += reply.usage.completion_tokens
        value, problem = problem_with(reply.content, schema)
        if problem is None:
            result.answer_json = value
            return None
        bus.emit(Warning(task_id=task_id, message=f"the answer as JSON: {problem}"))
        conversation += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": AGAIN.format(problem=problem)},
        ]
    return _failed(result, f"the answer did not follow the output schema: {problem}")


def _failed(result: Result, why: str) -> None:
    result.status, result.error = "fail", why
