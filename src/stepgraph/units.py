"""One pint unit registry for the whole engine, tuned for data-transfer arithmetic.

Pint's default definitions treat a bit as dimensionless, spell barn as ``b``,
gilbert as ``Gb`` and baud as ``bps``. For a tool that moves terabytes over
megabit links that is exactly the TB/Tb confusion we exist to stop, so the
registry is built from pint's own definitions with four lines changed: ``bit``
gets its own base dimension ``[information]`` (and the symbol ``b``), ``bps`` is
bit per second, and barn and gilbert lose the symbols that collide.
"""

from __future__ import annotations

import difflib
import importlib.resources
import json
import math
import re
import threading
from fractions import Fraction
from functools import lru_cache
from typing import Any, cast

import pint

from stepgraph._unit_cache import build_registry
from stepgraph.exceptions import UnitError

Quantity = pint.Quantity  # for isinstance checks; build values with `quantity`

_PATCHES: list[tuple[str, str]] = [
    (r"^bit = \[\]$", "bit = [information] = b"),
    (
        r"^baud = bit / second = Bd = bps$",
        # Prefixed rates spelled out: "Mbps" would otherwise also parse as mega-b-point-s.
        "baud = 1 / second = Bd\nbps = bit / second\nkbps = kilobit / second\n"
        "Mbps = megabit / second\nGbps = gigabit / second\nTbps = terabit / second",
    ),
    (r"^(barn = .*?) = b$", r"\1"),
    (r"^(gilbert = .*?) = Gb$", r"\1"),
]


# Spellings people write that pint does not know. Decimal, as every prefix here: KB is kB,
# not KiB. Money: each currency its own dimension, so dollars never add to euros and no
# exchange rate is assumed; "$" is read as USD before pint sees it (`_dollars`).
_SPELLINGS = """
KB = kilobyte
Kb = kilobit
Kbps = kilobit / second
Kbit = kilobit
wk = week
dollar = [currency_usd] = USD = US_dollar
cent = 0.01 dollar
euro = [currency_eur] = EUR
pound_sterling = [currency_gbp] = GBP
"""


def _definitions() -> str:
    root = importlib.resources.files("pint")
    text = (root / "default_en.txt").read_text(encoding="utf-8")
    constants = (root / "constants_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt", constants)
    for pattern, replacement in _PATCHES:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if count != 1:  # a pint release changed its definitions: fail loudly, not subtly
            raise RuntimeError(f"pint definitions changed; cannot apply unit patch {pattern!r}")
    return text + _SPELLINGS


# "$2", "$ 2.50", "$1,200" -> "2 USD"; a "$" alone -> "USD". Never "${", a reference.
_DOLLAR_AMOUNT = re.compile(r"\$(?!\{)\s?(\d[\d,]*(?:\.\d+)?)")
_DOLLAR_SIGN = re.compile(r"\$(?!\{)")


def dollars(text: str) -> str:
    """Text with dollar signs spelled as the registry's unit: ``$2.50`` -> ``2.50 USD``."""
    if "$" not in text:
        return text
    text = _DOLLAR_AMOUNT.sub(lambda m: f"{m.group(1).replace(',', '')} USD", text)
    return _DOLLAR_SIGN.sub("USD", text)


_REGISTRY: pint.UnitRegistry[Any] | None = None
_REGISTRY_LOCK = threading.Lock()


def registry() -> pint.UnitRegistry[Any]:
    """Return the engine's unit registry (built once: 0.03 s from the disk cache, else 0.1 s).

    Built under a lock: two threads racing on first use would otherwise build two
    registries, and pint refuses to mix units of different registries. The disk cache
    (`stepgraph._unit_cache`) is pint's own, in a folder of this user's.
    """
    global _REGISTRY
    if _REGISTRY is None:
        with _REGISTRY_LOCK:
            if _REGISTRY is None:
                ureg = build_registry(_definitions(), autoconvert_offset_to_baseunit=True)
                ureg.formatter.default_format = "~"
                _REGISTRY = ureg
    return _REGISTRY


def quantity(magnitude: Any, unit: str | pint.Unit) -> Any:
    """Build a quantity in the engine's registry."""
    return registry().Quantity(magnitude, unit)


