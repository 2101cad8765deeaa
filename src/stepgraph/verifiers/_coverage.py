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

from stepgraph.model import StepGraph, Verdict, VerdictKind
from stepgraph.verifiers._numbers import goal_numbers, literal_numbers, matches


def goal_coverage(goal: str, plan: StepGraph) -> Verdict | None:
    """A verdict on whether the plan uses every number the goal states (None: none stated)."""
    stated = [(n.text, n.accepted) for n in goal_numbers(goal) if n.value != 0]
    if not stated:
        return None
    used = [n for step in plan.steps for n in literal_numbers(step.args)]
    used += [n for check in plan.checks for n in literal_numbers(check.expression)]
    used += [n for item in plan.inputs.values() for n in literal_numbers(item.value)]
    listed = {item.number.replace(",", "").strip() for item in plan.unused if item.why.strip()}
    unused = [
        text
        for text, values in stated
        if text.replace(",", "").rstrip("%").strip() not in listed
        and not any(matches(u, values) for u in used)
    ]
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
        values={text: "unused" if text in unused else "used" for text, _ in stated},
    )


__all__ = ["goal_coverage"]
