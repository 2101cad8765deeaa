"""The reflection stage: every verdict for a finished run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Check, Step, Verdict, VerdictKind
from stepgraph.references import ReferenceError_, find_references, lookup
from stepgraph.tools.expression import bind, evaluate
from stepgraph.units import compatible, dimension_name, format_value, parse_unit
from stepgraph.verifiers._reverse import reverse_calculate, reverse_convert


def verify(
    steps: list[Step],
    values: Mapping[str, Any],
    actions: Mapping[str, dict[str, Any]],
    checks: list[Check],
    inputs: Mapping[str, Any],
) -> list[Verdict]:
    """Reverse-calculate each step, evaluate the declared checks, confirm each `expect_unit`."""
    verdicts: list[Verdict] = []
    for step in steps:
        if step.id not in values:
            continue
        reverse = _reverse(step, actions.get(step.id, {}), values[step.id])
        if reverse is not None:
            verdicts.append(reverse)
        if step.expect_unit is not None:
            verdicts.append(_unit_verdict(step, values[step.id]))
    scope = {"inputs": dict(inputs), **values}
    verdicts.extend(check_verdict(check, scope) for check in checks)
    return verdicts


def _reverse(step: Step, args: dict[str, Any], value: Any) -> Verdict | None:
    try:
        if step.tool == "calculate":
            return reverse_calculate(step.id, args["expression"], value)
        if step.tool == "unit_convert":
            return reverse_convert(step.id, args, value)
    except StepgraphError as e:
        return Verdict(
            kind=VerdictKind.REVERSE,
            step=step.id,
            passed=False,
            description=f"could not recompute: {e}",
        )
    return None


def _unit_verdict(step: Step, value: Any) -> Verdict:
    unit = step.expect_unit or ""
    passed = compatible(value, unit)
    return Verdict(
        kind=VerdictKind.UNIT,
        step=step.id,
        passed=passed,
        description=(
            f"{format_value(value)} is {'' if passed else 'not '}expressible in {unit} "
            f"({dimension_name(parse_unit(unit))})"
        ),
        values={"value": format_value(value), "expect_unit": unit},
    )


def check_verdict(check: Check, scope: Mapping[str, Any]) -> Verdict:
    """Evaluate one declared check with the exact step values."""
    description = check.expression + (f" ({check.why})" if check.why else "")
    try:
        shown = {
            ref.text: format_value(lookup(ref, scope)) for ref in find_references(check.expression)
        }
        outcome = evaluate(bind(check.expression, scope))
    except (StepgraphError, ReferenceError_) as e:
        return Verdict(kind=VerdictKind.CHECK, passed=False, description=f"{description}: {e}")
    if not isinstance(outcome, bool):
        return Verdict(
            kind=VerdictKind.CHECK,
            passed=False,
            values=shown,
            description=f"{description}: evaluates to {format_value(outcome)}, not true or false",
        )
    return Verdict(kind=VerdictKind.CHECK, passed=outcome, description=description, values=shown)
