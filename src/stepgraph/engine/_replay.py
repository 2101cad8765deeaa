"""Replaying a run from its journal: exactly, live, or forked from one step."""

from __future__ import annotations

import gc
import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

import networkx as nx

from stepgraph.engine._approval import Decision, PlanView, RunParked, tool_fingerprints
from stepgraph.engine._budget import recorded_limits
from stepgraph.engine._compare import Divergence, compare_files
from stepgraph.engine._engine import check_journal_free, refuse_code, unlink_journal
from stepgraph.engine._options import RunOptions
from stepgraph.engine._recall import Recalled
from stepgraph.engine._recorded import engine_from, prepared_from
from stepgraph.engine._signing import signed_here
from stepgraph.exceptions import (
    ApprovalError,
    BudgetExceededError,
    JournalError,
    LLMError,
    NonRetryableError,
    StepgraphError,
)
from stepgraph.executor import ThreadBackend, ToolCall, build_graph
from stepgraph.journal import (
    JournalEvent,
    LLMResponse,
    ObservationEvent,
    PlanApproved,
    PlanEdited,
    PlanExamples,
    PlanRecalled,
    PlanRejected,
    PlanRepair,
    Recording,
    RunEnd,
    RunLink,
    RunResume,
)
from stepgraph.model import ApprovalPolicy, Budget, RunResult, RunStatus, WorkedExample
from stepgraph.planner import CrossRoute, LLMReply, Message, Planner
from stepgraph.task import PreparedTask, plugins_outside
from stepgraph.tools import Tool, as_spec, recorded_tools
from stepgraph.values import decode_value

# Records written before programs only asked two programs (the config names no count)
_OLDER_PROGRAM_TRIES = 3


@dataclass
class ReplayReport:
    """The outcome of a replay: identical, or the divergences in record order."""

    journal: Path
    parent: Path
    divergences: list[Divergence] = field(default_factory=list)
    result: RunResult | None = None
    error: str | None = None
    problems: list[str] = field(default_factory=list)  # unreadable lines of the record

    @property
    def identical(self) -> bool:
        """True when nothing differs from the record."""
        return not self.divergences and self.error is None


class _ReplayedError(StepgraphError):
    """A recorded failure that was retried at the time, so it may be retried again."""


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """What one attempt of a step gave, as much of its observation as a replay needs."""

    ok: bool
    value: Any
    error: str | None
    final: bool


# The events a replay keeps besides the task and the plans (built as they are read): the
# model's answers, approvals, resumes, the end; observations are kept as `RecordedOutcome`s.
_KEPT = (
    RunResume,
    RunEnd,
    PlanApproved,
    PlanRejected,
    PlanEdited,
    PlanRepair,
    LLMResponse,
    PlanRecalled,
    PlanExamples,
)
_RESULT_STATUSES = frozenset(RunStatus)  # a run that ended with a result, not an error


class RecordedOutcomes:
    """Each step's recorded outcomes, taken attempt by attempt.

    A step that ran once (nearly all) holds its outcome alone; a retried one, a list used
    as a stack. A list per step would be a third of what a replay holds per step.
    """

    def __init__(self) -> None:
        self._steps: dict[str, RecordedOutcome | list[RecordedOutcome]] = {}

    def add(self, step: str, outcome: RecordedOutcome) -> None:
        """The step's next attempt, in the record's order."""
        have = self._steps.get(step)
        if have is None:
            self._steps[step] = outcome
        elif isinstance(have, list):
            have.insert(0, outcome)  # next attempt last
        else:
            self._steps[step] = [outcome, have]

    def forget(self, step: str) -> None:
        """Drop the step's attempts since its last final outcome: it starts over (resumed)."""
        have = self._steps.get(step)
        if isinstance(have, list):
            while have and not have[0].final:  # the latest attempt first
                del have[0]
            if not have:
                del self._steps[step]
        elif have is not None and not have.final:
            del self._steps[step]

    def next(self, step: str) -> RecordedOutcome | None:
        """The outcome of the step's next attempt; None when the record has no more."""
        have = self._steps.get(step)
        if isinstance(have, list):
            return have.pop() if have else None
        if have is not None:
            del self._steps[step]
        return have


