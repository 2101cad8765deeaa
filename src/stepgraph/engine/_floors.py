"""A floor that drops a remainder needs a question about whole things that fit.

A code model writes ``//`` by habit where the goal divides: held-out GSM8K 1140's program
made "3 potatoes for 2 scoops" 3 // 2 = 1 potato a scoop and was verified with 18 (the
answer is 27), a sampled worked answer saying 18 too. Nothing checked the floor: a step's
reverse check sees only whole numbers. On the 528 recorded GSM8K train programs a floor
that dropped a remainder was in 7 programs, each wrong in its reasoning; 3 were accepted,
2 of them with the dataset's number by luck (27 // 8 for 27 / 9; (8 - 40) // 9 = -4 for 4).
Flooring is an answer where the question asks what fits whole ("How many boxes can she
fill?", "full", "left over"); elsewhere it fails a verdict that says what to write instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeGuard

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Step, Verdict, VerdictKind
from stepgraph.planner._read_goal import the_question
from stepgraph.tools.expression import close, evaluate_node, parse_bound
from stepgraph.units import format_value, normalize

# The question asks what fits whole, or what is left once it does.
_WHOLE_FITS = re.compile(
    r"\b(?:can|could|full|fully|complete|whole|at\s+most|maximum|fits?|left\s*over|leftover|"
    r"remain(?:s|ing|der)?|afford|round(?:ed)?\s+down)\b",
    re.IGNORECASE,
)


def dropped_remainders(
    goal: str, steps: Iterable[Step], actions: Mapping[str, dict[str, Any]]
) -> Verdict | None:
    """A failed verdict for the first floor that drops a remainder the question keeps."""
    question = the_question(goal)
    if question is None or _WHOLE_FITS.search(question):
        return None
    for step, expression in calculations(steps, actions):
        if (dropped := _dropped(expression)) is not None:
            written, quotient = dropped
            return Verdict(
                kind=VerdictKind.ANSWER,
                step=step.id,
                passed=False,
                description=f"step '{step.id}': {written} drops a remainder (the quotient is "
                f"{format_value(quotient)}), and the question asks for no whole things that "
                "fit: divide with /, or round up (ceil) where all must be covered",
                values={"floored": written, "quotient": format_value(quotient)},
            )
    return None


def calculations(
    steps: Iterable[Step], actions: Mapping[str, dict[str, Any]]
) -> Iterator[tuple[Step, Any]]:
    """Each calculate step that ran, with its recorded expression (the values bound)."""
    for step in steps:
        expression = actions.get(step.id, {}).get("expression")
        if step.tool == "calculate" and expression:
            yield step, expression


def _dropped(expression: Any) -> tuple[str, Any] | None:
    """The first ``a // b`` or ``floor(x)`` of the expression that drops a remainder."""
    try:
        parsed = parse_bound(expression)
    except StepgraphError:
        return None
    rounded_up = _rounded_up(parsed.tree)
    for node in ast.walk(parsed.tree):
        if node in rounded_up:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            parts: tuple[ast.expr, ...] = (node.left, node.right)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "floor"
            and len(node.args) == 1
        ):
            parts = (node.args[0],)
        else:
            continue
        try:
            values = [evaluate_node(part, parsed) for part in parts]
            exact = normalize(values[0] / values[1] if len(values) == 2 else values[0])
            floored = normalize(evaluate_node(node, parsed))
            kept = close(exact, floored)
        except (StepgraphError, ArithmeticError, TypeError, ValueError):
            continue
        if not kept:  # 105 g // (18 g) drops 0.83 as 3 // 2 drops a half
            shown = [format_value(value) for value in values]
            return (" // ".join(shown) if len(shown) == 2 else f"floor({shown[0]})"), exact
    return None


def _rounded_up(tree: ast.AST) -> set[ast.AST]:
    """The floors that round up, as people write it: ``(a + b - 1) // b``, ``-(-a // b)``."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = node.operand
            if _floor_div(inner) and isinstance(inner.left, ast.UnaryOp):
                found.add(inner)
        elif _floor_div(node):
            left, divisor = node.left, ast.dump(node.right)
            if (
                isinstance(left, ast.BinOp)
                and isinstance(left.op, ast.Sub)
                and isinstance(left.right, ast.Constant)
                and left.right.value == 1
                and isinstance(left.left, ast.BinOp)
                and isinstance(left.left.op, ast.Add)
                and divisor in (ast.dump(left.left.left), ast.dump(left.left.right))
            ):
                found.add(node)
    return found


def _floor_div(node: ast.AST) -> TypeGuard[ast.BinOp]:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv)
