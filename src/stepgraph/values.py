"""Plain data, and its lossless JSON form.

What may pass between steps and go into the journal (`check_data`), and how it is
written as JSON and read back exactly (`encode_value`, `decode_value`): integers past 64
bits, NaN and infinities, and quantities with their units survive the round trip.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import pint

from stepgraph.exceptions import NonRetryableError
from stepgraph.units import (
    HUGE_INT_BITS,
    MAX_DEPTH,
    format_unit,
    parse_unit,
    registry,
    round_significant,
)

INT64_RANGE = (-(2**63), 2**63 - 1)  # what orjson and most JSON readers take as an exact integer
_TAGS = frozenset({"$quantity", "$int", "$float", "$dict"})
_ALLOWED = (
    "allowed: None, bool, int, float, str, quantities, and lists, tuples and dicts with "
    "string keys of those"
)


def _type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _problem(value: Any, active: set[int], depth: int) -> tuple[str, list[Any]] | None:
    """What makes `value` not data, and the keys leading there (innermost first)."""
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return None
    if isinstance(value, pint.Quantity):
        magnitude = value.magnitude
        if isinstance(magnitude, int | float) and not isinstance(magnitude, bool):
            return None
        return f"a quantity of {_type_name(magnitude)} is not plain data ({_ALLOWED})", []
    if not isinstance(value, dict | list | tuple):
        return f"{_type_name(value)} is not plain data ({_ALLOWED})", []
    if id(value) in active:
        return "the value refers to itself", []
    if depth >= MAX_DEPTH:
        return f"the value is nested deeper than {MAX_DEPTH} levels", []
    active.add(id(value))
    try:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(value, dict) and not isinstance(key, str):
                return f"dict keys must be strings, not {_type_name(key)} ({key!r})", []
            found = _problem(item, active, depth + 1)
            if found is not None:
                found[1].append(key)
                return found
    finally:
        active.discard(id(value))
    return None


def check_data(value: Any) -> None:
    """Raise `NonRetryableError` unless `value` is plain data the journal keeps exactly.

    Plain data is None, bool, int, float, str, a quantity with an int or float
    magnitude, and lists, tuples and string-keyed dicts of those, nested at most
    `MAX_DEPTH` levels and never containing themselves. The message names the type
    refused and where it sits (``value['rows'][2]``). A number or a quantity returns
    at once: this runs on every tool result.
    """
    kind = type(value)
    if kind is int or kind is float or kind is str or value is None:
        return
    if isinstance(value, pint.Quantity) and type(value.magnitude) in (int, float):
        return
    found = _problem(value, set(), 0)
    if found is not None:
        message, keys = found
        path = [f"[{key!r}]" for key in reversed(keys)]
        if len(path) > 8:  # a path 100 levels deep helps nobody
            path = [*path[:4], "...", *path[-3:]]
        where = "value" + "".join(path)
        raise NonRetryableError(f"{where}: {message}")


class _Refused(Exception):
    """`_encode` met something that is not data; `check_data` then says what and where."""


def _encode_int(value: int) -> Any:
    if INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        return value
    # Decimal reads best; hex past the size Python refuses to print in decimal.
    text = str(value) if value.bit_length() <= HUGE_INT_BITS else hex(value)
    return {"$int": text}


def _encode(value: Any, depth: int, display: bool) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return _encode_int(value)
    if kind is float:
        if not math.isfinite(value):
            return {"$float": repr(value)}  # 'nan', 'inf', '-inf'; JSON has no such numbers
        return round_significant(value) if display else value
    if isinstance(value, pint.Quantity):
        magnitude = value.magnitude
        if not isinstance(magnitude, int | float) or isinstance(magnitude, bool):
            raise _Refused
        units = format_unit(value.units) if display else _unit_text(value.units)
        return {"$quantity": [_encode(magnitude, depth + 1, display), units]}
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:  # also where a value that contains itself ends up
            raise _Refused
        if not isinstance(value, dict):
            return [_encode(item, depth + 1, display) for item in value]
        encoded = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused
            encoded[str(key)] = _encode(item, depth + 1, display)
        if len(encoded) == 1 and next(iter(encoded)) in _TAGS:
            return {"$dict": encoded}  # a plain dict that would read back as a tagged value
        return encoded
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):  # IntEnum and friends: their number is the data
        return _encode_int(int(value))
    if isinstance(value, float):  # numpy.float64 and friends
        return _encode(float(value), depth, display)
    if isinstance(value, str):
        return str(value)
    raise _Refused


@lru_cache(maxsize=4096)
def _unit_text(unit: pint.Unit) -> str:
    return str(unit)  # pint's formatting is slow and the same few units recur in every run


def encode_value(value: Any, *, display: bool = False) -> Any:
    """Turn plain data into JSON-ready data that `decode_value` turns back exactly.

    Quantities become ``{"$quantity": [m, units]}``, integers beyond 64 bits
    ``{"$int": "1180591620717411303424"}``, NaN and infinities ``{"$float": "nan"}``,
    and a dict whose only key is one of these tags ``{"$dict": {...}}``. With
    `display` (for people and scripts, not the journal) floats are rounded to
    `DISPLAY_DIGITS` significant digits and units are spelled as `format_unit` does.
    Anything that is not plain data raises `NonRetryableError` (see `check_data`).
    """
    try:
        return _encode(value, 0, display)
    except _Refused:
        pass
    check_data(value)  # raises, naming what is wrong and where
    raise NonRetryableError(f"value: a {_type_name(value)} cannot be encoded")  # pragma: no cover


def decode_value(data: Any) -> Any:
    """Invert `encode_value`."""
    if isinstance(data, dict):
        if len(data) == 1:
            [(tag, inner)] = data.items()
            if tag == "$quantity":
                magnitude, units = inner
                try:
                    return registry().Quantity(decode_value(magnitude), units)
                except pint.UndefinedUnitError:  # a count noun this process has not met yet
                    return registry().Quantity(decode_value(magnitude), parse_unit(units))
            if tag == "$int":
                return int(inner, 0)  # base 0 reads both the decimal and the hex form
            if tag == "$float":
                return float(inner)
            if tag == "$dict":
                return {key: decode_value(item) for key, item in inner.items()}
        return {key: decode_value(item) for key, item in data.items()}
    if isinstance(data, list):
        return [decode_value(item) for item in data]
    return data
