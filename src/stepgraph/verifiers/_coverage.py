"""Coverage of a typed goal: every number the goal states must be used by the plan.

A plan whose numbers agree with each other can still ignore the goal: a real small
model answered "A 2 TB disk is 65% full. How many GB are free?" with 2,000 GB, a plan
that never used 65%. For a goal typed with its numbers (a task without inputs), each
number of the goal must appear in some step's arguments or a check: as written, or for a
percentage as its fraction or complement (12% as 0.12, 0.88 or 88), or for a clock range
("00:00 to 06:00") as its length. A number the plan does not use makes the run
unverified, never refused: the repair round tells the model which one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.model import StepGraph, Verdict, VerdictKind
from stepgraph.verifiers._numbers import GoalNumber, goal_numbers, literal_numbers, matches


def unused_numbers(
    plan: StepGraph, stated: list[GoalNumber], task_inputs: Mapping[str, Any] | None = None
) -> list[GoalNumber]:
    """The goal's numbers that no step, check or input uses and `unused` does not list.

    A number is used as written or in an accepted form (12% as 0.12, 0.88 or 88); a
    declared input whose quote states it uses it too, as does a task input's value.
    """
    used = [n for step in plan.steps for n in literal_numbers(step.args)]
    used += [n for check in plan.checks for n in literal_numbers(check.expression)]
    used += [n for item in plan.inputs.values() for n in literal_numbers(item.value)]
    for value in (task_inputs or {}).values():
        if isinstance(value, pint.Quantity):
            used.append(float(value.magnitude))
            if value.units.dimensionless:
                used.append(float(value.to("dimensionless").magnitude))
        else:
            used += literal_numbers(value)
    listed = {_plain(item.number) for item in plan.unused if item.why.strip()}
    listed |= {_plain(n.text) for item in plan.inputs.values() for n in goal_numbers(item.quote)}
    return [
        number
        for number in stated
        if _plain(number.text) not in listed and not any(matches(u, number.accepted) for u in used)
    ]


def _plain(text: str) -> str:
    return re.sub(r"[\s,]", "", text).rstrip("%").casefold()


def goal_coverage(goal: str, plan: StepGraph) -> Verdict | None:
    """A verdict on whether the plan uses every number the goal states (None: none stated)."""
    stated = [n for n in goal_numbers(goal) if n.value != 0]
    if not stated:
        return None
    unused = [number.text for number in unused_numbers(plan, stated)]
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


__all__ = ["goal_coverage", "unused_numbers"]
