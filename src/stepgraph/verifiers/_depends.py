"""Whether a declared check's outcome depends on the values it names.

``${a} == ${a}``, ``${a} - ${a} == 0`` or ``${a} * 0 == 0`` hold whatever `a` is: they
name a value and check nothing about it, so they must not make it "verified". Each value
a check names is put back in its place as other values of its kind (scaled up and down by
several orders of magnitude, negated, zero, one of its unit more and less); a value whose
stand-ins never change the outcome is not checked by it. A real check flips for some
stand-in: ``${nights} * ${per_night} >= ${total}`` fails with a smaller `nights`, and
``${n} > 0`` with a negated `n`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.references import find_references
from stepgraph.tools.expression import Expression, evaluate, is_number
from stepgraph.units import registry

# Scales that move a value across any bound a check is likely to state, and across zero;
# the whole numbers keep a 4,000-bit integer exact, where a float scale overflows.
_SCALES = (1.37, 0.61, -1.37, 1e6, 1e-6, -1, 0, 10**6)


def unchecked_references(expression: Expression, outcome: Any) -> list[str]:
    """The references of a bound check whose value its outcome does not depend on.

    References to one value (``${a}`` and ``${ a }``) stand in together. A value that
    cannot stand in for another (a text, a truth value) counts as checked.
    """
    same: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for ref in find_references(expression.text):
        if ref.text in expression.bindings:
            texts = same.setdefault((ref.step, ref.path), [])
            if ref.text not in texts:
                texts.append(ref.text)
    free: list[str] = []
    for texts in same.values():
        others = list(stand_ins(expression.bindings[texts[0]]))
        if others and not any(_changes(expression, texts, other, outcome) for other in others):
            free.extend(texts)
    return free


def stand_ins(value: Any) -> Iterator[Any]:
    """Other values of the kind of `value`: scaled, negated, zero, one of its unit more and less."""
    if not is_number(value):
        return
    one = registry().Quantity(1, value.units) if isinstance(value, pint.Quantity) else 1
    for how, by in (*(("times", scale) for scale in _SCALES), ("plus", one), ("plus", -one)):
        try:
            yield value * by if how == "times" else value + by
        except (ArithmeticError, TypeError, ValueError, pint.PintError):
            continue  # a 4,000-bit integer times a float, an offset unit (°C) scaled


def _changes(expression: Expression, texts: list[str], other: Any, outcome: Any) -> bool:
    bindings = {**expression.bindings, **dict.fromkeys(texts, other)}
    try:
        result = evaluate(Expression(expression.text, bindings))
    except StepgraphError:
        return False  # no outcome to compare (sqrt of a negated value): no evidence either way
    return not isinstance(result, bool) or result != outcome


__all__ = ["stand_ins", "unchecked_references"]
