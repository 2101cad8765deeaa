"""The worked examples nearest a goal: those whose quantities are of the kinds the goal's are.

A 1.5B model copies the shape of an example it is shown, right or wrong for the goal: the
suite's `transfer-hours-1g` copied "which is faster"'s `min()` into its answer. Shown the
examples whose quantities are of its kinds (a data size, a rate, a clock range, a share, the
kind asked for), it copies one that fits. Kinds, not words: "a 3.6 TB archive over a 300 Mbps
line" and "100 TB over a 10 Gbps link" share no noun, and every quantity's kind is read by
the engine already (`read_numbers`, `asked_unit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from stepgraph.planner._read_goal import asked_unit
from stepgraph.verifiers import clock_ranges, is_percent, read_numbers


@lru_cache(maxsize=256)
def goal_kinds(goal: str) -> frozenset[str]:
    """The kinds of quantity a goal states and asks for: "[information] / [time]", "share"."""
    kinds = set()
    shares = 0
    for number in read_numbers(goal):
        if number.unit is not None and not number.unit.dimensionless:
            kinds.add(str(number.unit.dimensionality))
        elif is_percent(goal[number.start : number.end]):
            shares += 1
    if shares:
        # one share (a utilisation) or more (and a loss): an example with a loss the goal
        # does not state was copied with it, `(1 - packets)` of no input (tuning nights-3)
        kinds.add("share" if shares == 1 else "shares")
    asked = asked_unit(goal)
    kinds.add(f"asked {asked.dimensionality}" if asked is not None else "asked a count")
    if clock_ranges(goal):
        kinds.add("clock range")  # a night or a window, not "hours a day"
    return frozenset(kinds)


def nearest(goal: str, examples: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The `limit` examples whose kinds are most like the goal's, best first.

    Alike first in the kinds of the quantities stated with a unit (Jaccard), then in all
    kinds, what is asked and shares too: "How many" or "15%" alone make no example alike
    (a transfer's nights are no example for apples). Ties keep the examples' order, so a
    goal like none of them gets the first ones, as with fixed examples.
    """
    wanted = goal_kinds(goal)

    def likeness(example: dict[str, Any]) -> tuple[float, float]:
        kinds = goal_kinds(example["goal"])
        measured = _jaccard(_measured(wanted), _measured(kinds))
        return measured, _jaccard(wanted, kinds) if measured else 0.0

    ranked = sorted(examples, key=likeness, reverse=True)  # sorted() is stable
    return ranked[: max(0, limit)]


_SHARES = ("share", "shares")


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _measured(kinds: frozenset[str]) -> frozenset[str]:
    """The kinds of the quantities stated with a unit, a clock range among them."""
    return frozenset(kind for kind in kinds if kind not in _SHARES and not kind.startswith("asked"))
