"""A total split in a ratio the goal states: "twice as many cars as trucks, 60 in all" is 60 / 3.

The 3 is the goal's "twice" and the one thing it is twice of: a program that writes
`total // 3` uses "twice" without writing it, and its 3 is no number the goal states
(GSM8K train 1748, 6586: right programs refused for an unused "twice" and for a 3 the goal
never says). Only as a divisor, and only in a goal that speaks of a total ("in all",
"together", "the sum"): `x * 3` for "twice" stays refused.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from stepgraph.tools.expression import is_number
from stepgraph.verifiers._calculated import parsed
from stepgraph.verifiers._numbers import GoalNumber, goal_numbers, word_numbers

_TOTAL = re.compile(
    r"\b(?:sum|total|together|combined|in all|altogether|all together)\b", re.IGNORECASE
)
_TIMES_AFTER = re.compile(r"\s+times\s+(?:as|the)\b", re.IGNORECASE)
_MULTIPLIERS = frozenset({"twice", "thrice", "double", "triple"})  # words that are their k


def part_divisors(goal: str) -> dict[float, GoalNumber]:
    """Each k + 1 the goal's "k times as many" splits a total by, with the k it stands for."""
    if not _TOTAL.search(goal):
        return {}
    found = {}
    for number in [*goal_numbers(goal), *word_numbers(goal)]:
        written = number.text.casefold()
        if written in _MULTIPLIERS or (
            not number.percent and _TIMES_AFTER.match(goal, number.end) is not None
        ):
            found[float(number.value) + 1] = number
    return found


def divides_only(content: Any, value: float) -> bool:
    """Whether `value` is written in `content` (a step's arguments) only as a divisor."""
    places = [0, 0]  # as a divisor, elsewhere
    for expression in _expressions(content):
        if (tree := parsed(expression)) is None:
            return False
        divisors = {
            id(node.right)
            for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and is_number(node.value) and node.value == value:
                places[id(node) not in divisors] += 1
    return places[0] > 0 and places[1] == 0


def _expressions(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        return [text for value in content.values() for text in _expressions(value)]
    if isinstance(content, list):
        return [text for value in content for text in _expressions(value)]
    return []


__all__ = ["divides_only", "part_divisors"]
