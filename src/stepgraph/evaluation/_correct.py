"""Is an answer correct? The expected value against a step's value or the numbers of the answer.

Three kinds of expected answer, decided by the unit the suite gives:

- a **quantity** (a unit the registry knows and that has a dimension: ``962.28 GB``,
  ``1.388889 h``): a value with a unit is converted to the expected unit first (a
  different dimension never matches: Mbps is not MB/s); a bare number counts as a
  magnitude already in the expected unit;
- a **percentage** (``%``/``percent``): a number matches as the percent figure (25)
  or as the fraction (0.25);
- a **count** (no unit, ``dimensionless``, or a word that is no unit: ``nights``,
  ``people``, ``EUR``): compared as a bare number.

Matching is relative: ``|got - want| <= tolerance * |want|`` (absolute when want is 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pint

from stepgraph.exceptions import UnitError
from stepgraph.units import parse_unit, quantity

Kind = Literal["quantity", "percent", "count"]

# A number in running text ("2,500" is 2500), and the unit-like token right after it.
_IN_TEXT = re.compile(
    r"(?<![\w.])(?P<number>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"(?:\s?(?P<unit>[A-Za-z%][A-Za-z%/0-9]*))?"
)
_LEADING = re.compile(r"^\s*([-+]?(?:\d[\d,_]*)?\.?\d+(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
_PERCENT = {"%", "percent", "pct"}


@dataclass(frozen=True)
class Expected:
    """An expected answer: its kind, its magnitude and (for a quantity) its unit."""

    kind: Kind
    magnitude: float
    unit: str | None = None  # the registry unit of a quantity
    label: str = ""  # as the suite wrote it, for reports
    bare: bool = False  # a number with no word at all (a dataset's "2"), not "3 nights"

    def __str__(self) -> str:
        return self.label


def parse_expected(value: str | float | int, unit: str | None = None) -> Expected:
    """Read `expect:`; a malformed number or an unknown unit-like symbol is a `UnitError`."""
    if isinstance(value, bool):
        raise UnitError(f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        number, rest = float(value), ""
    else:
        found = _LEADING.match(value)
        if found is None:
            raise UnitError(f"'{value}' does not start with a number")
        number, rest = float(found.group(1).replace(",", "").replace("_", "")), found.group(2)
    if unit is not None and rest:
        raise UnitError(f"'{value}' has a unit and so does unit: '{unit}'; give one of them")
    name = (unit if unit is not None else rest).strip()
    label = f"{value} {name}".strip() if not rest else str(value)
    if not name or name in _PERCENT:
        return Expected("percent" if name else "count", number, None, label, bare=not name)
    try:
        parsed = parse_unit(name, counts=False)
    except UnitError:
        if re.fullmatch(r"[A-Za-z][A-Za-z -]*", name):
            return Expected("count", number, None, label)  # "nights": names what is counted
        raise
    if parsed.dimensionless:
        scaled = float(quantity(number, parsed).to("dimensionless").magnitude)
        return Expected("count", scaled, None, label)
    return Expected("quantity", number, name, label)


def close(got: float, want: float, tolerance: float) -> bool:
    """Relative comparison; absolute when the expected value is 0."""
    if not math.isfinite(got):
        return False
    return abs(got - want) <= tolerance * (abs(want) if want else 1.0)


def value_matches(expected: Expected, value: Any, tolerance: float) -> bool:
    """Whether a step's value (a number or a quantity) is the expected answer."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return _number_matches(expected, float(value), tolerance)
    if isinstance(value, pint.Quantity):
        return _quantity_matches(expected, value, tolerance)
    return False  # text, dicts, lists: only the answer's numbers are compared


def _number_matches(expected: Expected, number: float, tolerance: float) -> bool:
    if expected.kind == "percent":
        return close(number, expected.magnitude, tolerance) or close(
            number * 100, expected.magnitude, tolerance
        )
    return close(number, expected.magnitude, tolerance)


def _quantity_matches(expected: Expected, value: Any, tolerance: float) -> bool:
    try:
        if expected.kind == "quantity":
            assert expected.unit is not None
            return close(float(value.to(expected.unit).magnitude), expected.magnitude, tolerance)
        if (_money(value) or expected.bare) and expected.kind == "count":
            # "How much money...?" expects a bare number (GSM8K): 500 USD is 500. Its text
            # could not say so when the question states 500 too (train 5235). A bare number
            # is in the unit the question asks, as "2 oz" answers "how many ounces are left?"
            # where the question spilled 2 ounces (train 5836). A sum in cents is the same
            # amount in dollars: 500,000 cent answers "the total she earned" of 5000 (6399).
            cents = str(value.units) == "cent"
            return close(float(value.magnitude), expected.magnitude, tolerance) or (
                cents and close(float(value.to("USD").magnitude), expected.magnitude, tolerance)
            )
        if not value.dimensionless:
            return False  # a count or a percentage has no dimension
        if expected.kind == "percent":
            figure = float(value.to("percent").magnitude)
            return close(figure, expected.magnitude, tolerance)
        if close(float(value.to("dimensionless").magnitude), expected.magnitude, tolerance):
            return True
        # "5 h/week" for "how many hours a week": a count read in the unit it is written in,
        # as a person reads it (pint would make it 0.03, hours over hours).
        return close(float(value.magnitude), expected.magnitude, tolerance)
    except (pint.DimensionalityError, pint.UndefinedUnitError, TypeError, ValueError):
        return False


def _money(value: Any) -> bool:
    """A sum in one currency: its only dimension is one of the registry's currencies."""
    dimensions = dict(value.dimensionality)
    return len(dimensions) == 1 and next(iter(dimensions)).startswith("[currency_")


def numbers_in(text: str) -> list[float]:
    """The bare numbers of a text (``2,500`` is 2500), in order."""
    return [_number(match) for match in _IN_TEXT.finditer(text)]


def text_matches(
    expected: Expected, text: str, tolerance: float, ignore: Iterable[float] = ()
) -> str | None:
    """The first number of the answer text that is the expected answer, as written; else None.

    Numbers in `ignore` (those of the question) do not count: an answer that repeats
    the question's numbers has not answered it.
    """
    skipped = list(ignore)
    for match, number, unit in _candidates(text):
        if any(close(number, other, 1e-9) for other in skipped):
            continue
        if expected.kind == "count" or unit is None:
            ok = _number_matches(expected, number, tolerance)
        else:
            ok = _quantity_matches(expected, quantity(number, unit), tolerance)
        if ok:
            return match.group(0).strip()
    return None


def _candidates(text: str) -> Iterator[tuple[re.Match[str], float, pint.Unit | None]]:
    for match in _IN_TEXT.finditer(text):
        token = match.group("unit")
        unit: pint.Unit | None = None
        if token:
            try:
                unit = parse_unit(token.rstrip("/"), counts=False)
            except UnitError:
                unit = None  # "3 nights": a word, not a unit
        yield match, _number(match), unit


def _number(match: re.Match[str]) -> float:
    return float(match.group("number").replace(",", ""))