# Count nouns ("apples", "people", "nights") become units of their own on first use, each
# with its own dimension, so apples and people do not add. Only plain lowercase words:
# "Gbs" or "Mbsp" are misspelt units, not things being counted.
_COUNT_WORD = re.compile(r"^[a-z]{3,24}$")
_IRREGULAR_PLURALS = {"people": "person", "children": "child", "men": "man", "women": "woman"}
_COUNT_UNITS: set[str] = set()
# What a misspelt unit is compared with for a suggestion.
_COMMON_UNITS = (
    "b",
    "bit",
    "B",
    "byte",
    "kB",
    "MB",
    "GB",
    "TB",
    "PB",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "kb",
    "Mb",
    "Gb",
    "Tb",
    "bps",
    "kbps",
    "Mbps",
    "Gbps",
    "Tbps",
    "B/s",
    "kB/s",
    "MB/s",
    "GB/s",
    "TB/s",
    "kbit/s",
    "Mbit/s",
    "Gbit/s",
    "s",
    "ms",
    "min",
    "h",
    "hour",
    "day",
    "week",
    "month",
    "year",
    "m",
    "km",
    "cm",
    "mm",
    "kg",
    "g",
    "W",
    "kW",
    "MW",
    "kWh",
    "Wh",
    "J",
    "V",
    "A",
    "%",
    "percent",
    "degree",
)


def _singular(word: str) -> str:
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _plural(singular: str) -> str:
    irregular = {single: plural for plural, single in _IRREGULAR_PLURALS.items()}
    if singular in irregular:
        return irregular[singular]
    if singular.endswith("y") and singular[-2:-1] not in tuple("aeiou"):
        return singular[:-1] + "ies"
    if singular.endswith(("ch", "sh", "ss", "x")):
        return singular + "es"
    return singular + "s"


def is_count_unit(unit: pint.Unit | str) -> bool:
    """Whether a unit is a count noun (``apples``) rather than a physical unit."""
    names = [unit] if isinstance(unit, str) else [str(name) for name in unit._units]
    return bool(names) and all(name in _COUNT_UNITS for name in names)


def _define_count(word: str) -> bool:
    """Define `word` (and its other number) as a count unit; False if it cannot be one."""
    if not _COUNT_WORD.match(word) or difflib.get_close_matches(word, _COMMON_UNITS, cutoff=0.8):
        return False
    singular = _singular(word)
    plural = _plural(singular)
    ureg = registry()
    with _REGISTRY_LOCK:
        if plural not in _COUNT_UNITS:
            aliases = "" if singular == plural else f" = _ = {singular}"
            ureg.define(f"{plural} = [count_{singular}]{aliases}")
            _COUNT_UNITS.update({singular, plural})
    return True


