"""The unit registry, tuned for data-transfer arithmetic, and reading units and quantities.

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
import math
import re
import threading
from fractions import Fraction
from functools import lru_cache
from typing import Any

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


# "m2", "ft2", "cm3": an area or a volume as people type it (GSM8K train 4454: "unknown
# unit 'ft2'"), a power of a short symbol; pint reads only "ft^2" or "ft**2". Units and
# quantities only: in an expression "x2" may be a name.
_TYPED_POWER = re.compile(r"\b([A-Za-z]{1,3})([23])\b")


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
    spelled = _TYPED_POWER.sub(r"\1^\2", dollars(text)).strip()
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
    spelled = _TYPED_POWER.sub(r"\1^\2", dollars(text)).strip()
    for _ in range(3):  # each pass may define one more count noun ("3 people per table")
        try:
            value: Any = registry().Quantity(spelled)
        except pint.UndefinedUnitError as e:
            if all(_define_count(str(name)) for name in _undefined(e)):
                continue
            raise UnitError(f"cannot read '{text}' as a number with a unit: {e}") from e
        except Exception as e:  # pint raises many kinds here; all mean "not a quantity"
            raise UnitError(f"cannot read '{text}' as a number with a unit: {e}") from e
        return _finite(normalize(value))
    raise UnitError(f"cannot read '{text}' as a number with a unit")


def _finite(value: Any) -> Any:
    """`value`, unless its number is inf or nan: "inf GB" converted was reported verified."""
    magnitude = getattr(value, "magnitude", value)
    if isinstance(magnitude, float) and not math.isfinite(magnitude):
        raise UnitError(f"{value} is not a finite number the engine can compute with")
    return value


def dimension_name(value: Any) -> str:
    """Name the dimension of a quantity (``[information] / [time]``) or ``dimensionless``."""
    if isinstance(value, pint.Quantity | pint.Unit):
        dims = str(value.dimensionality)
        return dims if dims != "dimensionless" else "dimensionless"
    return "dimensionless"


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
