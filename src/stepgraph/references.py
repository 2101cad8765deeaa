"""``${id}`` and ``${id.field}`` references between steps, and their resolution."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pint

from stepgraph.units import format_value

REFERENCE_PATTERN = re.compile(r"\$\{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\s*\}")


@dataclass(frozen=True)
class Reference:
    """One reference: the step it names and the field path inside that step's output."""

    text: str
    step: str
    path: tuple[str, ...]


class ReferenceError_(LookupError):  # noqa: N801  # internal; callers wrap it in project errors
    """A reference that cannot be resolved against the values at hand."""


def find_references(value: Any) -> Iterator[Reference]:
    """Yield every reference in a value (strings, lists and dicts, recursively)."""
    if isinstance(value, str):
        if "${" not in value:  # most strings: no regex needed
            return
        for match in REFERENCE_PATTERN.finditer(value):
            path = tuple(part for part in match.group(2).split(".") if part)
            yield Reference(match.group(0), match.group(1), path)
    elif isinstance(value, dict):
        for item in value.values():
            yield from find_references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from find_references(item)


_ANY_DOLLAR_BRACE = re.compile(r"\$\{[^}]*\}?")


def malformed_references(value: Any) -> list[str]:
    """Every ``${...}`` in a value (strings, lists, dicts) that is not a valid reference."""
    if isinstance(value, str):
        if "${" not in value:
            return []
        return [
            match.group(0)
            for match in _ANY_DOLLAR_BRACE.finditer(value)
            if not REFERENCE_PATTERN.fullmatch(match.group(0))
        ]
    if isinstance(value, dict):
        if not value:
            return []
        return [found for item in value.values() for found in malformed_references(item)]
    if isinstance(value, list | tuple):
        return [found for item in value for found in malformed_references(item)]
    return []


def whole_reference(value: Any) -> Reference | None:
    """The reference a string consists of entirely (its value keeps its type), if any."""
    if isinstance(value, str):
        match = REFERENCE_PATTERN.fullmatch(value.strip())
        if match:
            return next(find_references(match.group(0)))
    return None


def lookup(reference: Reference, values: Mapping[str, Any]) -> Any:
    """The value a reference names; fields index dicts, lists and quantities."""
    if reference.step not in values:
        raise ReferenceError_(f"{reference.text}: no value for '{reference.step}'")
    value = values[reference.step]
    for part in reference.path:
        value = _field(value, part, reference)
    return value


def _field(value: Any, part: str, reference: Reference) -> Any:
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
        return value[int(part)]
    if isinstance(value, pint.Quantity) and part in ("magnitude", "units"):
        return value.magnitude if part == "magnitude" else f"{value.units:~}"
    available = ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
    raise ReferenceError_(f"{reference.text}: no field '{part}' (have: {available})")


def resolve(value: Any, values: Mapping[str, Any]) -> Any:
    """Replace references in `value`.

    A whole-string reference keeps the value's type. Inside a longer string a value
    is interpolated for people (``962.28 GB``). Expressions do not come here: their
    references are bound as values (`stepgraph.tools.expression.bind`).
    """
    whole = whole_reference(value)
    if whole is not None:
        return lookup(whole, values)
    if isinstance(value, str):
        return REFERENCE_PATTERN.sub(
            lambda m: format_value(lookup(next(find_references(m.group(0))), values)), value
        )
    if isinstance(value, dict):
        return {key: resolve(item, values) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(item, values) for item in value]
    return value
