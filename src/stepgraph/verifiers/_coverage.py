"""Coverage of a goal: every number the goal states must be used by the plan.

A plan whose numbers agree with each other can still ignore the goal: a real small model
answered "A 2 TB disk is 65% full. How many GB are free?" with 2,000 GB, a plan that never
used 65%. Each number of the goal must appear in some step's arguments or a check: as
written, or for a percentage as its fraction (12% as 0.12) or, where the goal's words say
a share is lost or left, its complement ("12% lost": 0.88 or 88), or for a clock range
("00:00 to 06:00") as its length; or be the value of an input the plan refers to
(`states`). The verdict after the run holds a model's plan of a typed goal and any plan of
a task with ``grounded: true``; a person's plan of another task is not held to its goal's
prose ("a DAG of 25 steps"). A number the plan does not use makes the run unverified: the
repair round tells the model which one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Check, StepGraph, Verdict, VerdictKind
from stepgraph.references import find_references
from stepgraph.task import parse_input
from stepgraph.verifiers._enumerated import enumerated
from stepgraph.verifiers._numbers import (
    GoalNumber,
    goal_numbers,
    literal_numbers,
    matches,
    stated_quantities,
    states,
    word_numbers,
)
from stepgraph.verifiers._parts import divides_only, part_divisors
from stepgraph.verifiers._restated import restated


def used_inputs(plan: StepGraph, checks: Iterable[Check] = ()) -> set[str]:
    """The inputs (``${inputs.name}``) that a step's arguments or a check refers to."""
    places: list[Any] = [step.args for step in plan.steps]
    places += [check.expression for check in [*plan.checks, *checks]]
    return {
        ref.path[0]
        for place in places
        for ref in find_references(place)
        if ref.step == "inputs" and ref.path
    }


def unused_numbers(
    plan: StepGraph,
    goal: str,
    inputs: Mapping[str, Any] | None = None,
    checks: Iterable[Check] = (),
) -> list[GoalNumber]:
    """The goal's numbers (but 0) that no step, check or input uses and `unused` does not list.

    A literal uses a number as written or in an accepted form (12% as 0.12; "12% lost" also as
    0.88 or 88). An
    input (the task's, from `inputs`, or the plan's) uses a number when a step or a check
    refers to it and its value is the quantity the goal states there (`states`): a task
    input of 450 MB/s does not use the goal's "450 Mbps".
    """
    used = [n for step in plan.steps for n in literal_numbers(step.args)]
    used += [n for check in plan.checks for n in literal_numbers(check.expression)]
    referred = used_inputs(plan, checks)
    # A declared constant a step uses is a literal there: `factor = 1.5  # 50% longer`
    used += [
        n
        for name, c in plan.constants.items()
        if name in referred
        for n in literal_numbers(c.value)
    ]
    values = [value for name, value in (inputs or {}).items() if name in referred]
    for name, item in plan.inputs.items():
        if name in referred:
            try:
                values.append(parse_input(item.value))
            except StepgraphError:
                continue  # reported by the inputs' own check
    stated_by_place: dict[int, list[Any]] = {}
    for stated in stated_quantities(goal):
        stated_by_place.setdefault(stated.number.end, []).append(stated)
    listed = {_plain(item.number) for item in plan.unused if item.why.strip()}
    unused = [
        number
        for number in required_numbers(goal)
        if _plain(number.text) not in listed
        and not any(matches(u, number.accepted) for u in used)
        and not any(
            states(stated, value)
            for stated in stated_by_place.get(number.end, [])
            for value in values
        )
    ]
    spelled_out = enumerated(unused, goal, plan)
    split = _split_by(plan, goal)
    return [n for n in unused if n not in spelled_out and (n.text, n.end) not in split]


def _split_by(plan: StepGraph, goal: str) -> set[tuple[str, int]]:
    """The goal's "k times as many" whose k + 1 divides a total in some step (`_parts`)."""
    return {
        (number.text, number.end)
        for divisor, number in part_divisors(goal).items()
        if any(divides_only(step.args, divisor) for step in plan.steps)
    }


def required_numbers(goal: str) -> list[GoalNumber]:
    """The goal's numbers a plan must use: not zero, no name, and none restating others."""
    numbers = [*goal_numbers(goal), *word_numbers(goal)]
    free = {id(number) for number in restated(goal, numbers)}
    return [n for n in numbers if n.value != 0 and n.required and id(n) not in free]


def _plain(text: str) -> str:
    return re.sub(r"(?:%|percent)$", "", re.sub(r"[\s,]", "", text).casefold())


def goal_coverage(
    goal: str,
    plan: StepGraph,
    inputs: Mapping[str, Any] | None = None,
    checks: Iterable[Check] = (),
) -> Verdict | None:
    """A verdict on whether the plan uses every number the goal states (None: none stated).

    `inputs` are the task's own input values and `checks` its own checks, for a task held
    to its goal's words (``grounded: true``).
    """
    stated = required_numbers(goal)
    if not stated:
        return None
    unused = [number.text for number in unused_numbers(plan, goal, inputs, checks)]
    description = (
        f"the plan uses every number the goal states ({len(stated)})"
        if not unused
        else "the goal states numbers no step uses: "
        + ", ".join(f"'{text}'" for text in unused)
        + "; use each in the plan where it belongs"
    )
    return Verdict(
        kind=VerdictKind.COVERAGE,
        passed=not unused,
        description=description,
        values={n.text: "unused" if n.text in unused else "used" for n in stated},
    )


__all__ = ["goal_coverage", "unused_numbers", "used_inputs"]
