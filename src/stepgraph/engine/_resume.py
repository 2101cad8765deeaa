"""Finishing a run that was interrupted: killed, crashed, or its machine lost."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from stepgraph.engine._approval import Approver, plan_view, tool_prints
from stepgraph.engine._options import RunOptions
from stepgraph.engine._park import continue_decided, edited_plans, parked
from stepgraph.engine._recorded import engine_from, prepared_from
from stepgraph.exceptions import (
    ApprovalError,
    ApprovalMismatchError,
    JournalError,
    SideEffectsInFlightError,
)
from stepgraph.journal import Listener, Recording, RunResume
from stepgraph.model import Budget, RunResult
from stepgraph.planner import Planner
from stepgraph.task import PreparedTask
from stepgraph.tools import Tool


def resume(
    journal: Path | str,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
    rerun_side_effects: bool = False,
    approver: Approver | None = None,
    listeners: Iterable[Listener] = (),
    budget: Budget | None = None,
    accept_changed_tools: bool = False,
) -> RunResult:
    """Finish an interrupted run in its own journal, after a `run.resume` event.

    Steps with an observation are not run again. A step that started but has no
    observation runs again if its tool has no side effects or is idempotent; otherwise only with
    `rerun_side_effects`, or when `approver` (a person) approves, else it is refused.
    A run its budget stopped resumes too; `budget` raises (or lowers) its limits, and
    what it used before counts against them. A run whose tools changed since it started
    (schema or code) is refused unless `accept_changed_tools`.
    """
    path = Path(journal)
    # A decision recorded by a process that stopped before carrying it out: carry it out.
    decided = continue_decided(path, tools=tools, planner=planner, listeners=listeners)
    if decided is not None:
        return decided
    if parked(path) is not None:  # resuming must not stand in for the decision it waits for
        raise ApprovalError(
            "the run is parked awaiting approval; decide with `stepgraph approve RUN_ID --by "
            "NAME` (or --reject), or on the page of `stepgraph serve`"
        )
    recording = Recording.load(path)
    if recording.end_status not in (None, "budget_exceeded"):
        raise JournalError(
            f"the run already ended (status {recording.end_status}); nothing to resume",
            path=str(path),
        )
    engine = engine_from(recording, tools=tools, planner=planner)
    prepared = prepared_from(recording, engine)
    prior, in_flight = recording.prior()
    changed = changed_tools(recording.start.tool_prints, tool_prints(prepared.tools))
    if changed and not accept_changed_tools:
        prepared.resources.close()
        raise ApprovalMismatchError(
            f"the tools changed since the run started ({', '.join(changed)}): finishing it "
            "would mix results of the old code with the new, under an approval of the old; "
            "resume with --accept-changed-tools if that is what you want, or run it again"
        )
    risky = [
        step.id
        for step in (prior.plan.steps if prior else [])
        if step.id in in_flight
        and step.tool in prepared.tools
        and prepared.tools.get(step.tool).side_effects
        and not prepared.tools.get(step.tool).idempotent  # running it twice is running it once
    ]
    if risky and prior is not None and not rerun_side_effects:
        try:
            _confirm_rerun(risky, prior.plan, prepared, approver)
        except ApprovalError:  # refused, or a person said no
            prepared.resources.close()  # not resumed: the task's MCP servers stop now
            raise
    options = RunOptions(
        prior=prior,
        resumed=RunResume(
            after_seq=recording.last_seq,
            settled=sorted(prior.values) if prior else [],
            failed=sorted(prior.failed) if prior else [],
            rerun=in_flight,
            problems=recording.journal.problems,
        ),
        run_id=recording.run_id,
        start_seq=recording.last_seq,
        budget=budget,
        edited=edited_plans(recording.journal),
    )
    return engine.run(
        prepared, journal=path, listeners=listeners, approver=approver, options=options
    )


def changed_tools(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """The tools whose schema or code differ from the record (a record without prints: none)."""
    if not recorded:
        return []
    return [
        f"{name} ({'gone' if name not in now else 'changed'})"
        for name, was in sorted(recorded.items())
        if now.get(name) != was
    ]


def _confirm_rerun(
    risky: list[str], plan: Any, prepared: PreparedTask, approver: Approver | None
) -> None:
    message = (
        f"step(s) {', '.join(risky)} started but have no observation, and their tools have "
        "side effects: they may have changed the world already"
    )
    if approver is None:
        raise SideEffectsInFlightError(
            f"{message}; resume with --rerun-side-effects to run them again", steps=risky
        )
    decision = approver.review(plan_view(plan, prepared))
    if decision.action != "approve":
        raise SideEffectsInFlightError(f"{message}; the re-run was not approved", steps=risky)
