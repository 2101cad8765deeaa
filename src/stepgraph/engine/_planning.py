"""Asking the planner, keeping the graph its checks built, so a plan is checked once.

`Planner.plan`, `repair` and `revise` return a plan; their `..._checked` forms return it
with the graph `planner/_parse.py` built while validating it, which the session runs. A
subclass of `Planner` that overrides one of the three is asked through it, as before,
and its plan is checked by the session (the graph of the base class's method would not
be its plan's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stepgraph.engine._plans import PlanBook
from stepgraph.exceptions import PlanningError
from stepgraph.journal import JournalWriter
from stepgraph.model import StepGraph, WorkedExample
from stepgraph.planner import Planner, PlanWatcher, asked_time_of_day
from stepgraph.task import PreparedTask


def shown_examples(examples: Sequence[WorkedExample]) -> dict[str, Sequence[WorkedExample]]:
    """`examples` as a keyword argument, only when there are some.

    A caller's planner (a subclass written before examples existed) may take none.
    """
    return {"examples": examples} if examples else {}


def refuse_time_of_day(prepared: PreparedTask) -> None:
    """Raise `PlanningError` where the goal asks for a time of day ("What time ...?").

    The engine computes quantities; a time of day is none, so a plan's answer would be a
    duration (13.25 h, 795 min) that reads as another time, and a lone "10:40" is no number
    a plan can use, so only a plan that ignores it could pass its checks: every answer it
    verified would be wrong. Refused before any model call, with what to ask instead.
    """
    asked = asked_time_of_day(prepared.task.goal)
    if asked is not None:
        raise PlanningError(
            f"the goal asks for a time of day ({asked!r}), which stepgraph does not compute: "
            "its answers are quantities, and a number of hours or minutes would read as "
            "another time. Ask for the duration instead (e.g. 'How long does the trip "
            "take?') and add it to the clock time yourself"
        )


def planned(
    planner: Planner,
    prepared: PreparedTask,
    journal: JournalWriter,
    plans: PlanBook,
    *,
    watch: PlanWatcher | None = None,
    examples: Sequence[WorkedExample] = (),
) -> StepGraph:
    """The planner's first plan; only when there are some are `examples` passed."""
    shown = shown_examples(examples)
    if type(planner).plan is not Planner.plan:
        return planner.plan(prepared, journal, watch=watch, **shown)
    checked = planner.plan_checked(prepared, journal, watch=watch, **shown)
    return plans.checked(checked.plan, checked.graph)


def programmed(
    planner: Planner,
    prepared: PreparedTask,
    journal: JournalWriter,
    plans: PlanBook,
    refused: PlanningError,
) -> StepGraph:
    """The model's program read as a plan, once `refused` said no plan of it was valid.

    Only a planner asked for it (`program_plan`) tries; where it does not, or its program
    is no valid plan either, `refused` is raised, with the program's problems after it.
    """
    if not getattr(planner, "program_plan", False):
        raise refused
    try:
        checked = planner.program_checked(prepared, journal)
    except PlanningError as program:
        error = PlanningError(f"{refused}\n{program}")
        error.problems = [*refused.problems, *program.problems]
        raise error from refused
    return plans.checked(checked.plan, checked.graph)


def repaired(
    planner: Planner,
    prepared: PreparedTask,
    plan: StepGraph,
    observations: Mapping[str, Any],
    failures: Sequence[str],
    journal: JournalWriter,
    plans: PlanBook,
    *,
    examples: Sequence[WorkedExample] = (),
) -> StepGraph:
    """The planner's repair of `plan`, given what ran and what went wrong.

    The first plan's worked `examples` are passed only when there are some.
    """
    if type(planner).repair is not Planner.repair:
        return planner.repair(prepared, plan, observations, failures, journal)
    shown = shown_examples(examples)
    checked = planner.repair_checked(prepared, plan, observations, failures, journal, **shown)
    return plans.checked(checked.plan, checked.graph)


def revised(
    planner: Planner,
    prepared: PreparedTask,
    plan: StepGraph,
    comment: str,
    journal: JournalWriter,
    plans: PlanBook,
) -> StepGraph:
    """The planner's revision of `plan`, given a reviewer's comment."""
    if type(planner).revise is not Planner.revise:
        return planner.revise(prepared, plan, comment, journal)
    checked = planner.revise_checked(prepared, plan, comment, journal)
    return plans.checked(checked.plan, checked.graph)
