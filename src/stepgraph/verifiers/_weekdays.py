"""Ranges of weekdays: "from Monday to Thursday" is 4 days, "Monday through Friday" 5.

A GSM8K story says how many days something happens by naming the first and the last
("From Monday to Thursday, the cobbler works for 8 hours each day"), and a program counts
them (`hours_per_day * 4`). Unread, that 4 was "not a number of the goal" and the right
program refused (train 1630). Both ends are counted; a range that runs past Sunday goes on
from Monday ("Friday to Monday" is 4 days). Two days joined by "and" are two days, not a
range ("on Mondays and Fridays"), and are not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = r"(?P<{0}>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)s?"
_RANGE = re.compile(
    rf"\b{_DAY.format('first')}\s*(?:-|–|\bto\b|\bthrough\b|\bthru\b|\buntil\b|\btill\b)\s*"
    rf"{_DAY.format('last')}\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class WeekdayRange:
    """A range of days of the week: where the text writes it, and how many days it counts."""

    start: int
    end: int
    days: int


def weekday_ranges(text: str) -> list[WeekdayRange]:
    """Each range of weekdays the text writes, in order; a day to itself is no range."""
    found = []
    for match in _RANGE.finditer(text):
        first = DAYS.index(match.group("first").casefold())
        last = DAYS.index(match.group("last").casefold())
        if first != last:
            found.append(WeekdayRange(match.start(), match.end(), (last - first) % 7 + 1))
    return found


__all__ = ["WeekdayRange", "weekday_ranges"]
