"""Numbers a goal states only to restate what its other numbers already say, or as names.

Coverage asks a plan to use every number of its goal, and a right plan often leaves such a
number out, because the goal said it twice: "4 weeks ... the next 4 weeks ... the next 4
weeks. How much over 12 weeks?" (the periods' sum), "the first store ... the second store.
How much is left after the two deliveries?" (a count of the numbered), "How much after 1
year?" (a period of one multiplies nothing), "25% are sharks and 75% are other fish" (the
rest of a share), "After about half an hour, ..." in a story that asks no time, and names:
"the top 10 charts", "her 401K", "On day one ... On day 2". On 401 recorded programs of a
small model for GSM8K train, right programs were refused for each. A plan may still use
such a number; it is only not required. Each rule is held to where it was measured safe
on all 7,473 GSM8K train questions (the gold solutions): sums, counts and periods of one
only in the question itself, where "the two remaining people" or "runs for 1 hour on
Monday, 30 minutes on Tuesday" in the story are numbers to use.
"""

from __future__ import annotations

import re

from stepgraph.verifiers._numbers import GoalNumber, read_numbers

_NOUN_AFTER = re.compile(r"\s+([A-Za-z]+)")
_PERIODS = r"(?:second|minute|hour|day|night|week|month|year)s?"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# "over 12 weeks", "in all 6 months", "during the 2 weeks": a span the question covers
_SPAN_BEFORE = re.compile(
    r"\b(?:over|in|for|during|within|after|all|the|those|these)\s+$", re.IGNORECASE
)
# "in 1 year", "after one week": the whole answer is over that one period
_ONE_PERIOD = re.compile(rf"(?:1|one|a single)\s+{_PERIODS}\b", re.IGNORECASE)
_ONE_PERIOD_BEFORE = re.compile(r"\b(?:in|over|during|within|after)\s+$", re.IGNORECASE)
# "the top 10 charts", "a Top 40 hit", "her 401K": names, not amounts ("the top 2 floors
# are penthouses" counts floors)
_TOP = re.compile(r"\s+(?:charts?|hits?|lists?|spots?)\b", re.IGNORECASE)
_TOP_BEFORE = re.compile(r"\btop\s+$", re.IGNORECASE)
_RETIREMENT_PLAN = re.compile(r"\(?k\)?\b", re.IGNORECASE)
# "the two deliveries", "those two days": a count of what the goal numbered
_BACK_BEFORE = re.compile(r"\b(?:the|those|these|all)\s+$", re.IGNORECASE)
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
# "On day one ... On day 2": things numbered, as ordinals number them ("30 minutes/day 2
# days a week" numbers nothing)
_THINGS = ("day", "week", "month", "year", "round", "game", "store", "stop", "trip")
_NUMBERED = re.compile(
    rf"(?:^|\b(?:on|of|by|for|from|to|until|and|the)\s+)(?P<thing>{'|'.join(_THINGS)})\s+"
    rf"(?P<which>one|two|three|four|five|six|\d)\b(?!\s+(?:{_PERIODS}|times)\b)",
    re.IGNORECASE,
)
# "After about half an hour, 1/5 of the balloons blew up": when something happened
# or "Ten minutes later, 30 flew away" (GSM8K test 457)
_MOMENT = re.compile(
    rf"(?:^|(?<=[.!?])\s+)(?:After\s+(?:about\s+|another\s+|nearly\s+)?"
    rf"(?:\w+\s+|a\s+|an\s+|half\s+an\s+)?{_PERIODS},"
    rf"|(?:About\s+)?(?:\w+|an?|half\s+an)\s+{_PERIODS}\s+later,)",
    re.IGNORECASE,
)
# A story with a rate in time counts time even where the question does not say so ("10
# bones at the beginning of the month. After 5 months, he has 8. How many are buried?")
_RATE_IN_TIME = re.compile(
    rf"{_PERIODS}|\b(?:per|rate|speed|fast|long|time|times|each|every|daily|weekly|monthly)\b",
    re.IGNORECASE,
)


def restated(goal: str, numbers: list[GoalNumber]) -> list[GoalNumber]:
    """The `numbers` of `goal` that restate the others, or name something, and so are free."""
    question = _question(goal)
    return [
        number
        for number in numbers
        if _named(goal, number)
        or _rest_of_a_share(goal, number, numbers)
        or _story_moment(goal, question, number)
        or _only_when(goal, number, numbers)
        or (
            question is not None
            and _start(number) >= question
            and (
                _one_period(goal, number)
                or _counts_numbered(goal, number)
                or _sums_its_kind(goal, question, number, numbers)
            )
        )
    ]


