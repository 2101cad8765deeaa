"""The numbers a goal states, and the numbers a plan writes, found the same way everywhere."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

_CLOCK_RANGE = re.compile(r"(\d{1,2}):(\d{2})\s*(?:to|-|until|and|–)\s*(\d{1,2}):(\d{2})")
_NUMBER = re.compile(r"(?<![\w.:])(\d[\d,]*(?:\.\d+)?)(\s*%)?(?![\w:]*\d)")
TOLERANCE = 1e-6


@dataclass(frozen=True)
class GoalNumber:
    """A number as the goal writes it, with every form a plan may use it in."""

    text: str
    value: float
    end: int  # where it ends in the text: the unit, if any, comes next
    percent: bool = False
    clock_hours: float | None = None  # "00:00 to 06:00" is 6 hours
    accepted: list[float] = field(default_factory=list)


def goal_numbers(text: str) -> list[GoalNumber]:
    """Each number of a text in order: clock ranges as their length, 12% also as 0.12, 0.88, 88."""
    found: list[GoalNumber] = []
    ranges = []
    for match in _CLOCK_RANGE.finditer(text):
        start = int(match.group(1)) + int(match.group(2)) / 60
        end = int(match.group(3)) + int(match.group(4)) / 60
        hours = (end - start) % 24 or 24
        found.append(GoalNumber(match.group(0), hours, match.end(), False, hours, [hours]))
        ranges.append(match.span())
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in ranges):
            continue
        number = float(match.group(1).replace(",", ""))
        accepted = [number]
        if match.group(2):
            accepted += [number / 100, 1 - number / 100, 100 - number]
        written = match.group(0).strip()
        found.append(GoalNumber(written, number, match.end(), bool(match.group(2)), None, accepted))
    return sorted(found, key=lambda number: number.end)


def literal_numbers(value: Any) -> list[float]:
    """Numeric literals in arguments: numbers, and numbers inside expressions or quantities."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for item in value.values() for n in literal_numbers(item)]
    if isinstance(value, list | tuple):
        return [n for item in value for n in literal_numbers(item)]
    if not isinstance(value, str):
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(value).readline):
            if token.type == tokenize.NUMBER:
                try:
                    found.append(float(token.string.replace("_", "")))
                except ValueError:
                    continue  # hex, complex: no number a goal states
    except (tokenize.TokenError, SyntaxError):
        pass  # text, not an expression: its numbers were found so far
    return found


def matches(number: float, accepted: list[float]) -> bool:
    """Whether a number is one of the accepted values, within a relative tolerance."""
    return any(abs(number - value) <= TOLERANCE * max(1.0, abs(value)) for value in accepted)
