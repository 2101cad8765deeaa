"""A count of things a question needs is whole: "How many printers are needed?" is not 6.67.

The suite's printers-needed ("20,000 pages within 2 hours, 25 pages per minute"): the
model's program divided and stopped at 6.67 printers, its words said 7, and the run ended
unverified three times over with the same program. A fractional count of things the goal
needs (buys, fits, hires) answers no question; the verdict says so and how to round, so the
run's repair asks again instead of holding the same answer against the words.
"""

from __future__ import annotations

import math
from typing import Any

import pint

from stepgraph.model import Verdict, VerdictKind
from stepgraph.planner._read_goal import asked_count
from stepgraph.units import format_value


def whole_count(goal: str, value: Any) -> Verdict | None:
    """A failed verdict where the goal needs whole things and the answer is a fraction of one."""
    noun = asked_count(goal)
    if noun is None or isinstance(value, bool):
        return None
    if isinstance(value, pint.Quantity):
        if not value.dimensionless:
            return None
        value = value.to("dimensionless").magnitude
    if not isinstance(value, int | float) or math.isclose(value, round(value), rel_tol=1e-9):
        return None  # 3 cups / (1/3 cup) is 9.000000000009 in floats: whole, not a fraction
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=False,
        description=f"the goal asks how many {noun} it needs, and {format_value(value)} is "
        "no whole number of them: round up (ceil) where all must be covered, down (floor) "
        "where only full ones count",
        values={"answer": format_value(value)},
    )
