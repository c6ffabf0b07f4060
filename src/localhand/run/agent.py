"""The ReAct loop: ask the model, parse, check the guardrails, run the tools, repeat.

``Agent.run`` reads like the data flow; each step is a small method a subclass can override.
Stopping is always a ``StopRun`` (a final answer included), caught once in ``run``; whatever
ends the run, the workspace is verified and a Result is returned and emitted.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from localhand.errors import (
    Cancelled,
    FinalAnswer,
    ModelError,
    ModelTimeout,
    NudgeExhausted,
    StopRun,
    WallClockTimeout,
)
from localhand.events import (
    Event,
    EventBus,
    ModelProgress,
    ModelReply,
    ModelRequest,
    Nudge,
    TaskFinished,
    TaskStarted,
    ToolCallEvent,
    Verification,
)
from localhand.events import Guardrail as GuardrailEvent
from localhand.events import Warning as WarningEvent
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.watch import Loop, Progress, watch_reply
from localhand.nesting import cut_deep
from localhand.parsing import ParsedReply, call_schema, parse_tool_calls
from localhand.run import gitstate
from localhand.run.context import COMPACT_AT, COMPACT_TO, compact_tool_results
from localhand.run.guardrails import Limits, RunState
from localhand.run.ledger import Ledger
from localhand.run.prompt import (
    NUDGE_EMPTY,
    NUDGE_MALFORMED,
    NUDGE_NO_ACTION,
    NUDGE_THINKING_ONLY,
    NUDGE_TRUNCATED,
    NUDGE_UNKNOWN_TOOL,
    build_messages,
)
from localhand.run.routing import Route
from localhand.run.snapshot import ChangeTracker
from localhand.run.tokens import estimate_prompt_tokens
from localhand.run.verify import Check, grade, run_checks
from localhand.tools import ToolRegistry, default_tools
from localhand.tools.deadline import deadline as tool_deadline
from localhand.tools.files import FileTools, reports_writes
from localhand.tools.registry import cap_calls
from localhand.types import CheckResult, Message, Reply, Result, ToolCall, ToolResult

SUMMARY_CHARS = 120
READ_ONLY_TOOLS = frozenset({"read_file", "list_directory", "search_files"})
"""Built-in tools that cannot modify the workspace (run_command and any custom tool can)."""
REPEAT_NOTE = (
    "\n[You made this exact call in your previous turn. Repeating it gives no new information: "
    "act on the result above, or do something different.]"
)

CUT_OFF = (
    "Your last reply was cut off after {tokens} tokens, the most one reply may have, so "
    "nothing in it was run. Reply shorter: make one tool call, with no long explanation "
    "before it{think}. For a large file, write a first part with write_file and add the rest "
    "with edit_file, or change only what needs changing with edit_file."
)

LOOPED = (
    "Your last reply kept repeating the same text, {span}, over and over, so it was stopped "
    "after {tokens} tokens and nothing in it was run. Do not repeat yourself: make one tool "
    "call, with no long explanation before it{think}, or give your final answer if the task "
    "is done."
)


class Agent:
    """Runs one task in one workspace with one model.

    ``bus`` receives every event; ``checks`` grade the workspace when the run ends.
    """

    def __init__(
        self,
        model: ChatModel,
        workspace: str | Path,
        *,
        tools: ToolRegistry | None = None,
        limits: Limits | None = None,
        checks: Sequence[Check] = (),
        bus: EventBus | None = None,
        task_id: str | None = None,
        require_action: bool = True,
        system_prompt: str | None = None,
        follow_up: Callable[[Result], str | None] | None = None,
        routing: Route | None = None,
        ledger: Ledger | None = None,
        context_files: Sequence[str] = (),
        watch_replies: bool | None = None,
    ) -> None:
        self.model = model
        self.workspace = Path(workspace).resolve()
        self.tools = tools if tools is not None else default_tools(self.workspace)
        self.limits = limits or Limits()
        self.checks = list(checks)
        self.bus = bus or EventBus()
        self.task_id = task_id or uuid.uuid4().hex[:12]
        self.require_action = require_action
        """Nudge once when the model answers before using any tool (small models often do)."""
        self.system_prompt = system_prompt
        self.follow_up = follow_up
        """Called with an unfinished Result; returns the path of a task file for what remains."""
        self.routing = routing
        self.ledger = ledger
        """Books every call in the store and checks the budget shared by all tasks per day."""
        self.context_files = tuple(context_files)
        if watch_replies is None:  # as the backend was set up (``--watch-replies``)
            watch_replies = bool(getattr(model, "watch_replies", False))
        self.watch_replies = watch_replies
        """Read each reply as a stream and stop one that loops (``localhand.models.watch``);
        off, each request is ``stream: false``. Only for backends with ``stream_reply``."""
        self._definitions = self.tools.definitions()
        reporting = [tool for tool in self.tools if reports_writes(tool.function)]
        self._reporting = {tool.name for tool in reporting}
        """Tools that report the files they write: no walk of the workspace after them."""
        self._file_tools: list[FileTools] = []
        for tool in reporting:
            if tool.function.__self__ not in self._file_tools:
                self._file_tools.append(tool.function.__self__)
        self._reset()

    def _reset(self) -> None:
        """Per-run state, so that one Agent can run several tasks in turn."""
        self.messages: list[Message] = []
        self.state = RunState()
        self._tools_used = 0
        self._asked_to_act = False
        self._warned_full = False
        self._last_content = ""
        self._reply_tokens = 0
        self._loop: Loop | None = None

    def run(self, task: str) -> Result:
        self._reset()
        self.tracker = ChangeTracker(self.workspace)
        self.take_written()  # writes before the run are in the tracker's baseline
        self.git_before = gitstate.record_before(self.workspace, self.task_id)
        self.messages = build_messages(task, self.workspace, self.system_prompt, self.context_files)
        self.emit(
            TaskStarted(
                task_id=self.task_id,
                description=task,
                model=self.model.name,
                workspace=str(self.workspace),
                max_iterations=self.limits.max_iterations or 0,
                routing=self.routing.to_dict() if self.routing else None,
            )
        )
        error: str | None = None
        try:
            while True:
                self.step()
        except StopRun as stop:
            reason, output = stop.reason, str(stop)
            if stop.guardrail:
                self.emit_guardrail(stop)
                output = self._last_content or f"Stopped: {stop}"
        except ModelError as exc:
            reason, output, error = "error", self._last_content, str(exc)
        except KeyboardInterrupt:
            reason, output = Cancelled.reason, self._last_content or "Cancelled by the user."
        self.tools.close()  # background processes the model started must not outlive the run
        return self.finish(reason, output, error)

    def step(self) -> None:
        """One iteration: one model turn and whatever it asks for."""
        self.limits.check_iterations(self.state)
        self.limits.check_wall_clock(self.state)
        reply, parsed = self.turn()
        self.messages.append(self.history_message(reply))
        self.state.iteration += 1
        changed = False
        if parsed.type == "tool_calls" and not parsed.truncated:
            self.limits.check_repetition(self.state, parsed.calls)
            self.act(parsed.calls)
            self.state.nudges = 0  # the model recovered: the next nudge starts a new streak
            changed = self.files_changed(parsed.calls)
        elif (
            parsed.type == "final_answer"
            and not parsed.truncated  # an answer cut off mid-way is not the answer: nudged
            and not parsed.needs_constrained_retry
            and not self.must_act_first()
        ):
            raise FinalAnswer(parsed.content)
        else:
            self.nudge(self.nudge_text(parsed))
        self.limits.check_progress(self.state, changed)

    def files_changed(self, calls: Sequence[ToolCall]) -> bool:
        """Whether this round's calls changed the contents of a file in the workspace.

        Reads change nothing, and the file tools report what they wrote: only a round with a
        call that may write without saying so (run_command, custom or unknown tools) needs a
        walk of the whole workspace, which takes milliseconds in a large one.
        """
        written = self.take_written()
        if all(call.name in READ_ONLY_TOOLS or call.name in self._reporting for call in calls):
            return bool(written) and bool(self.tracker.changes_in(written))
        return bool(self.tracker.new_changes(written))  # what they wrote: by content

    def take_written(self) -> set[Path]:
        """The files the file tools wrote since the last call."""
        written: set[Path] = set()
        for tools in self._file_tools:
            written |= tools.take_written()
        return written

    def turn(self) -> tuple[Reply, ParsedReply]:
        """Ask the model and parse its reply, retrying once constrained if the call was botched."""
        reply = self.query()
        parsed = self.parse(reply)
        if parsed.needs_constrained_retry and not parsed.truncated:
            # The model tried to call a tool and broke the syntax: ask again with the reply
            # constrained to a valid call (Ollama ignores `format` when tools are also sent).
            # A reply cut off at the length limit gets a nudge instead: the same call,
            # constrained, would be cut off again.
            retry = self.query(fmt=call_schema(self._definitions))
            reparsed = self.parse(retry)
            if reparsed.type == "tool_calls":
                return retry, reparsed
        return reply, parsed

    def must_act_first(self) -> bool:
        """Small models often "answer" an agentic task before touching the workspace; the first
        time that happens, they are nudged to use the tools instead."""
        if not self.require_action or self._tools_used or self._asked_to_act:
            return False
        self._asked_to_act = True
        return True

    def query(self, fmt: dict | None = None) -> Reply:
        """Ask the model for the next turn, within the budget and the wall clock."""
        prompt = self.keep_within_context()
        cost = self.estimate_cost(prompt)
        self.limits.check_budget(self.state, cost)
        if self.ledger is not None:
            self.ledger.check(cost)
        self.emit(
            ModelRequest(
                task_id=self.task_id,
                iteration=self.state.iteration + 1,
                messages=len(self.messages),
                constrained=fmt is not None,
            )
        )
        options = ChatOptions(format=fmt, timeout=self.limits.remaining_s(self.state))
        started = time.perf_counter()
        try:
            reply = self.ask(fmt, options)
        except ModelTimeout as exc:
            remaining = self.limits.remaining_s(self.state)
            if remaining is not None and remaining <= 1:
                raise WallClockTimeout(str(exc), guardrail="wall_clock") from exc
            raise
        for call in reply.tool_calls:  # before the event: the store's copy must not recurse
            cut_deep(call.arguments)
        self._reply_tokens = reply.usage.completion_tokens
        self.state.tokens_in += reply.usage.prompt_tokens
        self.state.tokens_out += reply.usage.completion_tokens
        if self.ledger is not None:
            self.ledger.book(self.task_id, reply.usage, self.model.name)
            self.state.cost += self.ledger.cost(reply.usage)
        self.emit(
            ModelReply.of(
                reply, task_id=self.task_id, iteration=self.state.iteration + 1, started=started
            )
        )
        return reply

    def ask(self, fmt: dict | None, options: ChatOptions) -> Reply:
        """One request: the reply read whole, or, with ``watch_replies``, read as a stream
        with progress events and stopped (with a warning) as soon as it loops."""
        tools = None if fmt else self._definitions
        self._loop = None
        stream_reply = getattr(self.model, "stream_reply", None)
        if not self.watch_replies or stream_reply is None:
            return self.model.chat(self.messages, tools, options)
        iteration = self.state.iteration + 1

        def progress(now: Progress) -> None:
            rate = None if now.tokens_per_s is None else round(now.tokens_per_s, 1)
            event = ModelProgress(
                task_id=self.task_id,
                iteration=iteration,
                elapsed_s=round(now.elapsed_s, 1),
                tokens=now.tokens,
                tokens_per_s=rate,
            )
            self.emit(event)

        name = self.model.name
        watched = watch_reply(
            stream_reply, self.messages, tools, options, model_name=name, on_progress=progress
        )
        if watched.loop is not None:
            self._loop = watched.loop
            self.warn(watched.stopped())
        return watched.reply

    def parse(self, reply: Reply) -> ParsedReply:
        message = {**reply.to_message(), "done_reason": reply.done_reason}
        parsed = parse_tool_calls(message, self._definitions)
        if parsed.content:
            self._last_content = parsed.content
        return parsed

    def act(self, calls: Sequence[ToolCall]) -> None:
        """Run each call and append its result, so the model sees what happened."""
        rounds = self.state.rounds
        previous = set(rounds[-2]) if len(rounds) >= 2 else set()
        to_run, refused = cap_calls(calls)
        remaining = self.limits.remaining_s(self.state)
        ends = None if remaining is None else time.monotonic() + remaining
        for call in to_run:
            started = time.perf_counter()
            with tool_deadline(ends) as clock:  # a command in flight ends with the wall clock
                result = self.tools.execute(call)
            if call.canonical() in previous:
                # Small models loop on one call; saying so often breaks the loop before the
                # repetition guardrail has to end the run.
                result = ToolResult(result.content + REPEAT_NOTE, result.ok)
            self._tools_used += 1
            self.record(call, result, started)
            if clock.reached:
                # The tool's timer and the loop's clock disagree by microseconds either way;
                # the tool stopped for the wall clock, so the run is out of time.
                raise self.limits.out_of_time()
        if refused:
            self.warn(f"the reply made {len(calls)} tool calls; ran the first {len(to_run)}")
        for call, result in refused:
            self.append_result(call, result)

    def record(self, call: ToolCall, result: ToolResult, started: float) -> None:
        """Emit the call's event and append its result to the history."""
        self.emit(
            ToolCallEvent(
                task_id=self.task_id,
                tool_name=call.name,
                args_summary=summarize(json.dumps(call.arguments, ensure_ascii=False)),
                result_summary=summarize(result.content),
                iteration=self.state.iteration,
                ok=result.ok,
                duration_ms=round((time.perf_counter() - started) * 1000),
            )
        )
        self.append_result(call, result)

    def append_result(self, call: ToolCall, result: ToolResult) -> None:
        message: Message = {"role": "tool", "content": result.content, "tool_name": call.name}
        if call.id:
            message["tool_call_id"] = call.id
        self.messages.append(message)

    def nudge(self, text: str) -> None:
        """Tell the model what was wrong with its reply, or stop the run when it has had
        ``max_nudges`` nudges in a row. The event's ``nudge_number`` counts within the streak
        (1 to ``max_nudges``); ``state.nudges_total`` counts the whole run."""
        state = self.state
        if state.nudges >= self.limits.max_nudges:
            more = state.nudges_total - state.nudges
            raise NudgeExhausted(
                f"the model gave no usable reply after {state.nudges} nudges in a row"
                + (f" ({more} more earlier in the run)" if more else ""),
                guardrail="nudges",
            )
        state.nudges += 1
        state.nudges_total += 1
        self.emit(
            Nudge(
                task_id=self.task_id,
                iteration=self.state.iteration,
                nudge_number=self.state.nudges,
                message=text,
            )
        )
        self.messages.append({"role": "user", "content": text})

    def nudge_text(self, parsed: ParsedReply) -> str:
        if parsed.truncated:
            return self.cut_off_text(parsed)
        if parsed.only_thinking_calls:
            return NUDGE_THINKING_ONLY
        if parsed.rejected_calls:
            unknown = ", ".join(sorted({call.name for call in parsed.rejected_calls}))
            return NUDGE_UNKNOWN_TOOL.format(unknown=unknown, tools=", ".join(self.tools.names))
        if parsed.malformed:
            return NUDGE_MALFORMED
        if parsed.type == "final_answer":
            return NUDGE_NO_ACTION
        return NUDGE_EMPTY

    def cut_off_text(self, parsed: ParsedReply) -> str:
        """The nudge for a reply cut off at the length limit: at how many tokens, and what to
        do instead, in words a small model can act on. Falls back to the general words when
        neither the server nor the backend says how many tokens a reply may have."""
        tokens = self._reply_tokens or reply_ceiling(self.model)
        if self._loop is not None:  # stopped by the watcher: say what it kept writing
            span = summarize(json.dumps(self._loop.span, ensure_ascii=False), 80)
            think = ", and keep your thinking short" if parsed.thinking else ""
            return LOOPED.format(span=span, tokens=tokens, think=think)
        if not tokens:
            return NUDGE_TRUNCATED
        think = ", and think briefly: your thinking counts toward the limit"
        return CUT_OFF.format(tokens=tokens, think=think if parsed.thinking else "")

    def history_message(self, reply: Reply) -> Message:
        """The assistant turn as it goes into the history: exactly what the model said, minus
        its thinking, which templates drop anyway and which would only fill the context."""
        message = reply.to_message()
        message.pop("thinking", None)
        return message

    def estimate_cost(self, prompt: int | None = None) -> int:
        """Tokens the next request will likely cost: the prompt (``prompt``, when it has just
        been estimated) plus an average reply."""
        iterations = self.state.iteration
        reply = self.state.tokens_out // iterations if iterations else 256
        if prompt is None:
            prompt = self.estimate_prompt()
        return prompt + reply

    def estimate_prompt(self) -> int:
        """The next request's prompt tokens, estimated (see ``localhand.run.tokens``)."""
        return estimate_prompt_tokens(self.messages, self._definitions)

    def keep_within_context(self) -> int:
        """Compact older tool results, in one block, when the prompt nears the window.

        Returns the prompt's estimated tokens, after any compaction."""
        used = self.estimate_prompt()
        limit = getattr(self.model, "context_limit", None)
        if not limit or used < COMPACT_AT * limit:
            return used
        excess_tokens = used - int(COMPACT_TO * limit)
        compaction = compact_tool_results(self.messages, excess_tokens)
        if compaction.compacted:
            self.messages = compaction.messages
            self.warn(
                f"the conversation reached about {used} of {limit} tokens: compacted "
                f"{compaction.compacted} older tool results ({compaction.chars_saved} characters)"
            )
            return self.estimate_prompt()
        if not self._warned_full:
            self._warned_full = True
            self.warn(
                f"the conversation is about {used} of {limit} tokens with nothing left to "
                "compact; the server may drop its start (raise num_ctx_max if memory allows)"
            )
        return used

    def finish(self, reason: str, output: str, error: str | None) -> Result:
        results = run_checks(self.checks, self.workspace)
        if results:
            self.emit_verification(results)
        result = Result(
            task_id=self.task_id,
            status=grade(reason, results, error),
            output=output,
            model_used=self.model.name,
            tokens_in=self.state.tokens_in,
            tokens_out=self.state.tokens_out,
            termination_reason=reason,  # type: ignore[arg-type]
            iterations_used=self.state.iteration,
            files_modified=self.tracker.files_modified(),
            verification=results,
            error=error,
            duration_s=round(time.monotonic() - self.state.started, 3),
            completed=[check.name for check in results if check.passed],
            remaining=[check.name for check in results if not check.passed],
            routing=self.routing.to_dict() if self.routing else None,
            cost=round(self.state.cost, 6) if self.ledger and self.ledger.priced else None,
        )
        if self.git_before is not None:
            result.git = gitstate.with_diff(self.git_before, self.workspace).to_dict()
        if result.status != "pass" and self.follow_up is not None:
            result.follow_up_task = self.follow_up(result)
        self.emit(TaskFinished(task_id=self.task_id, result=result.to_dict()))
        return result

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def emit_guardrail(self, stop: StopRun) -> None:
        self.emit(
            GuardrailEvent(
                task_id=self.task_id,
                guardrail=stop.guardrail or stop.reason,
                reason=str(stop),
                iteration=self.state.iteration,
            )
        )

    def emit_verification(self, results: Sequence[CheckResult]) -> None:
        checks = [asdict(result) for result in results]
        self.emit(Verification(task_id=self.task_id, checks=checks))

    def warn(self, message: str) -> None:
        """Hook for backends' warnings (truncated prompts, retries) to reach the event stream."""
        self.emit(WarningEvent(task_id=self.task_id, message=message))


def reply_ceiling(model: ChatModel) -> int | None:
    """The most tokens ``model`` lets one reply have, when it says (``max_reply_tokens`` on
    the Ollama backend, ``max_tokens`` on the others)."""
    for name in ("max_reply_tokens", "max_tokens"):
        value = getattr(model, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def summarize(text: str, limit: int = SUMMARY_CHARS) -> str:
    """One line, at most ``limit`` characters, for the timeline."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
