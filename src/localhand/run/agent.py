"""The ReAct loop: ask the model, parse, check the guardrails, run the tools, repeat.

``Agent.run`` reads like the data flow; each step is a small method a subclass can override.
Stopping is always a ``StopRun`` (a final answer included), caught once (``Run.drive``); whatever
ends the run, the workspace is verified and a Result is returned and emitted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from localhand.errors import FinalAnswer
from localhand.events import (
    Event,
    EventBus,
    ModelReply,
    ModelRequest,
    ModelStatus,
    Nudge,
    ToolCallEvent,
)
from localhand.events import Warning as WarningEvent
from localhand.models.base import ChatModel, ChatOptions
from localhand.nesting import cut_deep
from localhand.parsing import ParsedReply, call_schema, parse_tool_calls
from localhand.profiles import Profile, assistant_turn, profile_for
from localhand.run import gitstate
from localhand.run.answer_check import AnswerCheck
from localhand.run.asking import ask_model, budget_warning, rethink_note
from localhand.run.baseline import Baseline
from localhand.run.changes import WrittenFiles
from localhand.run.context import ContextWindow, expected_tokens
from localhand.run.guardrails import Limits, RunState
from localhand.run.ledger import Ledger
from localhand.run.lifecycle import Ending, Run
from localhand.run.nudges import CutOff, nudge_text
from localhand.run.prompt import build_messages
from localhand.run.routing import Route
from localhand.run.snapshot import ChangeTracker
from localhand.run.tokens import estimate_prompt_tokens
from localhand.run.verify import Check, grade
from localhand.tools import ToolRegistry, default_tools
from localhand.tools.deadline import deadline as tool_deadline
from localhand.tools.registry import cap_calls
from localhand.types import Message, Reply, Result, ToolCall, ToolResult

REPEAT_NOTE = (
    "\n[You made this exact call in your previous turn. Repeating it gives no new information: "
    "act on the result above, or do something different.]"
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
        profile: Profile | None = None,
        think_budget: int | None = None,
    ) -> None:
        self.model = model
        self.profile = profile or getattr(model, "profile", None) or profile_for(model.name)
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
        self.routing, self.ledger = routing, ledger  # the ledger books calls, checks the budget
        self.context_files = tuple(context_files)
        if watch_replies is None:  # as the backend was set up (``--watch-replies``)
            watch_replies = bool(getattr(model, "watch_replies", False))
        self.watch_replies = watch_replies
        """Read each reply as a stream and stop one that loops (``localhand.models.watch``);
        off, each request is ``stream: false``. Only for backends with ``stream_reply``."""
        given = think_budget if think_budget is not None else getattr(model, "think_budget", None)
        budget = self.profile.think_budget if watch_replies else None  # a budget needs a stream
        self.think_budget = budget if given is None else given  # 0: none; one given streams
        self._definitions = self.tools.definitions()
        self._written = WrittenFiles(self.tools)
        self._reset()

    def _reset(self) -> None:
        """Per-run state, so that one Agent can run several tasks in turn."""
        self.messages: list[Message] = []
        self.state = RunState()
        self._tools_used = 0
        self._asked_to_act = False
        self._window = ContextWindow(self.warn)
        self._answer_check = AnswerCheck(self.checks, self.workspace)
        self._last_content = ""
        self._cut_off = CutOff(self.model)  # what a cut-off reply's nudge says (tokens, a loop)

    def run(self, task: str) -> Result:
        self._reset()
        life = self.life = Run(self.task_id, self.workspace, self.limits, self.bus)
        life.checks, life.follow_up, self.state = self.checks, self.follow_up, life.state
        self.take_written()  # writes before the run are in the tracker's baseline
        self.baseline = Baseline(self.workspace, self.task_id, self.checks)  # as the 1st request
        life.guard = self._answer_check.guard = self.baseline.guard  # checks' files as they were
        try:
            self.messages = build_messages(
                task, self.workspace, self.system_prompt, self.context_files
            )
            self.plan_context()
            routing = self.routing.to_dict() if self.routing else None
            limit = self.limits.max_iterations or 0
            life.start(task, self.model.name, max_iterations=limit, routing=routing)
            if self.profile.patterns:  # a family's profile applies: say which, what it does
                status = self.profile.describe(self.think_budget)
                self.emit(ModelStatus(task_id=self.task_id, message=status))
            ending = life.drive(self.work, done=FinalAnswer.reason, iteration=self.iteration)
            self.tools.close()  # background processes the model started must not outlive it
            return self.finish(ending)
        finally:
            self.baseline.close()

    def plan_context(self) -> None:
        """Ollama's ``num_ctx`` chosen for the run before its first request (see the backend)."""
        if (plan := getattr(self.model, "plan_context", None)) is not None:
            limit, budget = self.limits.max_iterations, self.limits.token_budget
            plan(expected_tokens(self.estimate_prompt(), limit, budget))

    def work(self) -> None:
        """Steps until one of them stops the run (a final answer is a stop too)."""
        while True:
            self.step()

    def iteration(self) -> int:
        return self.state.iteration

    def step(self) -> None:
        """One iteration: one model turn and whatever it asks for."""
        self.limits.check_iterations(self.state)
        self.limits.check_wall_clock(self.state)
        reply, parsed = self.turn()
        self.messages.append(self.history_message(reply, parsed))
        self.state.iteration += 1
        changed = False
        if parsed.type == "tool_calls" and not parsed.truncated:
            self.limits.check_repetition(self.state, parsed.calls)
            self.act(parsed.calls)
            self.state.nudges = 0  # the model recovered: the next nudge starts a new streak
            if changed := self.files_changed(parsed.calls):
                self._answer_check.workspace_changed()
        elif (
            parsed.type == "final_answer"
            and not parsed.truncated  # an answer cut off mid-way is not the answer: nudged
            and not parsed.needs_constrained_retry
            and not self.must_act_first()
        ):
            objection = self._answer_check.objection()  # the checks, before "done" is taken
            if objection is None:
                raise FinalAnswer(parsed.content)
            self.nudge(objection)
        else:
            self.nudge(nudge_text(parsed, self.tools.names, self._cut_off))
        self.limits.check_progress(self.state, changed)

    def files_changed(self, calls: Sequence[ToolCall]) -> bool:
        """Whether this round's calls changed a file's contents (by the tools' reports, or by
        a walk after calls that may write unreported)."""
        written = self.take_written()
        if self._written.walk_needed(calls):
            return bool(self.tracker.new_changes(written))  # what they wrote: by content
        return bool(written) and bool(self.tracker.changes_in(written))

    def take_written(self) -> set[Path]:
        """The files the file tools wrote since the last call."""
        return self._written.take()

    def turn(self) -> tuple[Reply, ParsedReply]:
        """Ask the model and parse its reply, retrying once constrained if the call was botched."""
        reply = self.query()
        if self._thought is not None:  # stopped at the think budget: ask again, thinking off
            budget = self.think_budget or 0
            self.warn(budget_warning(self._thought, budget))
            self.messages.append(rethink_note(reply, self._thought, budget, self.profile))
            reply = self.query(think=False)
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
        """Small models often "answer" before touching the workspace: nudged, the first time."""
        if not self.require_action or self._tools_used or self._asked_to_act:
            return False
        self._asked_to_act = True
        return True

    def query(self, fmt: dict[str, Any] | None = None, think: bool | None = None) -> Reply:
        """Ask the model for the next turn, within the budget and the wall clock."""
        prompt = self.keep_within_context()
        cost = self.estimate_cost(prompt)
        self.limits.check_budget(self.state, cost)
        if self.ledger is not None:
            self.ledger.check(cost)
        number = self.state.iteration + 1
        self.emit(ModelRequest(task_id=self.task_id, iteration=number,
                               messages=len(self.messages), constrained=fmt is not None))
        options = ChatOptions(format=fmt, timeout=self.limits.remaining_s(self.state), think=think)
        started = time.perf_counter()
        with self.life.deadline_stops():
            tools = None if fmt else self._definitions
            asked = ask_model(self.model, self.messages, tools, options, watch=self.watch_replies,
                              task_id=self.task_id, iteration=number, emit=self.emit,
                              warn=self.warn, think_budget=self.think_budget or None)
        reply, self._thought = asked.reply, asked.thought  # thinking tokens, if cut at the budget
        self._cut_off = CutOff(self.model, reply.usage.completion_tokens, asked.loop)
        for call in reply.tool_calls:  # before the event: the store's copy must not recurse
            cut_deep(call.arguments)
        self.state.tokens_in += reply.usage.prompt_tokens
        self.state.tokens_out += reply.usage.completion_tokens
        if self.ledger is not None:
            self.ledger.book(self.task_id, reply.usage, self.model.name)
            self.state.cost += self.ledger.cost(reply.usage)
        self.emit(ModelReply.of(reply, task_id=self.task_id, iteration=number, started=started))
        return reply

    def parse(self, reply: Reply) -> ParsedReply:
        message = {**reply.to_message(), "done_reason": reply.done_reason}
        parsed = parse_tool_calls(message, self._definitions)
        if parsed.content:
            self._last_content = parsed.content
        return parsed

    @property
    def tracker(self) -> ChangeTracker:
        return self.baseline.tracker  # waits, before the first tool, for the starting point

    def act(self, calls: Sequence[ToolCall]) -> None:
        """Run each call and append its result, so the model sees what happened."""
        self.baseline.ready()  # nothing may change the workspace before it is recorded
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
        server = getattr(self.tools.get(call.name), "server", None)  # an MCP tool's
        self.emit(
            ToolCallEvent.of(
                call,
                result,
                task_id=self.task_id,
                iteration=self.state.iteration,
                started=started,
                server=server,
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
        self.limits.check_nudges(self.state)
        self.state.nudges += 1
        self.state.nudges_total += 1
        self.emit(
            Nudge(
                task_id=self.task_id,
                iteration=self.state.iteration,
                nudge_number=self.state.nudges,
                message=text,
            )
        )
        self.messages.append({"role": "user", "content": text})

    def history_message(self, reply: Reply, parsed: ParsedReply | None = None) -> Message:
        """The assistant turn as it goes into the history, as the model's family needs it
        (``localhand.profiles.assistant_turn``: a call written as text kept as written or
        stored natively, call ids, thinking only where its template renders it)."""
        ok = parsed is not None and parsed.type == "tool_calls" and not parsed.truncated
        calls, prose = (parsed.calls, parsed.content) if ok and parsed else ((), "")
        number = self.state.iteration + 1
        return assistant_turn(reply, calls, self.profile, prose=prose, turn=number)

    def estimate_cost(self, prompt: int | None = None) -> int:
        """Tokens the next request will likely cost: the prompt (``prompt``, if estimated)
        plus an average reply."""
        iterations = self.state.iteration
        reply = self.state.tokens_out // iterations if iterations else 256
        if prompt is None:
            prompt = self.estimate_prompt()
        return prompt + reply

    def estimate_prompt(self) -> int:
        """The next request's prompt tokens, estimated (see ``localhand.run.tokens``)."""
        return estimate_prompt_tokens(self.messages, self._definitions)

    def keep_within_context(self) -> int:
        """Compact older tool results near the window; the prompt's tokens after it."""
        limit = getattr(self.model, "context_limit", None)  # known after the first request
        self.messages, used = self._window.keep(self.messages, self._definitions, limit)
        return used

    def finish(self, ending: Ending) -> Result:
        """Check the workspace and make the Result of a run that ended with ``ending``."""
        results = self.life.verify()
        result = Result(
            task_id=self.task_id,
            status=grade(ending.reason, results, ending.error),
            output=self.output(ending),
            model_used=self.model.name,
            tokens_in=self.state.tokens_in,
            tokens_out=self.state.tokens_out,
            termination_reason=ending.reason,  # type: ignore[arg-type]
            iterations_used=self.state.iteration,
            files_modified=self.tracker.files_modified(),
            verification=results,
            error=ending.error,
            duration_s=self.life.duration_s(),
            completed=[check.name for check in results if check.passed],
            remaining=[check.name for check in results if not check.passed],
            routing=self.routing.to_dict() if self.routing else None,
            profile=self.profile.summary(),
            cost=round(self.state.cost, 6) if self.ledger and self.ledger.priced else None,
        )
        if (before := self.baseline.git) is not None:
            result.git = gitstate.with_diff(before, self.workspace).to_dict()
        return self.life.finish(self.baseline.guard.noted(result))  # + what changed unseen

    def output(self, ending: Ending) -> str:
        """The Result's output: the final answer, or the last thing the model said before
        something else stopped the run (else what stopped it)."""
        if ending.guardrail:
            return self._last_content or f"Stopped: {ending.message}"
        if ending.stop is not None:  # a final answer, or a stop that says why in words
            return ending.message
        if ending.error is not None:
            return self._last_content
        return self._last_content or "Cancelled by the user."  # Ctrl-C

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def warn(self, message: str) -> None:
        """Hook for backends' warnings (truncated prompts, retries) to reach the event stream."""
        self.emit(WarningEvent(task_id=self.task_id, message=message))
