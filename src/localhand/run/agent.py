"""The ReAct loop: ask the model, parse, check the guardrails, run the tools, repeat.

``ToolLoop.play`` reads like the data flow; each step is a small method a subclass can override.
Stopping is always a ``StopRun`` (a final answer included), caught once (``Run.drive``); whatever
ends the run, its ``Outcome`` is handed back, to be finished as every door's is (the public
``localhand.Agent`` does: ``localhand.session.finish`` checks, grades and announces it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from localhand.cancel import Cancellation
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
from localhand.evidence import gitstate
from localhand.evidence.answer_check import AnswerCheck
from localhand.evidence.baseline import Baseline
from localhand.evidence.changes import WrittenFiles
from localhand.evidence.snapshot import ChangeTracker
from localhand.evidence.verify import grade
from localhand.models.base import ChatModel, ChatOptions, PlainChatModel, declared
from localhand.nesting import cut_deep
from localhand.parsing import ParsedReply, call_schema, parse_tool_calls
from localhand.profiles import assistant_turn, profile_for
from localhand.prompt.context import ContextWindow
from localhand.prompt.opening import opening_messages
from localhand.prompt.tool_text import known_window, sized_definitions
from localhand.run.agent_config import AgentConfig, Conversation
from localhand.run.asking import ask_model, budget_warning, rethink_note
from localhand.run.guardrails import RunState
from localhand.run.lifecycle import Ending, Outcome, Run
from localhand.run.nudges import CutOff, nudge_text, repeat_noted
from localhand.run.tiny import tiny_policy
from localhand.tools import default_tools
from localhand.tools.deadline import deadline as tool_deadline
from localhand.tools.jobs import jobs_of
from localhand.tools.registry import cap_calls
from localhand.types import CheckResult, Message, Reply, Result, ToolCall, ToolResult


class ToolLoop:
    """Runs one task in one workspace with one model, to its ``Outcome``; ``bus`` receives
    every event, ``checks`` grade the workspace when the run ends."""

    def __init__(
        self,
        model: ChatModel | PlainChatModel,
        workspace: str | Path,
        config: AgentConfig | None = None,
        **options: Any,
    ) -> None:
        """``options`` are fields of ``AgentConfig`` that override ``config``'s."""
        self.config = config = replace(config or AgentConfig(), **options)
        self.model = model = declared(model)
        self.profile = config.profile or model.profile or profile_for(model.name)
        self.workspace = Path(workspace).resolve()
        self.tools = config.tools if config.tools is not None else default_tools(self.workspace)
        self.limits, self.checks = config.limits, list(config.checks)
        self.bus = config.bus or EventBus()
        self.task_id = config.task_id or uuid.uuid4().hex[:12]
        self.routing, self.ledger = config.routing, config.ledger
        watch = config.watch_replies
        self.watch_replies = model.watch_replies if watch is None else watch
        given = config.think_budget if config.think_budget is not None else model.think_budget
        budget = self.profile.think_budget if self.watch_replies else None  # needs a stream
        self.think_budget = budget if given is None else given  # 0: none; one given streams
        self.cancellation = config.cancellation or Cancellation()  # Session.cancel flips it
        self._definitions = self.tools.definitions()
        self._written = WrittenFiles(self.tools)
        self._reset()

    def _reset(self) -> None:
        """A new conversation, so that one Agent can run several tasks in turn."""
        self.talk = Conversation(
            ContextWindow(self.warn), AnswerCheck(self.checks, self.workspace), CutOff(self.model)
        )

    @property
    def messages(self) -> list[Message]:
        """The conversation so far, as the next request sends it."""
        return self.talk.messages

    @property
    def state(self) -> RunState:
        """What the guardrails know of the run so far (the ``Run``'s)."""
        return self.talk.state

    def play(self, task: str) -> Outcome[Result]:
        """Run ``task`` until something stops it: its Outcome, unchecked and unannounced."""
        self._reset()
        life = self.life = Run(
            self.task_id, self.workspace, self.limits, self.bus, cancellation=self.cancellation
        )
        life.checks, self.talk.state = self.checks, life.state
        self._written.take()  # writes before the run are in the tracker's baseline
        before = self.config.tests_before  # a continued run's, from its chain's first run
        self.baseline = Baseline(self.workspace, self.task_id, self.checks, task, before)
        life.guard = self.talk.answer_check.guard = self.baseline.guard  # the checks as they were
        try:
            config = self.config
            window = known_window(self.model)  # a small one gets short tool descriptions
            self._definitions = sized_definitions(self.tools.definitions(), window)
            self.talk.messages = opening_messages(
                task, self.workspace, config, self.profile, self._definitions, self.model, self.warn
            )
            routing = self.routing.to_dict() if self.routing else None
            limit = self.limits.max_iterations or 0
            life.start(task, self.model.name, max_iterations=limit, routing=routing)
            offered = self._definitions  # a tiny model's policy narrows them:
            policy = tiny_policy(self.model.tiny, self.workspace, task, offered, self.checks)
            self._definitions = self.talk.hold(policy, offered, self.emit, self.task_id)
            self.talk.plan_window(self.model, self.limits, self._definitions)
            if self.profile.patterns:  # a family's profile applies: say which, what it does
                status = self.profile.describe(self.think_budget)
                self.emit(ModelStatus(task_id=self.task_id, message=status))
            ending = life.drive(
                self.work, done=FinalAnswer.reason, iteration=lambda: self.talk.state.iteration
            )
        except BaseException:
            self.baseline.close()
            raise
        finally:  # however the run leaves (a store that failed too): its writes are synced
            self.tools.close()
        return Outcome(life, partial(self.settle, ending), self.messages, self.model)

    def work(self) -> None:
        """Steps until one of them stops the run (a final answer is a stop too)."""
        while True:
            self.step()

    def step(self) -> None:
        """One iteration: one model turn and whatever it asks for."""
        self.life.check_cancelled()
        self.limits.check_iterations(self.talk.state)
        self.limits.check_wall_clock(self.talk.state)
        reply, parsed = self.turn()
        self.talk.messages.append(self.history_message(reply, parsed))
        self.talk.state.iteration += 1
        changed, whole = False, not parsed.truncated  # cut off: nudged and counted, call or prose
        if parsed.type == "tool_calls" and whole:
            self.limits.check_repetition(self.talk.state, parsed.calls)
            self.act(parsed.calls)
            self.life.check_workspace()
            self.talk.state.nudges = 0  # the model recovered: the next nudge starts a new streak
            if changed := self.files_changed(parsed.calls):
                self.talk.answer_check.workspace_changed()
        elif parsed.type == "final_answer" and whole and not parsed.needs_constrained_retry:
            self.answered(parsed)
        else:
            self.nudge(nudge_text(parsed, self.tools.names, self.talk.cut_off))
        self.limits.check_progress(self.talk.state, changed)

    def files_changed(self, calls: Sequence[ToolCall]) -> bool:
        """Whether this round's calls changed a file's contents (by the tools' reports, or by
        a walk after calls that may write unreported)."""
        written = self._written.take()
        if self._written.walk_needed(calls):
            return bool(self.tracker.new_changes(written))  # what they wrote: by content
        return bool(written) and bool(self.tracker.changes_in(written))

    def turn(self) -> tuple[Reply, ParsedReply]:
        """Ask the model and parse its reply, retrying once constrained if the call was botched."""
        reply = self.query()
        if self.talk.thought is not None:  # stopped at the think budget: ask again, thinking off
            budget = self.think_budget or 0
            self.warn(budget_warning(self.talk.thought, budget))
            self.talk.messages.append(rethink_note(reply, self.talk.thought, budget, self.profile))
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

    def answered(self, parsed: ParsedReply) -> None:
        """A final answer ends the loop (seed 001) unless it is objected to first: given before
        any action, or while the checks fail (once per change of the workspace). Objections
        are not the nudges the seeds limit: they do not count, and an answer ends a streak."""
        self.talk.state.nudges = 0
        objection: str | None
        if self.must_act_first():
            objection = nudge_text(parsed, self.tools.names, self.talk.cut_off)
        elif (objection := self.talk.answer_check.objection()) is None:  # the checks first
            raise FinalAnswer(parsed.content)
        self.nudge(objection, counted=False)

    def must_act_first(self) -> bool:
        """Small models often "answer" before touching the workspace: nudged, the first time."""
        if not self.config.require_action or self.talk.tools_used or self.talk.asked_to_act:
            return False
        self.talk.asked_to_act = True
        return True

    def query(self, fmt: dict[str, Any] | None = None, think: bool | None = None) -> Reply:
        """Ask the model for the next turn, within the budget and the wall clock."""
        prompt = self.keep_within_context()
        cost = self.talk.estimate_cost(prompt)
        self.limits.check_budget(self.talk.state, cost)
        if self.ledger is not None:
            self.ledger.check(cost)
        talk, number = self.talk, self.talk.state.iteration + 1
        constrained = fmt is not None
        self.emit(
            ModelRequest(
                task_id=self.task_id,
                iteration=number,
                messages=len(talk.messages),
                constrained=constrained,
            )
        )
        remaining, schema = self.limits.remaining_s(talk.state), talk.reply_schema(fmt)
        options = ChatOptions(format=fmt, timeout=remaining, think=think, reply_schema=schema)
        started = time.perf_counter()
        with self.life.deadline_stops():
            asked = ask_model(
                self.model,
                talk.messages,
                None if fmt else self._definitions,
                options,
                watch=self.watch_replies,
                task_id=self.task_id,
                iteration=number,
                emit=self.emit,
                warn=self.warn,
                think_budget=self.think_budget or None,
                check=self.life.check_cancelled,
            )
        reply, talk.thought = asked.reply, asked.thought  # thinking tokens, if cut at the budget
        self.talk.cut_off = CutOff(self.model, reply.usage.completion_tokens, asked.loop)
        for call in reply.tool_calls:  # before the event: the store's copy must not recurse
            cut_deep(call.arguments)
        self.talk.count(reply.usage, self.warn, reply.model or self.model.name)  # and cache figures
        if self.ledger is not None:
            self.ledger.book(self.task_id, reply.usage, self.model.name)
            self.talk.state.cost += self.ledger.cost(reply.usage)
        self.emit(ModelReply.of(reply, task_id=self.task_id, iteration=number, started=started))
        return reply

    def parse(self, reply: Reply) -> ParsedReply:
        message = {**reply.to_message(), "done_reason": reply.done_reason}
        parsed = parse_tool_calls(message, self._definitions)
        if parsed.content:
            self.talk.last_content = parsed.content
        return parsed

    @property
    def tracker(self) -> ChangeTracker:
        return self.baseline.tracker  # waits, before the first tool, for the starting point

    def act(self, calls: Sequence[ToolCall]) -> None:
        """Run each call and append its result, so the model sees what happened."""
        self.baseline.before(call.name for call in calls)  # nothing changes it unrecorded
        rounds = self.talk.state.rounds
        previous = set(rounds[-2]) if len(rounds) >= 2 else set()
        to_run, refused = cap_calls(calls)
        remaining = self.limits.remaining_s(self.talk.state)
        ends = None if remaining is None else time.monotonic() + remaining
        for call in to_run:
            self.life.check_cancelled()  # between calls: the rest of the round is not run
            started = time.perf_counter()
            with tool_deadline(ends) as clock:  # a command in flight ends with the wall clock
                result = self.tools.execute(call)
            result = repeat_noted(call, result, previous)
            self.talk.tools_used += 1
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
                iteration=self.talk.state.iteration,
                started=started,
                server=server,
                workspace=str(self.workspace),
            )
        )
        self.append_result(call, result)

    def append_result(self, call: ToolCall, result: ToolResult) -> None:
        self.talk.observe(call, result)
        message: Message = {"role": "tool", "content": result.content, "tool_name": call.name}
        if call.id:
            message["tool_call_id"] = call.id
        self.talk.messages.append(message)

    def nudge(self, text: str, *, counted: bool = True) -> None:
        """Tell the model what was wrong with its reply, or stop the run when it has had
        ``max_nudges`` nudges in a row. The event's ``nudge_number`` counts within the streak
        (1 to ``max_nudges``; an objection to an answer, not ``counted``, leaves it as it is);
        ``state.nudges_total`` counts the whole run."""
        if counted:
            self.limits.check_nudges(self.talk.state)
            self.talk.state.nudges += 1
            self.talk.state.nudges_counted += 1
        self.talk.state.nudges_total += 1
        self.emit(
            Nudge(
                task_id=self.task_id,
                iteration=self.talk.state.iteration,
                nudge_number=self.talk.state.nudges,
                message=text,
            )
        )
        self.talk.messages.append({"role": "user", "content": text})

    def history_message(self, reply: Reply, parsed: ParsedReply | None = None) -> Message:
        """The assistant turn as it goes into the history, as the model's family needs it
        (``localhand.profiles.assistant_turn``: a call written as text kept as written or
        stored natively, call ids, thinking only where its template renders it)."""
        ok = parsed is not None and parsed.type == "tool_calls" and not parsed.truncated
        calls, prose = (parsed.calls, parsed.content) if ok and parsed else ((), "")
        number = self.talk.state.iteration + 1
        return assistant_turn(reply, calls, self.profile, prose=prose, turn=number)

    def keep_within_context(self) -> int:
        """Compact older tool results near the window; the prompt's tokens after it."""
        limit = self.model.context_limit  # known after the first request
        return self.talk.keep_within(limit, self._definitions)

    def settle(self, ending: Ending, results: list[CheckResult]) -> Result:
        """The Result of a run that ended with ``ending`` and whose checks found ``results``,
        with what changed (and its git diff); the run's starting point is let go of."""
        try:
            return self.baseline.guard.noted(self.result_of(ending, results))  # + unseen changes
        finally:
            self.baseline.close()

    def result_of(self, ending: Ending, results: list[CheckResult]) -> Result:
        result = Result(
            task_id=self.task_id,
            status=grade(ending.reason, results, ending.error),
            output=self.talk.output(ending),
            model_used=self.model.name,
            tokens_in=self.talk.state.tokens_in,
            tokens_out=self.talk.state.tokens_out,
            prefill=self.talk.state.prefill,
            termination_reason=ending.reason,  # type: ignore[arg-type]
            iterations_used=self.talk.state.iteration,
            files_modified=self.tracker.files_modified(),
            verification=results,
            error=ending.error,
            duration_s=self.life.duration_s(),
            completed=[check.name for check in results if check.passed],
            remaining=[check.name for check in results if not check.passed],
            routing=self.routing.to_dict() if self.routing else None,
            profile=self.profile.summary(),
            first_prompt_tokens=self.talk.first_prompt_tokens or None,
            jobs=jobs_of(self.tools),
            cost=round(self.talk.state.cost, 6) if self.ledger and self.ledger.priced else None,
        )
        if (before := self.baseline.git) is not None:
            result.git = gitstate.with_diff(before, self.workspace).to_dict()
        return result

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def warn(self, message: str) -> None:
        """Hook for backends' warnings (truncated prompts, retries) to reach the event stream."""
        self.emit(WarningEvent(task_id=self.task_id, message=message))
