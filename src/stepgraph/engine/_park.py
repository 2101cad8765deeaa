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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepgraph.engine._approval import (
    Decision,
    ParkingApprover,
    PlanView,
    approval_hash,
    plan_view,
)
from stepgraph.engine._engine import Engine
from stepgraph.engine._session import RunOptions
from stepgraph.exceptions import ApprovalError, JournalError
from stepgraph.executor import check_plan, plan_diff, step_signatures
from stepgraph.journal import Action, Listener, ObservationEvent, PlanAwaiting, Prior, Recording
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
        prepared = _prepared(self.recording, engine or Engine())
        with prepared.resources:
            return plan_view(self.plan, prepared)

    def diff(self) -> dict[str, Any] | None:
        """What changed against the plan reviewed before (after an edit or a revision)."""
        return None if self.previous is None else plan_diff(self.previous, self.plan)


def parked(journal: Path | str) -> ParkedRun | None:
    """The run's parked state, or None when it is not waiting for a decision."""
    recording = Recording.load(Path(journal))
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
    new plan and park again for its approval. Refused with an `ApprovalError` when the
    run is not waiting (already decided, finished, or being continued by another process).
    """
    path = Path(journal)
    with _exclusive(path):
        state = check_decision(path, decision, tools=tools, planner=planner)
        recording = state.recording
        engine = Engine(
            tools=tools,
            planner=planner,
            repair_rounds=int(recording.start.config.get("repair_rounds", 2)),
            cross_check=bool(recording.start.config.get("cross_check", False)),
        )
        prepared = _prepared(recording, engine)
        options = RunOptions(
            policy=ApprovalPolicy.ASK,  # it parked asking; a decision is what it waits for
            awaiting=state.plan,
            awaiting_round=sum(e.event == "plan.repair" for e in recording.journal.events),
            reuse=_settled(recording, prepared, state.plan),
            approver=ParkingApprover(decision),
            resumed={"after_seq": recording.last_seq, "problems": recording.journal.problems},
            run_id=recording.run_id,
            start_seq=recording.last_seq,
        )
        return engine.run(prepared, journal=path, listeners=listeners, options=options)


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
        raise ApprovalError(
            "the run is not awaiting approval (already decided, finished or running)"
        )
    if decision.action == "revise" and planner is None:
        raise ApprovalError("a revision needs a planner (a model) configured")
    prepared = _prepared(state.recording, Engine(tools=tools))
    with prepared.resources:
        check_bound(state, decision, approval_hash(state.plan, prepared))
        if decision.action == "edit":
            if decision.plan is None:
                raise ApprovalError("an edit needs the edited plan")
            check_plan(decision.plan, prepared)
    return state


def check_bound(state: ParkedRun, decision: Decision, now: str) -> None:
    """Refuse a decision about something else than what the run waits on, as it would run now.

    `now` is the approval hash of the parked plan in the task as the decider would run it:
    with other tools (changed plugin code, another server's tools) it is another subject.
    """
    waiting = state.awaiting.approval_hash
    if waiting is not None and now != waiting:
        raise ApprovalError(
            "the run parked on its plan with other tools or inputs than it would run with now "
            f"(parked {waiting[:12]}, now {now[:12]}): its tools' code or schemas changed; "
            "nothing ran. Start the run again to review it as it is now"
        )
    if decision.approval_hash is not None and decision.approval_hash != (waiting or now):
        raise ApprovalError(
            "the decision names another plan than the one the run waits on "
            f"(decided {decision.approval_hash[:12]}, waiting {(waiting or now)[:12]}): "
            "reload the approval page and decide again"
        )


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


def _prepared(recording: Recording, engine: Engine) -> PreparedTask:
    loaded = engine.prepare(recording.task, base_dir=recording.base_dir)
    return dataclasses.replace(loaded, inputs=recording.inputs)


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the journal, or refuse: someone else is deciding now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise ApprovalError("another process is deciding or continuing this run now") from e
        yield
    finally:
        os.close(fd)  # closing releases the lock