class RecordedDecisions:
    """The approval gate of a replay: the record's decisions again, never a new one.

    An exact replay calls no tool, so it gives each plan the decision the record holds for
    it (approved, rejected, or parked where nobody decided). A live replay or a fork runs
    tools for real: a plan runs only where the record approved the same plan in the same
    resolved task (the same approval hash); a rejected, parked or changed one parks, for a
    person to decide about the new run.
    """

    def __init__(self, recording: Recording, *, exact: bool) -> None:
        self.exact = exact
        self._refused = recording.end_status == "not_approved"  # by its policy, unasked
        self._decisions = [
            event
            for event in recording.journal.events
            if isinstance(event, PlanApproved | PlanRejected | PlanEdited)
        ]
        self._plans = recording.plans

    def review(self, view: PlanView) -> Decision:
        """The recorded decision about this plan, or park."""
        plan_hash = view.plan.plan_hash()
        for event in self._decisions:
            if isinstance(event, PlanEdited):
                edited = self._plans.get(event.plan_hash)
                if self.exact and event.plan_hash_before == plan_hash and edited is not None:
                    return Decision("edit", plan=edited, who=event.who, how=event.how)
                continue
            if self.exact and event.plan_hash == plan_hash:
                if isinstance(event, PlanApproved):
                    return Decision("approve", who=event.who, how=event.how)
                return Decision("reject", who=event.who, how=event.how)
            if (
                not self.exact
                and isinstance(event, PlanApproved)
                and event.approval_hash == view.approval_hash
                and signed_here(
                    event.who, event.how, event.when, view.approval_hash, event.signature
                )
            ):
                return Decision("approve", who=event.who, how=f"reused:{event.how}")
        if self.exact and self._refused:
            raise ApprovalError("the recorded run's policy refused this plan; so does its replay")
        raise RunParked(view.approval_hash)


def load_for_replay(path: Path) -> tuple[Recording, RecordedOutcomes]:
    """The recording and each step's outcomes, read in one pass over the journal.

    The journal is streamed: a large one is never held as a list of events, and the
    task and plans are built from their lines' text.
    """
    recorded = RecordedOutcomes()

    def keep(event: JournalEvent) -> bool:
        if isinstance(event, ObservationEvent):
            if event.step:
                recorded.add(
                    event.step, RecordedOutcome(event.ok, event.value, event.error, event.final)
                )
            return False
        if isinstance(event, RunResume):  # steps in flight at the kill start over
            for step in event.rerun:
                recorded.forget(step)
        return isinstance(event, _KEPT)

    return Recording.read(path, keep), recorded


class ReplayBackend:
    """Answers tool calls with the recorded observations; `live` steps run for real."""

    def __init__(
        self,
        recorded: RecordedOutcomes,
        live_steps: set[str] | None = None,
        *,
        live: bool = False,
    ) -> None:
        self._recorded = recorded
        self._live_steps = live_steps or set()
        self._all_live = live
        self._threads = ThreadBackend() if live or live_steps else None

    def submit(self, call: ToolCall) -> Future[Any]:
        """The recorded outcome of this step's next attempt, or a live call."""
        if self._threads is not None and (self._all_live or call.step.id in self._live_steps):
            return self._threads.submit(call)
        future: Future[Any] = Future()
        recorded = self._recorded.next(call.step.id)
        if recorded is None:
            message = f"no recorded observation for step '{call.step.id}' attempt {call.attempt}"
            future.set_exception(NonRetryableError(message))
        elif recorded.ok:
            future.set_result(decode_value(recorded.value))
        elif recorded.final:
            future.set_exception(NonRetryableError(recorded.error or ""))
        else:
            future.set_exception(_ReplayedError(recorded.error or ""))
        return future

    def cancel(self, future: Future[Any]) -> None:
        """Cancel a live call; recorded ones are already done."""
        if self._threads is not None:
            self._threads.cancel(future)

    def shutdown(self) -> None:
        """Stop the live workers, if any."""
        if self._threads is not None:
            self._threads.shutdown()


