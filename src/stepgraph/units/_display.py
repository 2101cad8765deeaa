"""Numbers and units for people: what a run prints, journals for reading, and compares.

Display never changes a value: it reads quantities of the engine's registry and writes
text (or JSON-ready data) that parses back with `parse_unit` and `parse_quantity`.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, cast

import pint

from stepgraph.units._registry import registry

DISPLAY_DIGITS = 12  # what people and scripts see: enough digits, none of the float noise
MAX_DEPTH = 100  # containers nested deeper than this are refused as data, cut short for people
HUGE_INT_BITS = 10_000  # beyond this Python refuses str(int) (int_max_str_digits)
_DECIMAL_PREFIXES = ("", "kilo", "mega", "giga", "tera", "peta", "exa")


def round_significant(number: float, digits: int = DISPLAY_DIGITS) -> float:
    """Round to significant digits: 2500.0000000000005 -> 2500.0."""
    if number == 0 or not math.isfinite(number):
        return number
    return float(f"{number:.{digits}g}")


def format_number(number: float | int) -> str:
    """Format a number for people: six significant digits, thousands separators."""
    if isinstance(number, bool) or not isinstance(number, int | float):
        return str(number)
    if isinstance(number, float) and not math.isfinite(number):
        return str(number)
    if isinstance(number, int):
        if abs(number).bit_length() > HUGE_INT_BITS:  # str() would refuse it
            exponent = math.floor(math.log10(abs(number)))
            lead = abs(number) // 10 ** (exponent - 5)
            return f"{'-' if number < 0 else ''}{lead / 1e5:.5f}e+{exponent}"
        return f"{number:,}"
    size = abs(number)
    if not 1e-4 <= size < 1e15:
        return "0" if size == 0 else f"{number:.6g}"
    decimals = max(0, 5 - math.floor(math.log10(size)))
    text = f"{number:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _symbol(name: str) -> str:
    """A unit's symbol, with bits spelled out: ``Mb`` reads as megabyte to many people."""
    ureg = registry()
    symbol = str(ureg.get_symbol(name))
    candidates = ureg.parse_unit_name(name)
    if candidates and candidates[0][1] == "bit" and symbol.endswith("b"):
        return symbol[:-1] + "bit"
    return symbol


@lru_cache(maxsize=1024)
def format_unit(unit: pint.Unit) -> str:
    """A unit as people write it: ``Mbit/s``, ``MB/s``, ``GB``, ``h``, ``kB·h``, ``m/s^2``.

    The text parses back with `parse_unit`; pint's own ``Mb / s`` is what people misread.
    """
    above: list[str] = []
    below: list[str] = []
    # In name order: a product computed (mph·h) and the same read back from a journal
    # (pint writes h * mph) must read alike, or a replay's verdicts differ from the run's.
    for name, exponent in sorted(unit._units.items()):
        power = abs(cast(float, exponent))  # pint types exponents loosely; they are numbers
        text = _symbol(name) if power == 1 else f"{_symbol(name)}^{power:g}"
        (above if power == exponent else below).append(text)
    text = "·".join(above) or ("1" if below else "")
    if below:
        text += "/" + (below[0] if len(below) == 1 else "(" + "·".join(below) + ")")
    return text


def format_value(value: Any) -> str:
    """Format a value for people: ``962.28 GB``, ``56.25 MB/s``, ``3``, ``{"n": 3}``.

    Dicts and lists print as JSON whose quantities are formatted strings and whose
    floats are rounded to `DISPLAY_DIGITS` significant digits.
    """
    if isinstance(value, pint.Quantity):
        return f"{format_number(value.magnitude)} {format_unit(value.units)}".strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(_for_people(value, 0), ensure_ascii=False)
    return str(value)


def display_data(value: Any) -> Any:
    """JSON-ready data for people: quantities as ``"962.28 GB"``, floats without noise.

    Floats are rounded to `DISPLAY_DIGITS` significant digits, NaN and infinities become
    strings; it never raises, whatever the value holds (``json.dumps`` it to print).
    """
    return _for_people(value, 0)


def _for_people(value: Any, depth: int) -> Any:
    if isinstance(value, pint.Quantity):
        return format_value(value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return round_significant(value) if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return int(value) if abs(value).bit_length() <= HUGE_INT_BITS else format_number(value)
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return "..."
        if isinstance(value, dict):
            return {str(key): _for_people(item, depth + 1) for key, item in value.items()}
        return [_for_people(item, depth + 1) for item in value]
    return str(value)


def _readable_unit(value: Any) -> pint.Unit:
    """The value's unit, with the decimal prefix of a byte or bit count that reads best.

    2,886.84 GB reads better as 2.88684 TB; binary prefixes and other units are kept.
    (pint's `to_compact` fails on this registry's information units.)
    """
    unit: pint.Unit = value.units
    ureg = registry()
    for name, exponent in unit._units.items():
        prefix, base, _ = ureg.parse_unit_name(name)[0]
        if exponent != 1 or base not in ("byte", "bit") or prefix not in _DECIMAL_PREFIXES:
            continue
        rest = unit / ureg.Unit(name)
        magnitude = abs(value.to(ureg.Unit(base) * rest).magnitude)
        if not magnitude or not math.isfinite(magnitude):
            return unit
        steps = min(len(_DECIMAL_PREFIXES) - 1, max(0, math.floor(math.log10(magnitude) / 3)))
        readable: pint.Unit = ureg.Unit(_DECIMAL_PREFIXES[steps] + base) * rest
        return readable
    return unit


def format_pair(left: Any, right: Any) -> tuple[str, str]:
    """Format two values to be compared: compatible quantities in one readable unit.

    The unit is that of the larger value (the left one on a tie), with the decimal
    prefix that reads best for byte and bit counts: 2.5 TB and 2,500 GB print as
    ``2.5 TB`` and ``2.5 TB``. Anything else is formatted on its own.
    """
    if not isinstance(left, pint.Quantity) and not isinstance(right, pint.Quantity):
        return format_value(left), format_value(right)
    try:
        a = left if isinstance(left, pint.Quantity) else registry().Quantity(left)
        b = right if isinstance(right, pint.Quantity) else registry().Quantity(right)
        if not a.is_compatible_with(b):
            return format_value(left), format_value(right)
        larger = a if abs(a.to(b.units).magnitude) >= abs(b.magnitude) else b
        unit = _readable_unit(larger)
        return format_value(a.to(unit)), format_value(b.to(unit))
    except (TypeError, ValueError, ArithmeticError, pint.PintError):  # say them as they are
        return format_value(left), format_value(right)


def format_alike(values: list[Any]) -> list[str]:
    """Format values read in one message: each quantity in the unit of the first of its kind.

    ``3 x 962.28 GB = 2,886.84 GB >= 2,500 GB``, not ``... = 2.88684 TB >= 2.5 TB``: every
    quantity of one dimension is written in one unit, that of the first one listed (the
    caller lists what was given, the operands, before what was computed from them).
    Plain numbers and quantities of other dimensions are formatted as they are.
    """
    units: list[pint.Unit] = []
    shown = []
    for value in values:
        if not isinstance(value, pint.Quantity):
            shown.append(format_value(value))
            continue
        try:
            unit = next((u for u in units if value.is_compatible_with(u)), None)
            if unit is None:
                units.append(cast(pint.Unit, value.units))
            elif unit != value.units:
                value = value.to(unit)
        except (TypeError, ValueError, ArithmeticError, pint.PintError):
            pass  # said as it is
        shown.append(format_value(value))
    return shown
