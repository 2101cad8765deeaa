"""A declared check written out with its values: ``2 x 962.28 GB = 1,924.56 GB < 2,500 GB``.

Each side of the comparison is written with its references replaced by their values,
then what it comes to; between the sides stands the comparison that holds between the
values (``<`` where the check's ``>=`` failed). Every quantity of one dimension is written
in one unit, the first operand's (`format_alike`): 2.5 TB beside 962.28 GB reads
2,500 GB. A check that is not one comparison is followed by its values instead.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from stepgraph.exceptions import StepgraphError
from stepgraph.references import REFERENCE_PATTERN
from stepgraph.tools.expression import Expression, Parsed, evaluate_node, parse, written
from stepgraph.units import format_alike

# The comparison as written, and the one that holds instead when it fails.
_HOLDS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Lt: ("<", ">="),
    ast.LtE: ("<=", ">"),
    ast.Gt: (">", "<="),
    ast.GtE: (">=", "<"),
}
_TIMES = re.compile(r"\s*(?<!\*)\*(?!\*)\s*")  # a product, not a power


def written_check(expression: Expression, outcome: bool) -> str:
    """The check with its values, sides worked out: ``3 x 962.28 GB = 2,886.84 GB >= 2,500 GB``.

    `expression` is the check bound to its values (`bind`), `outcome` what it came to.
    """
    try:
        parsed = parse(expression.text, expression.bindings)
    except StepgraphError:
        return ""
    texts = [ref.text for ref in parsed.references.values() if ref.text in expression.bindings]
    values: list[Any] = [expression.bindings[text] for text in texts]
    body = parsed.tree.body
    if isinstance(body, ast.Compare) and len(body.ops) == 1 and type(body.ops[0]) in _HOLDS:
        sides = [body.left, body.comparators[0]]
        try:
            results = [evaluate_node(side, parsed) for side in sides]
        except StepgraphError:
            results = []
        if results:
            shown = format_alike([*values, *results])
            by_reference = dict(zip(texts, shown, strict=False))
            left, right = (
                _side(side, parsed, by_reference, result)
                for side, result in zip(sides, shown[len(values) :], strict=True)
            )
            held, failed = _HOLDS[type(body.ops[0])]
            return f"{left} {held if outcome else failed} {right}"
    shown = format_alike(values)
    return ", ".join(
        f"{text[2:-1].strip()} = {value}" for text, value in zip(texts, shown, strict=True)
    )


def _side(node: ast.AST, parsed: Parsed, by_reference: dict[str, str], result: str) -> str:
    """One side: its value alone, or as written with its values and what it comes to."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(parsed.references)
    if not names or isinstance(node, ast.Name):  # a literal, or one reference: its value
        return result
    text = REFERENCE_PATTERN.sub(
        lambda m: by_reference.get(m.group(0), m.group(0)), written(node, parsed.references)
    )
    return f"{_TIMES.sub(' x ', text)} = {result}"


__all__ = ["written_check"]