class ReplayLLM:
    """A model that gives the recorded answers in order."""

    def __init__(self, texts: Sequence[str], model: str = "replay") -> None:
        self._texts = deque(texts)
        self.model = model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """The next recorded answer; asking for more than the record holds is an error."""
        if not self._texts:
            raise LLMError("the replay asked the model more often than the recorded run did")
        return LLMReply(text=self._texts.popleft(), model=self.model)

    def stream_complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool],
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """A streamed run's answers are streamed again, whole: the same steps start."""
        reply = self.complete(messages, schema=schema, attempt=attempt)
        on_text(reply.text)
        return reply


def replay(
    journal: Path | str,
    *,
    live: bool = False,
    from_step: str | None = None,
    out: Path | str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    trust_plugins: bool = False,
    replace_out: bool = False,
) -> ReplayReport:
    """Run a recorded run again and compare.

    By default no tool and no model is called: every observation and model answer
    comes from the journal. `live` runs the tools for real; `from_step` forks: that
    step and everything depending on it run live, the rest is taken from the record,
    into a new journal that names its parent.

    A journal names files and commands: the task's plugins (imported to rebuild its
    tools) and, for a live replay or a fork, the MCP servers it used. Both run code, so
    without `trust_plugins` such a journal is refused (`UntrustedTaskError`) before
    anything is imported or started; a journal someone sent you runs nothing unasked.
    """
    path = Path(journal)
    suffix = f"fork-{from_step}" if from_step else ("live" if live else "replay")
    out_path = Path(out) if out else path.with_name(f"{path.stem}.{suffix}.jsonl")
    if out_path.resolve() == path.resolve():  # the old output is deleted below
        raise JournalError(
            "the replay would overwrite the journal it replays; choose another output path",
            path=str(path),
        )
    # The default output is this replay's own and is replaced; a path the caller names may
    # hold another run's journal, which is never overwritten unasked (nor a folder, ever).
    check_journal_free(out_path, replace=out is None or replace_out)
    recording, recorded = load_for_replay(path)
    if not trust_plugins:
        offline = not live and from_step is None  # then MCP tools are stand-ins
        servers = [] if offline else _recorded_servers(recording.start.mcp_tools)
        specs = [as_spec(server) for server in servers]
        refuse_code(recording.task.model_copy(update={"mcp_servers": specs}))
    live_steps = _fork_steps(recording, from_step) if from_step else None
    unlink_journal(out_path)
    report = ReplayReport(journal=out_path, parent=path, problems=recording.journal.problems)
    backend = _Backends(recorded, live_steps, live)
    if not _run_again(report, recording, backend, tools, from_step=from_step, live=live):
        return report
    # What the run built is garbage now, much of it in reference cycles that only a full
    # collection frees (the run kept the collector off its heap): freed before the two
    # journals are read again, line by line.
    del recording, recorded, backend
    gc.collect()
    if not out_path.exists():  # the run stopped before its first event: nothing to compare
        report.error = report.error or "the replay stopped before it wrote an event"
        return report
    report.divergences += compare_files(path, out_path)
    return report


def _gate(recording: Recording, *, exact: bool) -> tuple[ApprovalPolicy, RecordedDecisions | None]:
    """The policy and approver a replay runs under: every plan passes the recorded decisions.

    A per-step run that nobody decided yet ran its read-only steps and parked: its replay
    does the same (those steps need no approval; the rest waits, as it did).
    """
    asked = recording.start.config.approval or recording.task.approval
    decided = any(
        isinstance(event, PlanApproved | PlanRejected | PlanEdited)
        for event in recording.journal.events
    )
    if asked == ApprovalPolicy.PER_STEP and not decided:
        return ApprovalPolicy.PER_STEP, None
    return ApprovalPolicy.ASK, RecordedDecisions(recording, exact=exact)


