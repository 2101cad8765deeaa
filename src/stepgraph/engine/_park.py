"""Parked runs: a plan waits for a person elsewhere, and a decision continues it from its journal.

A run with policy `ask` and nobody at a terminal journals `plan.awaiting` and returns
(`RunStatus.AWAITING_APPROVAL`) without a `run.end`. Nothing is held in memory: any
process may later read the journal, append the decision (who, how, when) and run the
rest, so a parked run survives the restart of the process that started it. A lock on
the journal file keeps two deciders (the web page and `stepgraph approve`) from both
continuing it.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from stepgraph.engine._approval import (
    Decision,
    ParkingApprover,
    PlanView,
    approval_hash,
    now,
    plan_view,
)
from stepgraph.engine._cancel import Cancellation
from stepgraph.engine._engine import Engine
from stepgraph.engine._given import check_given_plan
from stepgraph.engine._options import RunOptions
from stepgraph.engine._recall import recall_note
from stepgraph.engine._recorded import engine_from, prepared_from
from stepgraph.engine._signing import sign_decision
from stepgraph.exceptions import (
    ApprovalError,
    ApprovalMismatchError,
    DecisionConflictError,
    JournalError,
)
from stepgraph.executor import check_plan, plan_diff, step_signatures
from stepgraph.journal import (
    Action,
    Journal,
    JournalEvent,
    JournalWriter,
    Listener,
    ObservationEvent,
    PlanApproved,
    PlanAwaiting,
    PlanEdited,
    PlanRecalled,
    PlanRejected,
    Prior,
    Recording,
    RunResume,
    read_journal,
)
from stepgraph.model import ApprovalPolicy, RunResult, StepGraph
from stepgraph.planner import Planner
from stepgraph.task import PreparedTask
from stepgraph.tools import Tool
from stepgraph.values import decode_value

# Events after `plan.awaiting` that mean it was answered (or the run ended some other way).
_ANSWERED = frozenset(
    {"plan.approved", "plan.rejected", "plan.edited", "plan.revise", "run.end", "action"}
)


@dataclass
class ParkedRun:
    """A run waiting for a decision: its plan, and the plan it replaced (for the diff)."""

    recording: Recording
    plan: StepGraph
    awaiting: PlanAwaiting
    previous: StepGraph | None

    def view(self, engine: Engine | None = None) -> PlanView:
        """The plan as a person reviews it (rows, critical path, side effects)."""
        prepared = prepared_from(self.recording, engine or Engine())
        with prepared.resources:
            return plan_view(self.plan, prepared, origin=self.origin())

    def origin(self) -> str:
        """Where the waiting plan came from, when memory gave it ("" for the planner's)."""
        waiting = self.awaiting.plan_hash
        for event in self.recording.journal.events:
            if isinstance(event, PlanRecalled) and event.plan_hash == waiting:
                return recall_note(event.from_run, event.from_goal, event.rebound)
        return ""

    def diff(self) -> dict[str, Any] | None:
        """What changed against the plan reviewed before (after an edit or a revision)."""
        return None if self.previous is None else plan_diff(self.previous, self.plan)


# What a review reads of a journal besides the start and the plans: on what it waits, and
# the decisions since. Not the actions: a run's steps are most of its journal.
_REVIEWED = frozenset({"plan.awaiting", "plan.recalled", *_ANSWERED} - {"action"})


class _AnswerAfterWait:
    """Keeps each `plan.awaiting` and the one event that answers it, not the rest.

    Among the kinds a review reads, the event after a wait answers it: whether the last
    wait was answered is all the rest would say.
    """

    def __init__(self) -> None:
        self._after_wait = False

    def __call__(self, event: JournalEvent) -> bool:
        if isinstance(event, PlanAwaiting):
            self._after_wait = True
            return True
        if isinstance(event, PlanRecalled):  # where the waiting plan came from, if memory
            return True
        kept, self._after_wait = self._after_wait, False
        return kept


def parked(journal: Path | str, *, review_only: bool = False) -> ParkedRun | None:
    """The run's parked state, or None when it is not waiting for a decision.

    `review_only` reads only what a person reviewing the plan is shown (the task, the
    plans, the waiting and the decisions on it): the other lines of the journal are not
    even parsed, so a long run's steps cost nothing. A step that ran after the wait is
    not seen: the caller knows the run waits (the run index says so). Its recording
    cannot carry a decision out (`decide` reads the journal whole).
    """
    path = Path(journal)
    recording = (
        Recording.read(path, keep=_AnswerAfterWait(), kinds=_REVIEWED)
        if review_only
        else Recording.load(path)
    )
    events = recording.journal.events
    waits = [i for i, e in enumerate(events) if isinstance(e, PlanAwaiting)]
    if not waits or any(e.event in _ANSWERED for e in events[waits[-1] + 1 :]):
        return None
    awaiting = events[waits[-1]]
    assert isinstance(awaiting, PlanAwaiting)
    earlier = [events[i] for i in waits[:-1]]
    previous = recording.plans.get(earlier[-1].plan_hash) if earlier else None  # type: ignore[attr-defined]
    plan = recording.plans.get(awaiting.plan_hash)
    if plan is None:
        raise JournalError(
            "the journal names a parked plan it does not hold", path=str(recording.journal.path)
        )
    return ParkedRun(recording, plan, awaiting, previous)


def decide(
    journal: Path | str,
    decision: Decision,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
    listeners: Iterable[Listener] = (),
) -> RunResult:
    """Continue a parked run with a person's decision, in its own journal.

    Approve runs the rest; reject ends the run (`not_run`); edit and revise record the
    new plan and park again for its approval. Refused with a `DecisionConflictError` when the
    run is not waiting (already decided, finished, or being continued by another process).
    """
    with record_decision(journal, decision, tools=tools, planner=planner) as pending:
        return pending.carry_out(listeners)


class PendingDecision:
    """A decision checked and recorded under the run's lock, which it holds until closed.

    An approval or a rejection is in the journal once this exists, so a second decider
    is refused (naming this one) from then on, whatever the run does next; `carry_out`
    runs what the decision says, in any thread. Use it as a context manager, or `close`.
    """

    def __init__(
        self,
        lock: _Lock,
        state: ParkedRun,
        decision: Decision,
        *,
        recorded: bool,
        tools: Iterable[Tool | Callable[..., Any]],
        planner: Planner | None,
    ) -> None:
        self._lock = lock
        self.state = state
        self.decision = decision
        self.recorded = recorded
        self.tools = list(tools)
        self.planner = planner

    def carry_out(
        self, listeners: Iterable[Listener] = (), cancel: Cancellation | None = None
    ) -> RunResult:
        """Run the rest as decided (approve, reject) or record the new plan (edit, revise).

        `cancel`, when given, stops the run before its next call once cancelled.
        """
        recording = self.state.recording  # as it parked: the decision is not in it
        last_seq = recording.last_seq + (1 if self.recorded else 0)
        engine = engine_from(recording, tools=self.tools, planner=self.planner)
        prepared = prepared_from(recording, engine)
        plan = self.state.plan
        options = RunOptions(
            policy=ApprovalPolicy.ASK,  # it parked asking; a decision is what it waits for
            awaiting=plan,
            awaiting_round=sum(e.event == "plan.repair" for e in recording.journal.events),
            reuse=_settled(recording, prepared, plan),
            approver=ParkingApprover(self.decision),
            resumed=RunResume(after_seq=last_seq, problems=recording.journal.problems),
            run_id=recording.run_id,
            start_seq=last_seq,
            recorded=self.decision if self.recorded else None,
            edited=edited_plans(recording.journal),
            cancel=cancel,
        )
        return engine.run(prepared, journal=self._lock.path, listeners=listeners, options=options)

    def close(self) -> None:
        """Let go of the run's lock (a recorded decision stays recorded)."""
        self._lock.release()

    def __enter__(self) -> PendingDecision:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record_decision(
    journal: Path | str,
    decision: Decision,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
) -> PendingDecision:
    """Check a decision and, for approve or reject, append it to the journal, under the lock.

    Once this returns, the decider may be told its decision holds: any later one is
    refused with a `DecisionConflictError` that names this one. The returned `PendingDecision`
    holds the lock until it is closed; `carry_out` continues the run.
    """
    lock = _Lock.take(Path(journal))
    try:
        state = check_decision(lock.path, decision, tools=tools, planner=planner)
        recorded = decision.action in ("approve", "reject")
        if recorded:
            kind = PlanApproved if decision.action == "approve" else PlanRejected
            recording = state.recording
            when, bound = now(), state.awaiting.approval_hash  # held to what would run now
            signature = None
            if kind is PlanApproved and bound is not None:
                signature = sign_decision(decision.who, decision.how, when, bound)
            with JournalWriter(lock.path, recording.run_id, start_seq=recording.last_seq) as out:
                out.emit(
                    kind(
                        who=decision.who,
                        how=decision.how,
                        when=when,
                        plan_hash=state.awaiting.plan_hash,
                        approval_hash=bound,
                        signature=signature,
                    )
                )
    except BaseException:
        lock.release()
        raise
    return PendingDecision(lock, state, decision, recorded=recorded, tools=tools, planner=planner)


def continue_decided(
    journal: Path | str,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
    listeners: Iterable[Listener] = (),
) -> RunResult | None:
    """Carry out a decision recorded but never carried out (its process stopped); else None."""
    path = Path(journal)
    if _recorded(Recording.load(path)) is None:  # most runs: no lock taken, nothing changed
        return None
    lock = _Lock.take(path)
    try:
        found = _recorded(Recording.load(path))  # again, now that nobody else can change it
    except BaseException:
        lock.release()
        raise
    if found is None:
        lock.release()
        return None
    state, decision = found
    with PendingDecision(
        lock, state, decision, recorded=True, tools=tools, planner=planner
    ) as pending:
        return pending.carry_out(listeners)


def _recorded(recording: Recording) -> tuple[ParkedRun, Decision] | None:
    """The parked state and the decision, when the journal ends with a recorded decision."""
    events = recording.journal.events
    if len(events) < 2 or not isinstance(events[-1], PlanApproved | PlanRejected):
        return None
    awaiting, decided = events[-2], events[-1]
    if not isinstance(awaiting, PlanAwaiting) or decided.plan_hash != awaiting.plan_hash:
        return None
    plan = recording.plans.get(awaiting.plan_hash)
    if plan is None:
        return None
    action: Literal["approve", "reject"] = (
        "approve" if isinstance(decided, PlanApproved) else "reject"
    )
    # The run as it parked, without the decision: what settled before it is reused.
    before = Journal(recording.journal.path, events[:-1], recording.journal.problems)
    state = ParkedRun(dataclasses.replace(recording, journal=before), plan, awaiting, None)
    return state, Decision(action, who=decided.who, how=decided.how)


def check_decision(
    journal: Path | str,
    decision: Decision,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
) -> ParkedRun:
    """Refuse, before anything is written, a decision that cannot be carried out.

    The run must be parked, the decision must name who makes it, an edited plan must
    pass the static checks, and a revision needs a planner.
    """
    if not decision.who.strip():
        raise ApprovalError("a decision needs the name of who makes it (--by NAME)")
    state = parked(journal)
    if state is None:
        raise DecisionConflictError(
            "the run is not awaiting approval: " + _what_happened(Path(journal))
        )
    if decision.action == "revise" and planner is None:
        raise ApprovalError("a revision needs a planner (a model) configured")
    prepared = prepared_from(state.recording, Engine(tools=tools))
    with prepared.resources:
        check_bound(state, decision, approval_hash(state.plan, prepared))
        if decision.action == "edit":
            if decision.plan is None:
                raise ApprovalError("an edit needs the edited plan")
            check_given_plan(decision.plan, prepared)  # grounded where the task opts in
    return state


def check_bound(state: ParkedRun, decision: Decision, current: str) -> None:
    """Refuse a decision about something else than what the run waits on, as it would run now.

    `current` is the approval hash of the parked plan in the task as the decider would run it:
    with other tools (changed plugin code, another server's tools) it is another subject.
    """
    waiting = state.awaiting.approval_hash
    if waiting is not None and current != waiting:
        raise ApprovalMismatchError(
            "the run parked on its plan with other tools or inputs than it would run with now "
            f"(parked {waiting[:12]}, now {current[:12]}): its tools' code or schemas changed; "
            "nothing ran. Start the run again to review it as it is now"
        )
    if decision.approval_hash is not None and decision.approval_hash != (waiting or current):
        raise ApprovalMismatchError(
            "the decision names another plan than the one the run waits on "
            f"(decided {decision.approval_hash[:12]}, waiting {(waiting or current)[:12]}): "
            "reload the approval page and decide again"
        )


_DONE = {"plan.approved": "approved", "plan.rejected": "rejected"}


def _what_happened(journal: Path) -> str:
    """Who decided the parked plan last, and how (or that it ended or is running)."""
    try:
        events = read_journal(journal).events
    except JournalError:
        return "its journal cannot be read"
    waits = [i for i, e in enumerate(events) if isinstance(e, PlanAwaiting)]
    after = events[waits[-1] + 1 :] if waits else []
    for event in after:
        if isinstance(event, PlanApproved | PlanRejected):
            return f"{_DONE[event.event]} by {event.who} ({event.how}) at {event.when}"
    if any(e.event == "run.end" for e in events):
        return "the run has ended"
    return "already decided, finished or running"


def _settled(
    recording: Recording, prepared: PreparedTask, awaiting: StepGraph
) -> dict[str, tuple[Any, dict[str, Any]]]:
    """What a parked run already has, by step signature, for reuse.

    In a repair round: what settled under the plan approved before. Otherwise, with
    `approval: per-step`: the read-only steps of the parked plan that ran before it parked.
    """
    prior, _ = recording.prior()
    if prior is None:
        prior = Prior(plan=awaiting)
        for event in recording.journal.events:
            if isinstance(event, Action) and event.step:
                prior.actions[event.step] = decode_value(event.args)
            elif isinstance(event, ObservationEvent) and event.step and event.final and event.ok:
                prior.values[event.step] = decode_value(event.value)
    signatures = step_signatures(check_plan(prior.plan, prepared))
    return {
        signatures[sid]: (value, prior.actions.get(sid, {}))
        for sid, value in prior.values.items()
        if sid in signatures
    }


def edited_plans(journal: Journal) -> frozenset[str]:
    """The hashes of the plans a person wrote at an approval of this run (``plan.edited``)."""
    return frozenset(event.plan_hash for event in journal.events if isinstance(event, PlanEdited))


LOCK_WAIT = 1.0  # seconds a decider waits for another one to record its decision


@dataclass
class _Lock:
    """An exclusive lock on a run's journal, held through an open descriptor."""

    path: Path
    fd: int

    @classmethod
    def take(cls, path: Path) -> _Lock:
        """Lock the journal, or refuse: another decider is recording or carrying out now.

        Recording a decision takes moments, so a second decider waits that long and then
        reads the first one's decision; a run being carried out keeps the lock longer.
        """
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return cls(path, fd)
            except BlockingIOError as e:
                if parked(path) is None or time.monotonic() > deadline:
                    os.close(fd)
                    if parked(path) is None:
                        raise DecisionConflictError(
                            "the run is not awaiting approval: " + _what_happened(path)
                        ) from e
                    raise DecisionConflictError(
                        "another process is deciding or continuing this run now"
                    ) from e
                time.sleep(0.005)

    def release(self) -> None:
        """Closing the descriptor releases the lock (once)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
