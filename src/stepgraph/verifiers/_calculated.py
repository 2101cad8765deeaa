"""The arithmetic of a plan's `calculate` steps, as Python reads it (never run)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from stepgraph.model import Step, StepGraph

# `${inputs.link}` and `${speed}` as the bare names `link` and `speed`
_REFERENCE = re.compile(r"\$\{(?:inputs\.)?(\w+)\}")


def calculated(plan: StepGraph) -> Iterator[tuple[Step, ast.Expression]]:
    """Each `calculate` step with its expression parsed; one Python cannot read is left out."""
    for step in plan.steps:
        expression = step.args.get("expression") if step.tool == "calculate" else None
        if isinstance(expression, str) and (tree := parsed(expression)) is not None:
            yield step, tree


def parsed(expression: str) -> ast.Expression | None:
    """An expression of a plan as Python reads it, references as names; None if it cannot."""
    try:
        return ast.parse(_REFERENCE.sub(r"\1", expression), mode="eval")
    except SyntaxError:
        return None


__all__ = ["calculated", "parsed"]