def code_inside(journal: Path | str, folder: Path) -> bool:
    """Whether the code a replay of `journal` would run lies in `folder` (trusted by its owner).

    True when the recorded task's folder and each plugin file resolve inside `folder` and
    the run used no MCP server started by a command (a command may run anything).
    """
    recording = Recording.read(Path(journal), keep=lambda _: False)
    base = recording.base_dir.resolve()
    commands = [d for d in recording.start.mcp_tools.values() if d["server"].get("command")]
    inside = base.is_relative_to(folder.resolve())
    outside = plugins_outside(recording.task, base, folder)
    return inside and not outside and not commands and not recording.task.mcp_servers


def _recorded_memory(recording: Recording) -> tuple[Recalled | None, list[WorkedExample]]:
    """What plan memory gave the recorded run: its recalled plan, its worked examples."""
    recalled: Recalled | None = None
    examples: list[WorkedExample] = []
    for event in recording.journal.events:
        if isinstance(event, PlanRecalled) and event.plan_hash in recording.plans:
            plan = recording.plans[event.plan_hash]
            recalled = Recalled(
                plan, event.from_run, event.from_journal, event.from_goal, event.rebound
            )
        elif isinstance(event, PlanExamples) and recalled is None:
            examples = [WorkedExample.model_validate(item) for item in event.examples]
    return recalled, examples


def _plan_retries_seen(recording: Recording) -> int | None:
    """The planner's retries for a record written before `run.start` said them.

    A planner that gave up used all of its tries in its last round; one that did not
    gets more than it needs (ten) and asks only as often as the record answers.
    """
    if recording.end_status != "invalid":
        return None
    attempts = [e.attempt for e in recording.journal.events if isinstance(e, LLMResponse)]
    return max(attempts, default=1) - 1


def _recorded_route(route: str | None) -> CrossRoute:
    """The cross-check's route the run had; older records and unknown names: another plan."""
    return cast(CrossRoute, route) if route in get_args(CrossRoute) else "plan"


