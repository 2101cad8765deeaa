"""Clock ranges: the hours between two times of day, as people write them.

"00:00 to 06:00" is 6 hours; so are "from 1 to 7 AM", "between 8 a.m. and 2 p.m." and
"from 12 noon to 6 pm". GSM8K writes its ranges with a.m. and p.m. ("from 1:00 PM to 5:00
PM", "11 am - 1 pm", "from 10 am until 10 pm"), and those were read as nothing at all, or
"8 a.m." as 8 metre-years (test 953: every plan refused, "Cannot convert from 'meter *
year'"). A range is two times of day joined by "to", "until", "till", "through", a dash,
or "and" after "between"; both must be times: written with minutes (09:15), or with a.m.
or p.m., or noon or midnight. The first may borrow the second's a.m. or p.m. ("from 1 to
4 PM" is 1 PM to 4 PM), unless it would then start after it ends ("from 11 to 2 pm" is 11
AM to 2 PM). A range that ends before it starts crosses midnight (22:00 to 05:00 is 7 h).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "a.m.", "am", "A.M", "pm", "p. m." (no "PM" inside "PMS": a word boundary after the m)
HALF_DAY = r"[ap]\.?\s?m\b\.?"


def _time(tag: str) -> str:
    return (
        rf"(?:(?P<{tag}h>\d{{1,2}})(?::(?P<{tag}m>\d{{2}}))?"
        rf"(?:\s*(?P<{tag}half>{HALF_DAY}|noon\b|midnight\b))?"
        rf"|(?P<{tag}word>noon|midnight)\b)"
    )


_RANGE = re.compile(
    rf"(?<![\w:.])(?P<between>\bbetween\s+)?{_time('a')}"
    rf"\s*(?P<joint>-|–|\bto\b|\buntil\b|\btill\b|\bthrough\b|\band\b)\s*"
    rf"{_time('b')}(?![\w:])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ClockRange:
    """A range of the clock: where the text writes it, its hours, and its two ends."""

    start: int  # where it begins in the text: its first time, or "between" before it
    end: int
    hours: float
    ends: tuple[float, float]  # the two times of day in hours since midnight (13.0, 17.0)
    written: tuple[float, float]  # the two hours as written (1.0, 5.0 for "1 to 5 PM")


@dataclass(frozen=True)
class _Time:
    hour: float  # as written, with its minutes: 1.5 for "1:30"
    minutes: bool  # written with minutes
    half: str | None  # "am", "pm", "noon", "midnight", or None


def clock_ranges(text: str) -> list[ClockRange]:
    """Each clock range of a text, in order."""
    found = []
    for match in _RANGE.finditer(text):
        first, second = _read(match, "a"), _read(match, "b")
        if first is None or second is None:
            continue
        if match.group("joint").casefold() == "and" and not (
            match.group("between") or (first.minutes and second.minutes)
        ):
            continue  # "at 3 pm and 5 pm" names two times, not the hours between them
        ends = _ends(first, second)
        if ends is None:
            continue
        hours = (ends[1] - ends[0]) % 24 or 24.0
        # "between" is part of it, so its text read alone is the range again
        start = match.start("between") if match.group("between") else match.start("ah")
        start = start if start >= 0 else match.start("aword")
        written = (first.hour, second.hour)
        found.append(ClockRange(start, match.end(), hours, ends, written))
    return found


def _read(match: re.Match[str], tag: str) -> _Time | None:
    if word := match.group(f"{tag}word"):
        return _Time(12.0 if word.casefold() == "noon" else 0.0, False, word.casefold())
    hour, minutes = int(match.group(f"{tag}h")), match.group(f"{tag}m")
    half = match.group(f"{tag}half")
    if minutes is not None and int(minutes) >= 60:
        return None
    value = hour + int(minutes or 0) / 60
    if half is None:
        return _Time(value, minutes is not None, None) if hour <= 24 else None
    kind = half.casefold().replace(".", "").replace(" ", "")
    if kind in ("noon", "midnight"):  # "12 noon": only twelve can be noon or midnight
        return _Time(value, minutes is not None, kind) if hour == 12 else None
    return _Time(value, minutes is not None, kind) if 1 <= hour <= 12 else None


def _ends(first: _Time, second: _Time) -> tuple[float, float] | None:
    """The two times as hours since midnight, or None where they are no clock range."""
    if first.half is None and second.half is None:
        # no a.m. or p.m.: a 24-hour clock, both with minutes ("00:00 to 06:00")
        return (first.hour, second.hour) if first.minutes and second.minutes else None
    if second.half is None:
        return None  # "from 9 am to 5": what the second means is a guess
    end = _of_day(second.hour, second.half)
    if first.half is not None:
        return _of_day(first.hour, first.half), end
    if second.half not in ("am", "pm") or not 1 <= first.hour < 13:
        return None
    start = _of_day(first.hour, second.half)
    if start > end:  # "from 11 to 2 pm": 11 in the morning
        start = _of_day(first.hour, "pm" if second.half == "am" else "am")
    return start, end


def _of_day(hour: float, half: str) -> float:
    if half == "noon":
        return 12.0
    if half == "midnight":
        return 0.0
    return hour % 12 + (12 if half == "pm" else 0)


_LONE_TIME = re.compile(
    rf"(?<![\w:.])\d{{1,2}}(?::\d{{2}}\s*(?:{HALF_DAY})?|\s*{HALF_DAY})(?![\w:])", re.I
)


def lone_times(text: str) -> list[str]:
    """The times of day a text writes outside any clock range ("at 10:40", "by 5 pm")."""
    spans = [(clock.start, clock.end) for clock in clock_ranges(text)]
    return [
        match.group(0)
        for match in _LONE_TIME.finditer(text)
        if not any(start <= match.start() < end for start, end in spans)
    ]
