"""A conversion a model did by hand, on a step whose declared unit does it already.

A small model asked for MB/s of "450 Mbps" writes ``speed: "MB/s" = link / 8``: the unit
it declares converts the value, and its ``/ 8`` converts it a second time (7.03 MB/s,
not 56.25). The static checks refuse the 8 as a factor done by hand, and the model, shown
why, writes it again (seen on the suite's unit traps, 2026-12-03). Where the step is just
one input or earlier step (whose unit it declares, or the static checks trace) times or
over one number, and that number is exactly what converts that unit into the declared
one, the number can mean nothing else: it is dropped, the units convert, and the repair
is said among the plan's repairs. The number may be a chain (``link * 1000 * 1000``,
``minutes * 60 / 3600``) or a power (``10 ** 12``): their product counts. A data size or
rate converted into another data unit it declares, by bit/byte and prefix factors only, is
dropped even where the factors are wrong (1024 for 8: the very mix-up of bits, bytes and
prefixes the units exist for). Anything else stays refused.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Collection, Mapping
from typing import Any, cast

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.executor import static_outputs
from stepgraph.model import StepGraph
from stepgraph.planner._periods import placeheld
from stepgraph.references import find_references
from stepgraph.tools import ToolRegistry
from stepgraph.units import format_unit, parse_unit, quantity
from stepgraph.verifiers._everyday import is_everyday

_NAME = r"(?:inputs\.)?\w+"  # an input, or an earlier step
_REFERENCE = rf"\$\{{{_NAME}\}}"
_FACTOR = r"(?P<factor>\d+(?:\.\d+)?)"
# `(a + b) / 60`: a sum of references in one unit, converted as a whole
_SUM_FACTOR = re.compile(
    rf"^\s*\((?P<sum>\s*{_REFERENCE}(?:\s*[+-]\s*{_REFERENCE})+\s*)\)\s*(?P<op>[*/])\s*{_FACTOR}\s*$"
)
_SAME = 1e-9  # relative: the factor must be the unit ratio itself, not near it
ROUNDED = 1e-3  # relative: 1.60934 for 1.609344 km/mi, 28.35 for 28.3495 g/oz
_PREFIX_FACTORS = {1000.0, 1024.0, 1e6, 1048576.0, 1e9, 1073741824.0, 1e12}
_DATA = {"[information]", "[information] / [time]"}
_DATA_FACTORS = {8.0, *(1000.0**k for k in range(1, 6)), *(1024.0**k for k in range(1, 6))}


def undo_hand_conversions(
    plan: StepGraph,
    values: Mapping[str, Any],
    stated: Collection[float],
    repairs: list[str],
    tools: ToolRegistry,
) -> StepGraph:
    """The plan with each such hand conversion dropped; each one said in `repairs`.

    `values` are the plan's input values; `stated` the goal's numbers (a factor the goal
    states is the goal's, never a conversion). Where `tools` has `unit_convert` the step
    becomes that tool's call, which the reflection stage converts back to check.
    """
    wanted = {step.id: step.expect_unit or _named_unit(step.id) for step in plan.steps}
    if not any(wanted.values()):
        return plan
    units = operand_units(plan, values, tools)
    steps, undone = [], False
    for step in plan.steps:
        expression = step.args.get("expression") if step.tool == "calculate" else None
        unit = wanted[step.id]
        converted = (
            _converted(expression, unit, units, stated, exact=not step.expect_unit)
            if isinstance(expression, str) and unit
            else None
        )
        if unit is None or converted is None:
            steps.append(step)
            continue
        operand, operand_unit, factor = converted
        undone = True
        shown = f"{_shown(operand)} ({format_unit(operand_unit)})"
        how = "the declared unit" if step.expect_unit else f"the unit its name says ({unit})"
        repairs.append(
            f"step '{step.id}': dropped the {factor} that converted {shown} to "
            f"{unit} by hand; {how} converts it"
        )
        single = re.fullmatch(_REFERENCE, operand) is not None
        if single and "unit_convert" in tools.names():
            call = {"tool": "unit_convert", "args": {"value": operand, "to_unit": unit}}
        else:
            call = {"args": {**step.args, "expression": operand}}
        steps.append(step.model_copy(update={**call, "expect_unit": unit}))
    return plan.model_copy(update={"steps": steps}) if undone else plan


def operand_units(
    plan: StepGraph, values: Mapping[str, Any], tools: ToolRegistry
) -> dict[str, pint.Unit]:
    """The unit of each input and step with one, by reference; a declared unit comes first.

    A traced unit counts too: ``left = rice - cooked`` is in kg when both are (GSM8K train
    424: ``left_g: "g" = left * 1000`` was refused three times).
    """
    units: dict[str, pint.Unit] = {
        f"inputs.{name}": cast(pint.Unit, value.units)  # pint types it as its PlainUnit
        for name, value in values.items()
        if isinstance(value, pint.Quantity)
    }
    for step_id, output in static_outputs(plan, tools, values).items():
        # dimensionality, not `dimensionless`: that converts the magnitude, and a 400-digit
        # one of gal**400 overflowed there (pint converts in floats)
        if isinstance(output, pint.Quantity) and output.dimensionality:
            units[step_id] = cast(pint.Unit, output.units)
    for step in plan.steps:
        if step.expect_unit:
            try:
                units[step.id] = parse_unit(step.expect_unit, counts=False)
            except StepgraphError:
                continue
    return units


def measure_word(text: str) -> str | None:
    """`text` where it names an everyday unit of measure or money ("feet", "cents")."""
    return text if measure_unit(text) is not None else None


def measure_unit(text: str) -> pint.Unit | None:
    """The everyday unit of measure or money `text` names, or None."""
    try:
        unit = parse_unit(text, counts=False)
    except StepgraphError:
        return None
    return unit if not unit.dimensionless and is_everyday(unit) else None


def _named_unit(step_id: str) -> str | None:
    """The unit a step's name ends (or starts) with (``row_length_inches``), one of measure.

    A program converts by hand under a name that says into what: ``row_length_inches =
    row_length_feet * 12`` (GSM8K train 4978), ``..._ounces = ..._pounds * 16`` (4272),
    ``total_money_cents = total_money * 100`` (6921, dollars).
    """
    words = step_id.split("_")
    last = words[-1]
    if len(last) >= 3 and last.isalpha() and measure_word(last):
        return last
    # or starts with a unit of time: ``hours_watched = total_minutes / 60`` (GSM8K train 145,
    # test 853's ``hours_to_clean_half``); not a rate's (``hours_per_day``), nor another
    # kind's (``bytes_transferred = bits / 8`` was refused in a recorded real run, and a
    # replay must refuse it again)
    first = words[0]  # at least 4 letters: "min_price" is no minute
    if len(first) < 4 or not first.isalpha() or "per" in words:
        return None
    unit = measure_unit(first)
    return first if unit is not None and unit.dimensionality == {"[time]": 1} else None


def _converted(
    expression: str,
    unit: str,
    units: Mapping[str, pint.Unit],
    stated: Collection[float],
    *,
    exact: bool = False,
) -> tuple[str, pint.Unit, str] | None:
    """The operand (text, unit) and factor of ``x * factor`` or ``x / factor``, or None.

    `x` is a reference, or a parenthesized sum of references in one unit. The factor may be
    a chain of numbers and powers of numbers (``data * 1000 * 1000``, ``size / 1024 ** 3``,
    ``450 * 10 ** 6`` in a program): their product is the factor.

    Only where the factor is exactly what converts one of the operand's unit into `unit`,
    or (unless `exact`: a unit only a name says) a prefix's factor in the other base
    (`_other_base`).
    """
    found = _factored(expression, units)
    if found is None:
        return None
    text, operand, factors = found
    factors = [(factor, multiplies) for factor, multiplies in factors if factor != 1]
    if operand is None or not factors or any(f == 0 or f in stated for f, _ in factors):
        return None  # `x * (1 / 8)` is a factor of 8; `x * 1` converts nothing
    try:
        ratio = float(quantity(1, operand).to(parse_unit(unit, counts=False)).magnitude)
    except (StepgraphError, pint.PintError):
        return None
    by_hand = math.prod(factor if multiplies else 1 / factor for factor, multiplies in factors)
    shown = " ".join(f"{'*' if multiplies else '/'} {factor:g}" for factor, multiplies in factors)
    shown = f"{factors[0][0]:g}" if len(factors) == 1 else shown
    if math.isclose(ratio, by_hand, rel_tol=_SAME):
        return text, operand, shown
    if _rounded(ratio, factors):
        return text, operand, shown
    prefixes = all(factor in _PREFIX_FACTORS for factor, _ in factors)
    if not exact and prefixes and _other_base(ratio, by_hand):
        return text, operand, shown
    return (text, operand, shown) if not exact and _data_slip(operand, ratio, factors) else None


def _rounded(ratio: float, factors: list[tuple[float, bool]]) -> bool:
    """Whether one factor is the ratio as people round it: 1.60934 km a mile, 28.35 g an oz.

    "How many kilometres is a 26.2 mile marathon?" was planned ``km: "km" = marathon *
    1.60934`` three times and refused each time as a number the goal does not state (a new
    user's question, 2026-12-06). Only a factor with a fraction (a whole number is a count
    or a prefix, held exactly above), within 0.1% of a ratio that is no 1.
    """
    if len(factors) != 1 or math.isclose(ratio, 1.0, rel_tol=ROUNDED):
        return False
    factor, multiplies = factors[0]
    by_hand = factor if multiplies else 1 / factor
    whole = factor == int(factor)
    return not whole and math.isclose(ratio, by_hand, rel_tol=ROUNDED)


def _data_slip(operand: pint.Unit, ratio: float, factors: list[tuple[float, bool]]) -> bool:
    """Whether the factors are a data size's conversion slipped (1024 for 8, 1024 for 1000).

    "A disk writes 250 MB/s. What is that in Mbps?" was planned ``rate: "Mbps" = rate /
    1024`` three times (the suite), "64 Gb in GB" ``gb: "GB" = gb / 1024``: the declared unit
    says what was meant, and mixing up bits, bytes and prefixes is the very slip the units
    are there to take away. Only data sizes and rates, only prefix and bit/byte factors, and
    only into another unit (a factor on a value already in the unit declared is no slip).
    """
    dimension = str((1 * operand).dimensionality)
    if dimension not in _DATA or math.isclose(ratio, 1.0, rel_tol=_SAME):
        return False
    return all(factor in _DATA_FACTORS for factor, _ in factors)


def _factored(
    expression: str, units: Mapping[str, pint.Unit]
) -> tuple[str, pint.Unit | None, list[tuple[float, bool]]] | None:
    """The one operand (text, unit) of a product and its number factors (value, multiplies).

    None where the expression is anything else: two operands, a number that divides the
    operand (``8 / x``), or nothing but numbers.
    """
    if (match := _SUM_FACTOR.match(expression)) is not None:
        factor = float(match.group("factor"))
        total = match.group("sum").strip()
        return total, _sum_unit(total, units), [(factor, match.group("op") == "*")]
    if (held := placeheld(expression)) is None:
        return None
    operands: list[tuple[ast.expr, bool]] = []
    factors: list[tuple[float, bool]] = []
    for term, multiplies in _terms(held.tree.body, True):
        number = literal_number(term)
        if number is None:
            operands.append((term, multiplies))
        else:
            factors.append((number, multiplies))
    if len(operands) != 1 or not factors:
        return None
    [(operand, multiplies)] = operands
    names = {placeholder: name for name, placeholder in held.names.items()}
    if not multiplies or not isinstance(operand, ast.Name) or operand.id not in names:
        return None  # `8 / x` converts nothing; a call or a sum is no one operand
    name = names[operand.id]
    return f"${{{name}}}", units.get(name), factors


def _terms(node: ast.expr, multiplies: bool) -> list[tuple[ast.expr, bool]]:
    """The terms of a chain of * and /, each with whether it multiplies or divides."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
        right = multiplies if isinstance(node.op, ast.Mult) else not multiplies
        return [*_terms(node.left, multiplies), *_terms(node.right, right)]
    return [(node, multiplies)]


def literal_number(node: ast.AST) -> float | None:
    """A number literal, or a small whole power of one (``10 ** 12``); None for all else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else float(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, power = literal_number(node.left), literal_number(node.right)
        if base is None or power is None or abs(base) > 1e6:
            return None  # a power of a power, or a huge one, is no factor anyone converts by
        if power == int(power) and 0 < power <= 24 and isinstance(node.left, ast.Constant):
            return float(base ** int(power))
    return None


def _sum_unit(total: str, units: Mapping[str, pint.Unit]) -> pint.Unit | None:
    """The unit of a sum of references, where each has one and all are the same.

    ``(multiplication + division) / 60`` under a name in hours (GSM8K train 5405: 10 and 20
    minutes a day) converts the sum as a whole.
    """
    found = {
        units.get(ref.step if ref.step != "inputs" else f"inputs.{ref.path[0]}")
        for ref in find_references(total)
    }
    if len(found) != 1 or None in found:
        return None
    return next(iter(found))


def _shown(operand: str) -> str:
    """An operand as a repair names it: `link`, not `${inputs.link}`."""
    return re.sub(r"\$\{(?:inputs\.)?(\w+)\}", r"\1", operand)


def _other_base(ratio: float, by_hand: float) -> bool:
    """Whether a prefix factor converts in the other base: 1024 for TiB to GB (1099.5).

    "How many GB is 2 TiB?" was answered ``data: "GB" = data * 1024`` (the suite's
    tib-to-gb, refused three times): the factor is a prefix's and only its base is wrong,
    so the declared unit says what was meant. They differ by whole powers of 1.024.
    """
    powers = math.log(ratio / by_hand) / math.log(1.024)
    return round(powers) != 0 and abs(powers - round(powers)) < 1e-6 and abs(powers) <= 5