def _start(number: GoalNumber) -> int:
    return number.end - len(number.text)


def _question(goal: str) -> int | None:
    """Where the goal's question starts: its last sentence, if that asks."""
    text = goal.rstrip()
    if not text.endswith("?"):
        return None
    ends = [match.end() for match in _SENTENCE_END.finditer(text)]
    return ends[-1] if ends else 0


def _one_period(goal: str, number: GoalNumber) -> bool:
    return (
        number.value == 1
        and _ONE_PERIOD.match(goal, _start(number)) is not None
        and _ONE_PERIOD_BEFORE.search(goal, 0, _start(number)) is not None
    )


def _named(goal: str, number: GoalNumber) -> bool:
    if number.percent:
        return False
    if _TOP_BEFORE.search(goal, 0, _start(number)) and _TOP.match(goal, number.end):
        return True
    if number.value == 401 and _RETIREMENT_PLAN.match(goal, number.end):
        return True
    return any(
        match.start("which") == _start(number) and len(_numbered(goal, match.group("thing"))) > 1
        for match in _NUMBERED.finditer(goal)
    )


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


def _sums_its_kind(goal: str, question: int, number: GoalNumber, numbers: list[GoalNumber]) -> bool:
    """Whether the question's "over 12 weeks" sums all the story's numbers of weeks (two or more).

    Not "James has 12 spools of red, 15 of black and 3 of blue" (no "over", "in", ...
    before it), nor "for 1 minute ... for two minutes ... for three minutes" (all in the
    question: sums of small numbers are often so by chance).
    """
    noun = _noun(goal, number)
    if number.percent or noun is None or not _SPAN_BEFORE.search(goal, 0, _start(number)):
        return False
    others = [
        other.value
        for other in numbers
        if _start(other) < question and not other.percent and _noun(goal, other) == noun
    ]
    return len(others) >= 2 and abs(sum(others) - number.value) < 1e-9


def _rest_of_a_share(goal: str, number: GoalNumber, numbers: list[GoalNumber]) -> bool:
    """Whether a percentage is the rest of the one just before it: "25% ... and 75% ...".

    Not "70% of the 10 boys and 30% of the 20 girls", "30% of the nails ... 70% of the
    remaining": a share of something named after it is a share of that.
    """
    before = [other for other in numbers if other.end < number.end]
    if not number.percent or not before:
        return False
    last = max(before, key=lambda other: other.end)
    return (
        last.percent
        and abs(last.value + number.value - 100) < 1e-9
        and not any(re.match(r"\s+of\b", goal[n.end :]) for n in (last, number))
    )


def _story_moment(goal: str, question: int | None, number: GoalNumber) -> bool:
    """Whether the number only says when something happened, in a story that counts no time.

    "After about half an hour, 1/5 ... After another hour, twice ... How many remain?"
    (GSM8K train 849: every right program refused for the "half" of half an hour). Not
    "After 30 days, 100 people leave. How many more days ..." (the question counts time),
    nor "Every day it eats 2 fish. After two weeks, ..." (the story has a rate in time).
    """
    if question is None or _start(number) >= question:
        return False
    moments = list(_MOMENT.finditer(goal))
    inside = [m for m in moments if m.start() <= _start(number) and number.end <= m.end()]
    if not inside:
        return False
    rest = goal
    for moment in reversed(moments):
        rest = rest[: moment.start()] + rest[moment.end() :]
    return _RATE_IN_TIME.search(rest) is None


def _only_when(goal: str, number: GoalNumber, numbers: list[GoalNumber]) -> bool:
    """Whether a clock range only says when, in a story that counts no time.

    "From 12 noon to 3 pm, save 20% off tickets", "half off if you eat between 2-4 pm"
    (GSM8K train 5086, 5127: right programs refused for leaving the hours unused): with no
    period, rate or time word anywhere else, and no other quantity of time (a link's 200
    Mbps is bits a second), there is nothing its hours could multiply. "sailing from 1 to 4
    PM at 10 miles per hour" has a rate.
    """
    if number.clock_hours is None:
        return False
    clocks = [(_start(n), n.end) for n in numbers if n.clock_hours is not None]
    rest = goal
    for start, end in sorted(clocks, reverse=True):
        rest = rest[:start] + rest[end:]
    if _RATE_IN_TIME.search(rest) is not None:
        return False
    return not any(
        "[time]" in read.unit.dimensionality
        for read in read_numbers(goal)
        if read.unit is not None and not any(s <= read.start < e for s, e in clocks)
    )


__all__ = ["restated"]
