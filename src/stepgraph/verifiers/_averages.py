"""An average divides a sum by how many things it adds: "Jim 20, Jane 60, Jerry 40" is / 3.

The 3 is the count of the terms summed, and the goal writes it nowhere as a number (GSM8K
train 2666: a right program refused, "3 is not a number of the goal"; of the 264 train
questions that speak of an average, 52 solutions divide by a count the question never
writes). Only where the goal speaks of an average or a mean, only as a divisor, and only of
a sum of exactly as many names or numbers, written in the same expression or as the step it
divides: `(a + b) / 3`, `x / 3` beside no sum, and `(a + 2 * b) / 2` stay refused. Not in a
goal that names days of the week: grounding counts those itself (`_counted_days`), and "On
Tuesday and Wednesday, twice as many" makes one term of two days.
"""

from __future__ import annotations

import ast
import re

from stepgraph.model import StepGraph
from stepgraph.tools.expression import is_number
from stepgraph.verifiers._calculated import calculated

_AVERAGE = re.compile(r"\b(?:average|averages|mean)\b", re.IGNORECASE)


def averaged_counts(plan: StepGraph, goal: str) -> dict[str, set[float]]:
    """Per step, each count it writes only as the divisor of a sum of that many terms."""
    if not _AVERAGE.search(goal):
        return {}
    steps = list(calculated(plan))
    sums = {step.id: _terms(tree.body) for step, tree in steps}
    found: dict[str, set[float]] = {}
    for step, tree in steps:
        divisors: dict[int, bool] = {}  # each divisor constant: does it average a sum?
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                count = _terms(node.left)
                if isinstance(node.left, ast.Name):
                    count = sums.get(node.left.id, 1)
                divisors[id(node.right)] = _value(node.right) == count > 1
        counts: dict[float, bool] = {}
        for node in ast.walk(tree):
            if (value := _value(node)) is not None:
                counts[value] = counts.get(value, True) and divisors.get(id(node), False)
        if averaged := {value for value, only in counts.items() if only}:
            found[step.id] = averaged
    return found


def _terms(node: ast.expr) -> int:
    """How many values a sum adds: `a + b + c` is 3; 0 unless each is another name or number.

    A term worked out in place may stand for several things: in `39 + 2 * 39 * 2 + 48 + 57`
    the second term is two days' bugs, and the average is over five (GSM8K test 928). A
    zero or a repeated term pads the count: `(a + b + 0) / 3` would let any divisor through.
    """
    terms = _summed(node)
    keys = [term.id if isinstance(term, ast.Name) else _value(term) for term in terms]
    if any(key is None or key == 0 for key in keys) or len(set(keys)) != len(keys):
        return 0
    return len(keys)


def _summed(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_summed(node.left), *_summed(node.right)]
    return [node]


def _value(node: ast.AST) -> float | None:
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    return float(value) if isinstance(value, int | float) and is_number(value) else None


__all__ = ["averaged_counts"]