def _recorded_servers(mcp_tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The MCP servers a run used, each once, as its journal recorded them."""
    unique = {json.dumps(d["server"], sort_keys=True): d["server"] for d in mcp_tools.values()}
    return list(unique.values())


def _fork_steps(recording: Recording, step: str) -> set[str]:
    prior, _ = recording.prior()
    plan = prior.plan if prior else next(iter(recording.plans.values()), None)
    if plan is None or step not in {s.id for s in plan.steps}:
        known = ", ".join(s.id for s in plan.steps) if plan else "none"
        raise JournalError(f"--from {step}: the recorded plan has no such step (steps: {known})")
    descendants: set[str] = nx.descendants(build_graph(plan.steps), step)
    return {step} | descendants


def _tool_changes(recording: Recording, prepared: PreparedTask) -> list[Divergence]:
    now = tool_fingerprints(prepared.tools)
    return [
        Divergence("tool", None, f"{name} {was}", f"{name} {now.get(name, 'missing')}")
        for name, was in sorted(recording.start.tools.items())
        if now.get(name) != was
    ]


@dataclass
class _Backends:
    """Makes the replay's backends; the outcomes go with it when the run is over."""

    recorded: RecordedOutcomes
    live_steps: set[str] | None
    live: bool

    def __call__(self) -> ReplayBackend:
        return ReplayBackend(self.recorded, self.live_steps, live=self.live)


def _run_again(
    report: ReplayReport,
    recording: Recording,
    backend: _Backends,
    tools: Iterable[Tool | Callable[..., Any]],
    *,
    from_step: str | None,
    live: bool,
) -> bool:
    """Run the recorded task again into `report`; False if the task cannot be rebuilt."""
    texts = recording.llm_texts()
    # A run refused before its first model call ("What time ...?") had a planner all the
    # same, and its replay must be refused the same way, not for want of one.
    planned = bool(texts) or recording.start.config.plan_retries is not None
    # MCP tools come from the record: stand-ins that never call a server, unless tools run live.
    offline = not live and from_step is None
    mcp_tools = recording.start.mcp_tools
    retries = recording.start.config.plan_retries
    if "plan_retries" not in recording.start.config.model_fields_set:
        retries = _plan_retries_seen(recording)
    engine = engine_from(
        recording,
        tools=[*tools, *(recorded_tools(mcp_tools) if offline else [])],
        mcp_servers=[] if offline else _recorded_servers(mcp_tools),
        # As many tries as the run had: a planner that gave up must give up again, not ask
        # once more than the record holds.
        planner=Planner(
            ReplayLLM(texts),
            plan_retries=10 if retries is None else int(retries),
            # Older records have neither: JSON plans from the goal's words as typed.
            syntax="lines" if recording.start.config.plan_syntax == "lines" else "json",
            read_goal=bool(recording.start.config.read_goal),
            reason_first=bool(recording.start.config.reason_first),
            cross_route=_recorded_route(recording.start.config.cross_route),
            numbered_names=bool(recording.start.config.numbered_names),
            retry_with="fresh" if recording.start.config.retry_with == "fresh" else "feedback",
            afresh_on_disagreement=bool(recording.start.config.afresh_on_disagreement),
            program_plan=bool(recording.start.config.program_plan),
            program_first=bool(recording.start.config.program_first),
            program_only=recording.start.config.program_only or False,
            second_words=bool(recording.start.config.second_words),
            program_tries=recording.start.config.program_tries or _OLDER_PROGRAM_TRIES,
            reuse_repeats=bool(recording.start.config.reuse_repeats),
            examples=recording.start.config.examples or "first",
            stop_loops=bool(recording.start.config.stop_loops),
        )
        if planned
        else None,
        stream=recording.start.config.stream,
        backend=backend,
    )
    # The record names the MCP servers; only the recorded call limits apply (below): a
    # clock or a price would not replay.
    task = recording.task.model_copy(update={"mcp_servers": [], "budget": None})
    try:
        prepared = prepared_from(recording, engine, task)
    except StepgraphError as e:
        report.error = f"cannot rebuild the task: {e}"
        return False
    report.divergences += _tool_changes(recording, prepared)
    path = recording.journal.path
    link = RunLink(run_id=recording.run_id, journal=str(path), from_step=from_step, live=live)
    # The recorded call limits stop the replay where they stopped the run.
    limits = recorded_limits(recording.journal.events)
    policy, approver = _gate(recording, exact=offline)
    options = RunOptions(
        policy=policy,
        approver=approver,
        early_start=recording.start.config.stream,
        parent=link if from_step else None,
        replay_of=None if from_step else link,
        budget=Budget(model_calls=limits.model_calls, tool_calls=limits.tool_calls),
    )
    options.recalled, options.examples = _recorded_memory(recording)
    # Every replay and fork is a run of its own, with its own id (the run index lists it
    # as its own row); `run.start` links it to the recorded run (`replay_of`, `parent`).
    options.run_id = None
    try:
        report.result = engine.run(prepared, journal=report.journal, options=options)
    except BudgetExceededError as e:  # the recorded run stopped there too: no error then
        if recording.end_status != "budget_exceeded":
            report.error = str(e)
    except StepgraphError as e:
        # A run the record shows failing too is reproduced, not broken: the two `run.end`
        # lines, compared next, say whether it failed the same way.
        if recording.end_status is None or recording.end_status in _RESULT_STATUSES:
            report.error = str(e)
    return True
