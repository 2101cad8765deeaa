"""Numbers a goal states only to restate what its other numbers already say.

Coverage asks a plan to use every number of its goal, and a right plan often leaves such a
number out, because the goal said it twice: "4 weeks ... the next 4 weeks ... the next 4
weeks ... over 12 weeks" (12 is the three periods' sum), "the first store ... the second
store ... after the two deliveries" (two counts the ordinals), "her 401K ... after 1 year"
(a period of one multiplies nothing), "the top 10 charts" (a name), "25% will be sharks
and 75% another fish" (the second share is the first's rest). On 401 recorded
programs of a small model for GSM8K train, right programs were refused for each of these.
A plan may still use such a number; it is only not required.
"""

from __future__ import annotations

import re

from stepgraph.verifiers._numbers import GoalNumber

# The word after a number, its noun: "4 weeks" -> week
_NOUN_AFTER = re.compile(r"\s+([A-Za-z]+)")
_PERIODS = r"(?:second|minute|hour|day|night|week|month|year)s?"
# "in 1 year", "after one week": the whole answer is over that one period
_ONE_PERIOD = re.compile(rf"(?:1|one|a single)\s+{_PERIODS}\b", re.IGNORECASE)
_ONE_PERIOD_BEFORE = re.compile(r"\b(?:in|for|over|during|within|after)\s+$", re.IGNORECASE)
# "the top 10 charts", "a Top 40 hit", "her 401K": names, not amounts
_TOP_BEFORE = re.compile(r"\btop\s+$", re.IGNORECASE)
_RETIREMENT_PLAN = re.compile(r"\(?k\)?\b", re.IGNORECASE)
# "the two deliveries", "those two days", "both ...": a count of what the goal numbered
_BACK_BEFORE = re.compile(r"\b(?:the|those|these|all)\s+$", re.IGNORECASE)
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
# "On day one ... On day 2": things numbered, as ordinals number them
_THINGS = ("day", "week", "month", "year", "round", "game", "store", "stop", "trip")
_NUMBERED_THINGS = rf"(?P<thing>{'|'.join(_THINGS)})"
_NUMBERED = re.compile(
    rf"\b{_NUMBERED_THINGS}\s+(?P<which>one|two|three|four|five|six|\d)\b", re.IGNORECASE
)
_NUMBERED_BEFORE = re.compile(rf"\b{_NUMBERED_THINGS}\s+$", re.IGNORECASE)


def restated(goal: str, numbers: list[GoalNumber]) -> list[GoalNumber]:
    """The `numbers` of `goal` that restate the others, or name something, and so are free."""
    return [
        number
        for number in numbers
        if _one_period(goal, number)
        or _named(goal, number)
        or _counts_numbered(goal, number)
        or _sums_its_kind(goal, number, numbers)
        or _rest_of_a_share(number, numbers)
    ]


def _start(number: GoalNumber) -> int:
    return number.end - len(number.text)


def _one_period(goal: str, number: GoalNumber) -> bool:
    return (
        number.value == 1
        and _ONE_PERIOD.match(goal, _start(number)) is not None
        and _ONE_PERIOD_BEFORE.search(goal, 0, _start(number)) is not None
    )


def _named(goal: str, number: GoalNumber) -> bool:
    if number.percent:
        return False
    if _TOP_BEFORE.search(goal, 0, _start(number)):
        return True
    numbered = _NUMBERED_BEFORE.search(goal, 0, _start(number))
    if numbered is not None:  # "On day one ... On day 2": which day, where days are numbered
        return len(_numbered(goal, numbered.group("thing"))) > 1
    return number.value == 401 and _RETIREMENT_PLAN.match(goal, number.end) is not None


def _counts_numbered(goal: str, number: GoalNumber) -> bool:
    """Whether a count after "the"/"those" counts exactly the things the goal numbered."""
    if number.percent or not 2 <= number.value <= len(_ORDINALS):
        return False
    if _BACK_BEFORE.search(goal, 0, _start(number)) is None:
        return False
    before = goal[: _start(number)].casefold()
    ordinals = {word for word in _ORDINALS if re.search(rf"\b{word}\b", before)}
    numbered = [_numbered(before, thing) for thing in _THINGS]
    return number.value in (len(ordinals), *map(len, numbered))


def _numbered(text: str, thing: str) -> set[str]:
    """Which of `thing` the text numbers: "day one ... day 2" -> {"one", "2"}."""
    return {
        match.group("which").casefold()
        for match in _NUMBERED.finditer(text)
        if match.group("thing").casefold() == thing.casefold()
    }


def _noun(goal: str, number: GoalNumber) -> str | None:
    match = _NOUN_AFTER.match(goal, number.end)
    return match.group(1).casefold().removesuffix("s") if match else None


def _sums_its_kind(goal: str, number: GoalNumber, numbers: list[GoalNumber]) -> bool:
    """Whether the number is the sum of all the goal's other numbers of the same thing."""
    noun = _noun(goal, number)
    if number.percent or noun is None:
        return False
    others = [
        other.value
        for other in numbers
        if other is not number and not other.percent and _noun(goal, other) == noun
    ]
    return len(others) >= 2 and abs(sum(others) - number.value) < 1e-9


def _rest_of_a_share(number: GoalNumber, numbers: list[GoalNumber]) -> bool:
    """Whether a percentage is the rest of the number just before it: "25% ... and 75%".

    Not "70% of the 10 boys and 30% of the 20 girls": shares of two things, a number between.
    """
    before = [other for other in numbers if other.end < number.end]
    if not number.percent or not before:
        return False
    last = max(before, key=lambda other: other.end)
    return last.percent and abs(last.value + number.value - 100) < 1e-9


__all__ = ["restated"]
