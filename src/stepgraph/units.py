"""One pint unit registry for the whole engine, tuned for data-transfer arithmetic.

Pint's default definitions treat a bit as dimensionless, spell barn as ``b``,
gilbert as ``Gb`` and baud as ``bps``. For a tool that moves terabytes over
megabit links that is exactly the TB/Tb confusion we exist to stop, so the
registry is built from pint's own definitions with four lines changed: ``bit``
gets its own base dimension ``[information]`` (and the symbol ``b``), ``bps`` is
bit per second, and barn and gilbert lose the symbols that collide.
"""

from __future__ import annotations

import importlib.resources
import math
import re
import threading
from functools import lru_cache
from typing import Any

import pint

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


def _definitions() -> list[str]:
    root = importlib.resources.files("pint")
    text = (root / "default_en.txt").read_text(encoding="utf-8")
    constants = (root / "constants_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt", constants)
    for pattern, replacement in _PATCHES:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if count != 1:  # a pint release changed its definitions: fail loudly, not subtly
            raise RuntimeError(f"pint definitions changed; cannot apply unit patch {pattern!r}")
    return text.splitlines()


_REGISTRY: pint.UnitRegistry[Any] | None = None
_REGISTRY_LOCK = threading.Lock()


def registry() -> pint.UnitRegistry[Any]:
    """Return the engine's unit registry (built once, about 0.2 s).

    Built under a lock: two threads racing on first use would otherwise build two
    registries, and pint refuses to mix units of different registries.
    """
    global _REGISTRY
    if _REGISTRY is None:
        with _REGISTRY_LOCK:
            if _REGISTRY is None:
                ureg: pint.UnitRegistry[Any] = pint.UnitRegistry(
                    None, autoconvert_offset_to_baseunit=True
                )
                ureg.load_definitions(_definitions())
                ureg.formatter.default_format = "~"
                _REGISTRY = ureg
    return _REGISTRY


def quantity(magnitude: Any, unit: str | pint.Unit) -> Any:
    """Build a quantity in the engine's registry."""
    return registry().Quantity(magnitude, unit)


def parse_unit(text: str) -> pint.Unit:
    """Parse a unit such as ``MB/s`` or ``TiB``; raise `UnitError` naming it if unknown."""
    try:
        unit = registry().Unit(text.strip())
    except (pint.UndefinedUnitError, pint.errors.DefinitionSyntaxError, ValueError) as e:
        raise UnitError(f"unknown unit '{text}'") from e
    except Exception as e:  # pint's parser raises assorted errors on garbage (e.g. "*/")
        raise UnitError(f"cannot parse unit '{text}': {e}") from e
    return unit


def parse_quantity(text: str | float | int) -> Any:
    """Parse ``"2.5 TB"``, ``"10TiB"`` or a bare number into a quantity or a number."""
    if isinstance(text, bool):
        raise UnitError(f"expected a number or a quantity, got {text!r}")
    if isinstance(text, int | float):
        return text
    try:
        value: Any = registry().Quantity(text.strip())
    except Exception as e:  # pint raises many kinds here; all mean "not a quantity"
        raise UnitError(f"cannot read '{text}' as a number with a unit: {e}") from e
    return normalize(value)


def dimension_name(value: Any) -> str:
    """Name the dimension of a quantity (``[information] / [time]``) or ``dimensionless``."""
    if isinstance(value, pint.Quantity | pint.Unit):
        dims = str(value.dimensionality)
        return dims if dims != "dimensionless" else "dimensionless"
    return "dimensionless"


def compatible(value: Any, unit: str) -> bool:
    """Tell whether a value can be expressed in `unit`."""
    target = parse_unit(unit)
    if isinstance(value, pint.Quantity):
        return bool(value.is_compatible_with(target))
    return bool(target.dimensionless)


def convert(value: Any, unit: str) -> Any:
    """Express `value` in `unit`; raise `UnitError` naming both dimensions when impossible."""
    target = parse_unit(unit)
    quantity = value if isinstance(value, pint.Quantity) else registry().Quantity(value)
    try:
        return quantity.to(target)
    except pint.DimensionalityError as e:
        raise UnitError(
            f"cannot convert {format_value(value)} ({dimension_name(quantity)}) "
            f"to '{unit}' ({dimension_name(target)})"
        ) from e


def normalize(value: Any) -> Any:
    """Reduce a quantity: dimensionless becomes a plain number, mixed units are combined."""
    if not isinstance(value, pint.Quantity):
        return value
    if value.dimensionless:
        magnitude = value.to("dimensionless").magnitude
        return magnitude
    return value.to_reduced_units()


def format_number(number: float | int) -> str:
    """Format a number for people: six significant digits, thousands separators."""
    if isinstance(number, bool) or not isinstance(number, int | float):
        return str(number)
    if isinstance(number, float) and not math.isfinite(number):
        return str(number)
    if isinstance(number, int):
        return f"{number:,}"
    size = abs(number)
    if not 1e-4 <= size < 1e15:
        return "0" if size == 0 else f"{number:.6g}"
    decimals = max(0, 5 - math.floor(math.log10(size)))
    text = f"{number:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_value(value: Any) -> str:
    """Format an observation value for people: ``962.28 GB``, ``3``, ``{...}``."""
    if isinstance(value, pint.Quantity):
        return f"{format_number(value.magnitude)} {value.units:~}".strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


@lru_cache(maxsize=4096)
def _unit_text(unit: pint.Unit) -> str:
    return str(unit)  # pint's formatting is slow and the same few units recur in every run


def encode_value(value: Any) -> Any:
    """Turn a value into JSON-ready data; quantities become ``{"$quantity": [m, units]}``."""
    if isinstance(value, pint.Quantity):
        return {"$quantity": [value.magnitude, _unit_text(value.units)]}
    if isinstance(value, dict):
        return {str(key): encode_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encode_value(item) for item in value]
    return value


def decode_value(data: Any) -> Any:
    """Invert `encode_value`."""
    if isinstance(data, dict):
        if set(data) == {"$quantity"}:
            magnitude, units = data["$quantity"]
            return registry().Quantity(magnitude, units)
        return {key: decode_value(item) for key, item in data.items()}
    if isinstance(data, list):
        return [decode_value(item) for item in data]
    return data
