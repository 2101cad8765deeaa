"""The reflection stage: every verdict for a finished run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Check, Step, Verdict, VerdictKind
from stepgraph.references import ReferenceError_, find_references, lookup
from stepgraph.tools import ToolRegistry, default_registry
from stepgraph.tools.expression import bind, evaluate
from stepgraph.units import compatible, dimension_name, format_value, is_count_unit, parse_unit
from stepgraph.verifiers._depends import unchecked_references
from stepgraph.verifiers._shown import written_check


def verify(
    steps: list[Step],
    values: Mapping[str, Any],
    actions: Mapping[str, dict[str, Any]],
    checks: list[Check],
    inputs: Mapping[str, Any],
    tools: ToolRegistry | None = None,
) -> list[Verdict]:
    """Check each step backwards, evaluate the declared checks, confirm each `expect_unit`.

    Each step is checked by its tool's own reverse hook; `tools` defaults to the built-ins.
    """
    tools = tools if tools is not None else default_registry()
    verdicts: list[Verdict] = []
    for step in steps:
        if step.id not in values:
            continue
        reverse = _reverse(step, tools, actions.get(step.id, {}), values[step.id])
        if reverse is not None:
            verdicts.append(reverse)
        if step.expect_unit is not None:
            verdicts.append(_unit_verdict(step, values[step.id]))
    scope = {"inputs": dict(inputs), **values}
    known = {step.id for step in steps}
    for check in checks:
        # A check over a step that failed or was skipped did not run: the step's failure
        # says what went wrong, and a failed verdict beside it would count twice.
        named = {ref.step for ref in find_references(check.expression)} & known
        if named <= set(values):
            verdicts.append(check_verdict(check, scope))
    return verdicts


def _reverse(step: Step, tools: ToolRegistry, args: dict[str, Any], value: Any) -> Verdict | None:
    """The tool's own reverse check, if it states one."""
    reverse = tools.get(step.tool).reverse if step.tool in tools else None
    if reverse is None:
        return None
    try:
        return reverse(step.id, args, value)
    except (StepgraphError, ArithmeticError) as e:
        return Verdict(
            kind=VerdictKind.REVERSE,
            step=step.id,
            passed=False,
            description=f"could not recompute: {e}",
        )


def _unit_verdict(step: Step, value: Any) -> Verdict:
    unit = step.expect_unit or ""
    passed = compatible(value, unit)
    if passed and is_count_unit(parse_unit(unit)) and not _whole(value):
        return Verdict(
            kind=VerdictKind.UNIT,
            step=step.id,
            passed=False,
            description=f"{format_value(value)} is not a whole number of {unit}: a count is "
            "whole; round it up (ceil) or down (floor), as the goal asks",
            values={"value": format_value(value), "expect_unit": unit},
        )
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


def _whole(value: Any) -> bool:
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if isinstance(magnitude, int):
        return True
    try:
        return float(magnitude).is_integer()
    except (TypeError, ValueError, OverflowError):
        return False


def check_verdict(check: Check, scope: Mapping[str, Any]) -> Verdict:
    """Evaluate one declared check with the exact step values, and say them.

    The verdict's `values` name the references whose values the outcome depends on: a
    check that holds whatever the values are (``${a} == ${a}``) checks nothing, and says so.
    """
    why = f" ({check.why})" if check.why else ""
    description = check.expression + why
    try:
        shown = {
            ref.text: format_value(lookup(ref, scope)) for ref in find_references(check.expression)
        }
        bound = bind(check.expression, scope)
        outcome = evaluate(bound)
    except (StepgraphError, ReferenceError_) as e:
        return Verdict(kind=VerdictKind.CHECK, passed=False, description=f"{description}: {e}")
    if not isinstance(outcome, bool):
        return Verdict(
            kind=VerdictKind.CHECK,
            passed=False,
            values=shown,
            description=f"{description}: evaluates to {format_value(outcome)}, not true or false",
        )
    said = written_check(bound, outcome)
    free = unchecked_references(bound, outcome)
    checked = {text: value for text, value in shown.items() if text not in free}
    if not checked:  # nothing it names changes its outcome: no value was checked
        verb = "holds" if outcome else "fails"
        description = (
            f"not a check: {check.expression} {verb} whatever the values are"
            f"{f' ({said})' if said else ''}{why}, so it verifies no value"
        )
    else:
        description = f"{check.expression}: {said}{why}" if said else description
        if free:
            description += f"; its outcome does not depend on {', '.join(free)}"
    return Verdict(kind=VerdictKind.CHECK, passed=outcome, description=description, values=checked)
