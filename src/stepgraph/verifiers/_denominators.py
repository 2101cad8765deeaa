"""A fraction in words written as its denominator, and then added: "a third more" as `+ 3`.

A plan may write "a third" as its numbers (`x / 3`, `x * (1 + 1/3)`), so the 3 is one of
the goal's numbers. A small model also writes `squirrels + 3` for "a third more squirrels"
(GSM8K train 1775: 12 + 15 = 27 for 12 + 16 = 28, verified in two runs, the words making
the same slip). A share divides or multiplies; a denominator added to or taken from
something adds or takes that many things. Only where the goal states the number nowhere
else: "3 apples and a third of the rest" may add its 3.
"""

from __future__ import annotations

import ast

from stepgraph.exceptions import PlanProblem
from stepgraph.model import StepGraph
from stepgraph.verifiers._calculated import calculated
from stepgraph.verifiers._numbers import goal_numbers, word_numbers, worded_fraction

_HALF = {"half": 2}


def added_denominators(plan: StepGraph, goal: str) -> list[PlanProblem]:
    """Each step that adds or subtracts the denominator of one of the goal's fractions."""
    denominators = _denominators(goal)
    if not denominators:
        return []
    problems = []
    for step, tree in calculated(plan):
        for number in sorted(_added_constants(tree) & set(denominators)):
            fraction = denominators[number]
            problems.append(
                PlanProblem(
                    step.id,
                    f"{number:g} is the denominator of '{fraction}', added or taken away as "
                    f"{number:g} things: a share divides or multiplies (x / {number:g}, "
                    f"x * (1 + 1 / {number:g}) for '{fraction} more')",
                )
            )
    return problems


def _denominators(goal: str) -> dict[float, str]:
    """The denominators of the goal's fractions in words that it states as no other number."""
    found: dict[float, str] = {}
    others: set[float] = set()
    for number in word_numbers(goal):
        parts = worded_fraction(number.text)
        denominator = parts[1] if parts else _HALF.get(number.text.casefold())
        if denominator is None:
            others.add(float(number.value))
        else:
            found.setdefault(float(denominator), number.text)
    others |= {float(number.value) for number in goal_numbers(goal)}
    return {value: text for value, text in found.items() if value not in others}


def _added_constants(tree: ast.Expression) -> set[float]:
    """The numbers that are an operand of a sum or a difference in `tree`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            for side in (node.left, node.right):
                while isinstance(side, ast.UnaryOp) and isinstance(side.op, ast.UAdd | ast.USub):
                    side = side.operand  # `x - -3` adds the 3 all the same
                if isinstance(side, ast.Constant) and isinstance(side.value, int | float):
                    found.add(float(side.value))
    return found


__all__ = ["added_denominators"]