def _unknown_unit(text: str) -> UnitError:
    near = difflib.get_close_matches(text.strip(), _COMMON_UNITS, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
    return UnitError(f"unknown unit '{text}'{hint}")


def parse_unit(text: str, *, counts: bool = True) -> pint.Unit:
    """Parse a unit such as ``MB/s`` or ``TiB``; raise `UnitError` naming it if unknown.

    With `counts`, a plain lowercase word that is no unit (``nights``) is a count noun.
    """
    spelled = dollars(text).strip()
    try:
        try:
            unit = registry().Unit(spelled)
        except pint.UndefinedUnitError as e:
            if not (counts and all(_define_count(str(name)) for name in _undefined(e))):
                raise _unknown_unit(text) from e
            unit = registry().Unit(spelled)
    except UnitError:
        raise
    except (pint.errors.DefinitionSyntaxError, ValueError) as e:
        raise UnitError(f"unknown unit '{text}'") from e
    except Exception as e:  # pint's parser raises assorted errors on garbage (e.g. "*/")
        raise UnitError(f"cannot parse unit '{text}': {e}") from e
    if not counts and is_count_unit(unit):
        raise _unknown_unit(text)
    return unit


def _undefined(error: pint.UndefinedUnitError) -> list[str]:
    names = error.unit_names
    return [names] if isinstance(names, str) else list(names)


def parse_quantity(text: str | float | int) -> Any:
    """Parse ``"2.5 TB"``, ``"10TiB"``, ``"3 nights"`` or a bare number."""
    if isinstance(text, bool):
        raise UnitError(f"expected a number or a quantity, got {text!r}")
    if isinstance(text, int | float):
        return text
    spelled = dollars(text).strip()
    for _ in range(3):  # each pass may define one more count noun ("3 people per table")
        try:
            value: Any = registry().Quantity(spelled)
        except pint.UndefinedUnitError as e:
            if all(_define_count(str(name)) for name in _undefined(e)):
                continue
            raise UnitError(f"cannot read '{text}' as a number with a unit: {e}") from e
        except Exception as e:  # pint raises many kinds here; all mean "not a quantity"
            raise UnitError(f"cannot read '{text}' as a number with a unit: {e}") from e
        return normalize(value)
    raise UnitError(f"cannot read '{text}' as a number with a unit")


def dimension_name(value: Any) -> str:
    """Name the dimension of a quantity (``[information] / [time]``) or ``dimensionless``."""
    if isinstance(value, pint.Quantity | pint.Unit):
        dims = str(value.dimensionality)
        return dims if dims != "dimensionless" else "dimensionless"
    return "dimensionless"


def compatible(value: Any, unit: str) -> bool:
    """Tell whether a value can be expressed in `unit` (a plain number in any count)."""
    target = parse_unit(unit)
    if isinstance(value, pint.Quantity):
        if value.units.dimensionless and is_count_unit(target):
            return True
        return bool(value.is_compatible_with(target))
    return bool(target.dimensionless) or is_count_unit(target)


def convert(value: Any, unit: str) -> Any:
    """Express `value` in `unit`; raise `UnitError` naming both dimensions when impossible.

    A plain number asked for in a count (``nights``) stays a plain number: the count
    names what it counts, and the number keeps working in checks like ``${n} * ${per}``.
    """
    target = parse_unit(unit)
    if is_count_unit(target) and not (
        isinstance(value, pint.Quantity) and not value.units.dimensionless
    ):
        return value
    quantity = value if isinstance(value, pint.Quantity) else registry().Quantity(value)
    try:
        return quantity.to(target)
    except pint.DimensionalityError as e:
        raise UnitError(
            f"cannot convert {format_value(value)} ({dimension_name(quantity)}) "
            f"to '{unit}' ({dimension_name(target)})"
        ) from e


@lru_cache(maxsize=1024)
def _reduction(units: pint.Unit) -> tuple[Any, Any]:
    """The factor and unit a quantity in `units` reduces to (None: a plain number)."""
    if units.dimensionless:
        return registry().Quantity(1, units).to("dimensionless").magnitude, None
    reduced = registry().Quantity(1, units).to_reduced_units()
    return reduced.magnitude, reduced.units


def _scale(magnitude: Any, factor: Any, units: Any) -> Any:
    if factor == 1:
        return magnitude
    if isinstance(magnitude, int) and isinstance(factor, float):  # 2**4000 %: exactly
        exact = Fraction(magnitude) * Fraction(repr(factor))  # '0.01' is exactly 1/100
        if exact.denominator == 1:
            return int(exact)
        try:
            return float(exact)
        except OverflowError:
            raise UnitError(
                f"a {magnitude.bit_length()}-bit number of {units} is too large "
                "to express in reduced units"
            ) from None
    return magnitude * factor


def normalize(value: Any) -> Any:
    """Reduce a quantity: dimensionless becomes a plain number, mixed units are combined."""
    if not isinstance(value, pint.Quantity):
        return value
    # Decided on the unit alone: converting a magnitude beyond float range (a 4,000-bit
    # integer) through a float factor overflows, and most values need no conversion.
    factor, reduced = _reduction(value.units)
    magnitude = _scale(value.magnitude, factor, value.units)
    if reduced is None:
        return magnitude
    if reduced == value.units and factor == 1:
        return value
    return registry().Quantity(magnitude, reduced)


# --- Numbers and units for people ------------------------------------------------

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
    for name, exponent in unit._units.items():
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
