"""What the verdicts checked: each step's state, and whether the answer's value was checked.

"Verified" is the project's word for "checked and right", so it is given only where a
verdict looked at the value: a step whose tool has no reverse check and that no declared
check names is `unchecked`, not green, and a run whose answer no verdict looked at is
`unchecked`, whatever else passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from stepgraph.model import Verdict, VerdictKind
from stepgraph.references import find_references

VERIFIED = "verified"
UNCHECKED = "unchecked"
FAILED = "failed"  # the step itself failed
CHECK_FAILED = "check_failed"  # it ran, and a verdict about its value failed
SKIPPED = "skipped"  # an upstream step failed: it never ran

STEP_STATES = (VERIFIED, UNCHECKED, FAILED, CHECK_FAILED, SKIPPED)


def covered(verdict: Verdict) -> set[str]:
    """The steps whose values a verdict looked at (inputs are not steps).

    A unit check looks at the value's dimension, not its number: 120 min where the goal
    asks for a sum of 180 min passes it. It can fail a step (`only_fails`), never verify one.
    """
    if verdict.step is not None:
        return {verdict.step}
    if verdict.kind is VerdictKind.CHECK:
        names = {ref.step for key in verdict.values for ref in find_references(key)}
        return {name for name in names if name != "inputs"}
    return set()


def only_fails(verdict: Verdict) -> bool:
    """A verdict that can show a value wrong but not right: the unit check."""
    return verdict.kind is VerdictKind.UNIT


def step_states(
    ran: Mapping[str, bool],
    skipped: Iterable[str],
    verdicts: Iterable[Verdict],
) -> dict[str, str]:
    """Each step's state from what ran (`ran`: step -> succeeded), was skipped, was checked."""
    states = {step: (UNCHECKED if ok else FAILED) for step, ok in ran.items()}
    states.update({step: SKIPPED for step in skipped})
    for verdict in verdicts:
        for step in covered(verdict):
            if states.get(step) not in (UNCHECKED, VERIFIED):
                continue  # failed, skipped, already check_failed, or not a step of the run
            if not verdict.passed:
                states[step] = CHECK_FAILED
            elif not only_fails(verdict):
                states[step] = VERIFIED
    return states


def answer_checked(answer_steps: Iterable[str], verdicts: Iterable[Verdict]) -> bool:
    """Whether a passing verdict looked at the answer's value (a step it comes from)."""
    wanted = set(answer_steps)
    for verdict in verdicts:
        if not verdict.passed:
            continue
        if verdict.kind is VerdictKind.CROSS:  # a second plan reproduced the final value
            return True
        if not only_fails(verdict) and covered(verdict) & wanted:
            return True
    return False
