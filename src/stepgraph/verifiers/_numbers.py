"""The numbers a goal states, and the numbers a plan writes, found the same way everywhere.

Two questions are answered here, once, for grounding before a run and coverage after it:

- is a literal a plan writes one of the goal's numbers? A literal is a bare number (its
  unit, if any, is checked apart), so every form a plan may write it in counts: 12% as 12,
  0.12, and where the words say so its complement 0.88 or 88 (``(100 - 12) / 100``);
- is a value (an input of the task or of the plan) the quantity a text states? A value
  carries its unit, so it must be that quantity, in any unit of the same kind: 450 Mbps as
  56.25 MB/s but not 450 MB/s, 12% as 0.12, 12 % or its complement 0.88 where the words
  say so (never the bare 12, which a step would multiply by), "00:00 to 06:00" as 6 h or
  360 min (not 6 min).

A percentage's complement is the same number only where the words around it say a share
is taken away or the rest is meant: "12% lost to retries" kept is 0.88, "65% full" free is
0.35, "30% off" paid is 0.7; "90% utilisation" is 0.9, never 0.1. The words looked at are
the percentage's clause: the text between the punctuation or the joining words ("and",
"with", "at", "but", "while", "whereas") on either side of it.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field, replace
from typing import Any

import pint

from stepgraph.exceptions import UnitError
from stepgraph.units import is_count_unit, parse_unit, quantity
from stepgraph.verifiers._clock import HALF_DAY, clock_ranges
from stepgraph.verifiers._everyday import is_everyday
from stepgraph.verifiers._weekdays import weekday_ranges

# "3/5 of the remaining cats": one share, 0.6 (GSM8K plans read 3 and 5 apart and
# multiplied them). Not a date (3/15/2024) and not "24/7".
_FRACTION = re.compile(r"(?<![\w.:/$])(\d+)/(\d+)(?![\w./]*\d)")
# "40 percent are juniors" is 40% (GSM8K train 6514: read as a plain 40, which grounding
# then refused as not what its quote states).
_NUMBER = re.compile(
    r"(?<![\w.:])(\d[\d,]*(?:\.\d+)?)(\s*%|\s+per\s?cent\b)?(?![\w:]*\d)", re.IGNORECASE
)
_WORD_PERCENT = re.compile(r"\s*%|\s+per\s?cent\b", re.IGNORECASE)
_PERCENT_END = re.compile(r"(?:%|\bper\s?cent)$", re.IGNORECASE)


def is_percent(written: str) -> bool:
    """Whether a number as the goal writes it is a percentage: "12%", "40 percent"."""
    return _PERCENT_END.search(written.strip()) is not None


TOLERANCE = 1e-6
# Numbers people write as words, with the forms a plan may use each in ("half as many" is
# "/ 2" or "* 0.5"). "one" and "a" are left out: "one of them", "a day" state no quantity.
_WORD_VALUES: dict[str, tuple[float, ...]] = {
    "two": (2,), "three": (3,), "four": (4,), "five": (5,), "six": (6,), "seven": (7,),
    "eight": (8,), "nine": (9,), "ten": (10,), "eleven": (11,), "twelve": (12,),
    "thirteen": (13,), "fourteen": (14,), "fifteen": (15,), "sixteen": (16,),
    "seventeen": (17,), "eighteen": (18,), "nineteen": (19,), "twenty": (20,), "thirty": (30,),
    "forty": (40,), "fifty": (50,), "sixty": (60,), "seventy": (70,), "eighty": (80,),
    "ninety": (90,), "hundred": (100,), "thousand": (1000,), "dozen": (12,), "half": (0.5, 2),
    "quarter": (0.25, 4), "twice": (2,), "double": (2,), "triple": (3,), "thrice": (3,),
    "doubled": (2,), "tripled": (3,), "quadruple": (4,), "quadrupled": (4,),
    "doubles": (2,), "triples": (3,), "quadruples": (4,), "dozens": (12,),
}  # fmt: skip
# "a few are doubles", "three triples": the verb's forms as nouns (baseball cards, lifts)
_MULTIPLIER_VERBS = {"doubles", "triples", "quadruples"}
# "double-counts 8 toddlers", "a double-page spread": a word of its own, which a plan may
# use (8 counted twice) but need not (GSM8K train 1406: a right 26 - 8 + 3 refused for an
# unused "double"); not "a five-day trip", whose five the answer needs
_COMPOUNDED = {"double", "triple", "quadruple"}
# "how many dozens of eggs": 12 to a dozen, which the plan may use; not required, since
# "2 dozens cost $14" counts in dozens (GSM8K train: 9 of the 11 questions with "dozens"
# use 12; test 1141's eggs / 12 was refused as 12 "not a number of the goal")
_UNIT_WORDS = {"dozens"}
_COMPOUND_AFTER = re.compile(r"-[a-z]", re.IGNORECASE)
_NOUN_BEFORE = re.compile(
    r"\b(?:are|were|few|some|many|of|the|\d+|two|three|four|five|six)\s+$", re.IGNORECASE
)
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_UNITS = "one|two|three|four|five|six|seven|eight|nine"
# "twenty-five" is 25, one number (GSM8K writes them so), never 20 and 5.
_NUMBER_WORD = re.compile(
    rf"\b((?:{_TENS})[- ](?:{_UNITS})|" + "|".join(_WORD_VALUES) + r")\b", re.IGNORECASE
)
_ONES = {word: n for n, word in enumerate(_UNITS.split("|"), start=1)}
# only counted ("three dozens", "10 dozens", "how many dozens"): "Dozens of people came"
# says many, and a 12 there would be a number from nowhere
_COUNT_BEFORE = re.compile(rf"(?:\d|\bhow\s+many|{_NUMBER_WORD.pattern})\s+$", re.IGNORECASE)
# "the first quarter", "that half", "per quarter": a part of a game or a year, named, not
# a share of something (GSM8K train 1068 read "quarter" as 0.25 twice, and every plan was
# refused for not using it).
_PERIOD_BEFORE = re.compile(
    r"\b(?:first|second|third|fourth|last|final|next|previous|that|this|each|every|per)\s+$",
    re.IGNORECASE,
)
_PERIODS = {"half", "quarter"}
# "a third more", "a fourth of the money", "two-thirds of": one share (GSM8K train 1775 and
# 2042 wrote `/ 3` and `/ 4`, refused as numbers the goal does not state). Only before
# "of", a comparison or the clause's end: "a third book" is an ordinal. "a quarter" is a
# number word of its own ("a quarter of an hour").
_DENOMINATORS = {
    "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "quarter": 4,
}  # fmt: skip
_FRACTION_BODY = (
    rf"\b(?P<numerator>a|one|{_UNITS})[\s-]+(?P<denominator>{'|'.join(_DENOMINATORS)})"
    r"(?P<plural>s?)"
)
_FRACTION_PARTS = re.compile(_FRACTION_BODY, re.IGNORECASE)
_EQUAL_PARTS = re.compile(
    r"\b(?:in|into)\s+(?:equal\s+)?(?P<parts>halves|"
    + "|".join(f"{word}s" for word in _DENOMINATORS)
    + r")\b",
    re.IGNORECASE,
)
_FRACTION_WORD = re.compile(
    _FRACTION_BODY + r"(?=\s+(?:of|more|less|fewer|as|off)\b|\s*[.,;:?!]|\s*$)", re.IGNORECASE
)
# "one-fourth are optical mice": joined by a hyphen it is a share wherever it stands (GSM8K
# train 4665: `total // 4` refused as a number the goal does not state)
_HYPHENED_FRACTION = re.compile(
    rf"\b(?:a|one|{_UNITS})-(?:{'|'.join(_DENOMINATORS)})s?\b", re.IGNORECASE
)


def worded_fraction(text: str) -> tuple[int, int] | None:
    """The numerator and denominator of a fraction in words ("two-thirds": 2, 3), or None."""
    match = _FRACTION_PARTS.fullmatch(text.strip())
    if match is None:
        return None
    written = match.group("numerator").casefold()
    numerator = 1 if written in ("a", "one") else _ONES[written]
    word = match.group("denominator").casefold()
    one = numerator == 1
    if one == bool(match.group("plural")) or (one and word == "quarter"):
        return None  # "a thirds", "two third", "a quarter" (a number word of its own)
    return numerator, _DENOMINATORS[word]


@dataclass(frozen=True)
class GoalNumber:
    """A number as the goal writes it, with every form a plan may use it in."""

    text: str
    value: float
    end: int  # where it ends in the text: the unit, if any, comes next
    percent: bool = False
    clock_hours: float | None = None  # "00:00 to 06:00" is 6 hours
    accepted: list[float] = field(default_factory=list)
    complement: bool = False  # a percentage whose words say 1 - share is meant too
    required: bool = True  # coverage asks for it; "the 3rd floor" names which floor
    label: bool = False  # a name, not a quantity ("Book 1", "the 4th graders"): never read
    days: int | None = None  # "from Monday to Thursday" is 4 days


# Words that say a share is taken away, or that the rest is what counts: only beside one
# is a percentage's complement (12% lost: 0.88 kept) the goal's number. "saves 20%", "25%
# less", "sold 3/5" take a share away too (GSM8K test 370, train 5103, test 384).
_LOSS_WORDS = re.compile(
    r"\b(?:lost|loss(?:es)?|los(?:e|es|ing)|off|overhead|discount(?:s|ed)?|waste[ds]?|"
    r"drop(?:s|ped)?|fail(?:s|ed|ures?)?|leak(?:s|ed|age)?|reject(?:s|ed|ions?)?|"
    r"retry|retries|shrink(?:s|age)?|remain(?:s|ing|der)?|left|rest|free|full|occupied|"
    r"except|excluding|less|fewer|cheaper|lower|sav(?:e[sd]?|ing|ings)|decrease[sd]?|"
    r"reduce[sd]?|reduction)\b",
    re.IGNORECASE,
)
# Verbs that take a share away unless the clause says it grows ("ate 25% more" is growth).
_TAKING_WORDS = re.compile(
    r"\b(?:sold|sell(?:s|ing)?|gave|give[sn]?|spent|spend(?:s|ing)?|ate|eaten|used|took|"
    r"taken)\b",
    re.IGNORECASE,
)
# Where a clause ends: punctuation (a full stop, not a decimal point), or a joining word.
_CLAUSE_END = re.compile(
    r"[;:!?,()]|\.(?=\s|$)|\s(?:and|with|at|but|while|whereas)\s", re.IGNORECASE
)


def _clause(text: str, start: int, end: int) -> str:
    """The words of `text` around ``text[start:end]``, up to the clause's ends."""
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    right = _CLAUSE_END.search(text, end)
    return text[left : right.start() if right else len(text)]


# Words that say a share is added on: beside one a percentage is also its growth factor
# ("20% greater" as 1.2: GSM8K train 4078 wrote `boys * 1.2`, refused as no number stated).
_GROWTH_WORDS = re.compile(
    r"\b(?:more|greater|larger|bigger|higher|taller|longer|increase[ds]?|increasing|"
    r"raise[ds]?|rise[ns]?|rose|grow(?:s|n)?|grew|markup|marked up)\b",
    re.IGNORECASE,
)


def _takes_away(words: str) -> bool:
    """Whether a clause says a share is lost, taken away or left.

    A loss word says so; a taking verb ("sold", "ate") only where nothing grows.
    """
    if _LOSS_WORDS.search(words):
        return True
    return bool(_TAKING_WORDS.search(words)) and not _GROWTH_WORDS.search(words)


def _percent(
    text: str,
    number: float,
    end: int,
    complement: bool,
    growth: bool = False,
    whole_unknown: bool = False,
) -> GoalNumber:
    accepted = [number, number / 100]
    if complement:
        accepted += [1 - number / 100, 100 - number]
    if growth:
        accepted += [1 + number / 100, 100 + number]
    if whole_unknown:  # "10 earrings, which is 25% of Monica's": Monica's is 10 x 4
        accepted.append(100 / number)
    return GoalNumber(text, number, end, True, None, accepted, complement)


# "Bella has 10 earrings, which is 25% of Monica's earrings": the part is stated and the
# whole is asked for, so a program may multiply by the share's reciprocal (GSM8K train
# 1488: `bella * 4  # 25% of Monica's earrings`, refused as a 4 the goal never states).
_IS_BEFORE = re.compile(r"\b(?:is|are|was|were)\s+$", re.IGNORECASE)
_OF_AFTER = re.compile(r"\s+of\b", re.IGNORECASE)


# "in the ratio 3:2", "The ratio of boys to girls is 5:7", "2:1:3": each part a number,
# which `_NUMBER` leaves alone as it does a time of day (GSM8K train 630, 246, test 704: a
# right 5 / (5 + 7) refused as 5 "not a number of the goal"; of the 34 ratios so written in
# train questions, the solutions use each part of 33)
_RATIO_PART = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")  # 1:2.5, 1:25,000
_RATIO = re.compile(
    rf"(?<![\w.:$])(?:{_RATIO_PART.pattern})(?:\s*:\s*(?:{_RATIO_PART.pattern}))+(?![\w:]*\d)"
)
_RATIO_BEFORE = re.compile(r"\bratios?\b", re.IGNORECASE)
# where a ratio's numbers stand: "the ratio (of) 3:2", "... is 5:7", "in a 3:2 ratio"; not
# "the ratio of boys in the 8:30 class", a time
_RATIO_HERE = re.compile(r"\b(?:ratios?(?:\s+of)?|is|are|was|were|be|at|to)\s+$", re.IGNORECASE)
_RATIO_AFTER = re.compile(r"\s+ratio\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]\s")


def _sentence_before(text: str, at: int) -> str:
    """The text from the start of the sentence that `at` is in, up to `at`."""
    return text[max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0) : at]


def _ratios(text: str) -> list[re.Match[str]]:
    """The text's "a:b" that a sentence speaking of a ratio writes, and no time of day."""
    return [
        match
        for match in _RATIO.finditer(text)
        if (
            _RATIO_AFTER.match(text, match.end())
            or _RATIO_BEFORE.search(_sentence_before(text, match.start()))
            and _RATIO_HERE.search(text, 0, match.start())
        )
        and not _TIME_OF_DAY.match(text, match.end())  # "the ratio ... is 3:30 pm"
    ]


def _read_in_context(goal: str) -> list[GoalNumber]:
    """The goal's numbers that only the words around them make numbers: ratios, dozens."""
    dozens = [number for number in word_numbers(goal) if number.text.casefold() in _UNIT_WORDS]
    return [*(part for ratio in _ratios(goal) for part in _ratio_parts(ratio)), *dozens]


def _ratio_parts(match: re.Match[str]) -> list[GoalNumber]:
    parts = []
    for part in _RATIO_PART.finditer(match.group(0)):
        value = float(part.group(0).replace(",", ""))
        parts.append(GoalNumber(part.group(0), value, match.start() + part.end(), accepted=[value]))
    return parts


def goal_numbers(text: str) -> list[GoalNumber]:
    """Each number of a text in order: clock ranges as their length, 12% also as 0.12.

    A percentage whose clause says a share is lost or left (`_LOSS_WORDS`) is also
    accepted as its complement: "12% lost" as 0.88 or 88. A fraction ("3/5") is its
    value, 0.6, which a plan may also write as 3 / 5 (or, beside such words, as 1 - 3/5).
    """
    found: list[GoalNumber] = []
    ranges = []
    for match in _MIXED.finditer(text):
        found.append(_mixed(match))
        ranges.append(match.span())
    for match in _SCALED.finditer(text):
        found.append(_scaled(match))
        ranges.append(match.span())
    for clock in clock_ranges(text):
        written = text[clock.start : clock.end]
        hours = clock.hours
        found.append(GoalNumber(written, hours, clock.end, False, hours, [hours]))
        ranges.append((clock.start, clock.end))
    for week in weekday_ranges(text):
        # not required: a story may name the days it tells of and count nothing by them
        days = week.days
        written = text[week.start : week.end]
        found.append(
            GoalNumber(written, days, week.end, accepted=[days], required=False, days=days)
        )
    for match in _ratios(text):
        if not any(start < match.end() and match.start() < end for start, end in ranges):
            found += _ratio_parts(match)
            ranges.append(match.span())
    for match in _FRACTION.finditer(text):
        if any(start <= match.start() < end for start, end in ranges):
            continue
        if (fraction := _fraction(text, match)) is not None:
            found.append(fraction)
            ranges.append(match.span())
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in ranges):
            continue
        number = float(match.group(1).replace(",", ""))
        written = match.group(0).strip()
        if match.group(2):
            words = _clause(text, match.start(), match.end())
            lost, grown = _takes_away(words), bool(_GROWTH_WORDS.search(words))
            of_whole = _IS_BEFORE.search(text, 0, match.start(1)) is not None and bool(
                _OF_AFTER.match(text, match.end())
            )
            found.append(
                _percent(written, number, match.end(), lost, grown, of_whole and number > 0)
            )
        else:
            ordinal = _ORDINAL_END.match(text, match.end()) and not _EVERY_BEFORE.search(
                text, 0, match.start()
            )
            when = _TIME_OF_DAY.match(text, match.end()) is not None
            label = (
                _GRADE_AFTER.match(text, match.end()) is not None
                or _GRADE_BEFORE.search(text, 0, match.start()) is not None
                or _NAMED_BY_HYPHEN.search(text, 0, match.start()) is not None
                or _is_label(text, match)
            )
            found.append(
                GoalNumber(
                    written,
                    number,
                    match.end(),
                    accepted=[number],
                    required=not (
                        ordinal or when or label or _counts_a_list(text, match.end(), number)
                    ),
                    label=label,
                )
            )
    return sorted(found, key=lambda number: number.end)


# "the 4th graders", "the 3rd floor": an ordinal names which one, so coverage does not ask
# for it (a plan may still use it: "up 5 floors from the 3rd"); "every 3rd customer" counts.
_ORDINAL_END = re.compile(r"(?:st|nd|rd|th)\b", re.IGNORECASE)
# "the 4th graders bought 30%": a school year is a name, so the goal's reading offers it to no
# plan (GSM8K train 3045: plans multiplied 30% by `graders_4`).
_GRADE_AFTER = re.compile(r"(?:st|nd|rd|th)[\s-]+grade", re.IGNORECASE)
# "the Grade 6 PE class" names it too (GSM8K train 3705: every plan refused for leaving the 6
# unused); "she can grade 296 papers" is a verb, and lowercase.
_GRADE_BEFORE = re.compile(r"\bGrade\s+$")
# "COVID-19", "I-95", "a B-52": a number after a word and a hyphen is part of a name (GSM8K
# train 1402: "a family killed by COVID-19", every right program refused for leaving 19 unused)
_NAMED_BY_HYPHEN = re.compile(r"[A-Za-z]-$")
# "Book 1 cost 13.00 and Book 2 cost 15.00": a number right after a capitalised noun that
# opens a sentence or a list, where the noun is numbered so more than once, names that one
# (GSM8K train 2289 read "Book 1" as `cost_1` and plans priced it). Not "Another 20 came"
# (one number), "gave Sara 8 apples" (no opening), "On Monday 20 cars" (a day).
_LABEL_BEFORE = re.compile(r"(?:^|[.!?;,(&]\s*|\band\s+|\bor\s+)(?P<word>[A-Z][a-z]+) $")
_NOT_LABELS = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "in", "on", "at", "by", "for", "after", "before",
    "about", "over", "under", "only", "all", "each", "every", "then", "now", "if", "and",
    "but", "so", "the", "of", "with", "from", "to", "there", "he", "she", "it", "they", "we",
    # "Her 3 Swordtails ... Her 8 Guppies" are fish, not fish named 3 and 8 (GSM8K train 3159)
    "her", "his", "their", "its", "my", "our", "your", "a", "an", "this", "that", "these",
    "those", "some", "another", "both",
}  # fmt: skip


def _is_label(text: str, match: re.Match[str]) -> bool:
    before = _LABEL_BEFORE.search(text, 0, match.start())
    if (
        before is None
        or before.group("word").casefold() in _NOT_LABELS
        or re.fullmatch(r"\d+", match.group(1)) is None
        or text[match.end() : match.end() + 1] not in ("", " ", ",", ".", "&")
    ):
        return False
    series = re.findall(rf"\b{before.group('word')} (\d+)\b", text)
    return len(set(series)) > 1


_EVERY_BEFORE = re.compile(r"\bevery\s+$", re.IGNORECASE)
# "before 6 P.M.", "at 4 pm": a time of day says when, as an ordinal says which (GSM8K train
# 4701: every plan was refused for leaving "6 P.M." unused); a plan may still use it.
_TIME_OF_DAY = re.compile(rf"\s*(?:{HALF_DAY}|o'clock)", re.IGNORECASE)


# "two and a half hours", "1 and 1/4 cups", "2 and half dozen": one number, 2.5 (GSM8K train
# 1502, 623: read as 2 and a half hour apart, "1" and "1/4" of a cup apart)
_PARTS = {"half": 0.5, "quarter": 0.25, "third": 1 / 3, "1/2": 0.5, "1/4": 0.25, "3/4": 0.75}
_MIXED = re.compile(
    rf"\b(?P<whole>\d+|{_UNITS}|ten|eleven|twelve)\s+and\s+(?:a\s+|one\s+)?"
    r"(?P<part>half|quarter|third|1/2|1/4|3/4)(?![\w/])",
    re.IGNORECASE,
)

# "5 thousand dollars", "1.2 million people": one number, 5000 (GSM8K train 3859: read as a
# 5 and a "thousand" apart, so a right program's 5000 was no number of the goal and both
# parts went unused). Written as 5000 or as 5 * 1000.
_SCALED = re.compile(
    r"(?<![\w.,])(?P<number>\d[\d,]*(?:\.\d+)?)\s+(?P<scale>thousand|million|billion)\b",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}


def _scaled(match: re.Match[str]) -> GoalNumber:
    number = float(match.group("number").replace(",", ""))
    scale = _SCALES[match.group("scale").casefold()]
    value = number * scale
    return GoalNumber(match.group(0), value, match.end(), accepted=[value, number, scale])


def _mixed(match: re.Match[str]) -> GoalNumber:
    whole = match.group("whole").casefold()
    value = (float(whole) if whole.isdigit() else _WORD_VALUES.get(whole, (1,))[0]) + _PARTS[
        match.group("part").casefold()
    ]
    return GoalNumber(match.group(0), value, match.end(), accepted=[value])


def _fraction(text: str, match: re.Match[str]) -> GoalNumber | None:
    numerator, denominator = int(match.group(1)), int(match.group(2))
    if denominator == 0 or match.group(0) == "24/7":
        return None
    value = numerator / denominator
    accepted = [value, float(numerator), float(denominator)]
    if _takes_away(_clause(text, match.start(), match.end())):
        accepted += _rest(numerator, denominator)
    return GoalNumber(match.group(0), value, match.end(), False, None, accepted)


def _rest(numerator: int, denominator: int) -> list[float]:
    """The rest of a fraction lost or left, and the rest's numerator.

    "sold 3/5 of his land and had 12.8 hectares left": 2/5, and the 2 of ``12.8 * (5 / 2)``
    (GSM8K test 384, refused for a 2 the goal does not state).
    """
    return [1 - numerator / denominator, float(denominator - numerator)]


def word_numbers(text: str) -> list[GoalNumber]:
    """The numbers a text writes as words ("three", "a dozen", "half"), each with its forms.

    A plan may use them, and an input may quote them; coverage requires them ("goats have
    four legs") except where one only counts the amounts listed after it (`_counts_a_list`:
    "Three classes have 28, 31 and 26 pupils"). "half" or
    "quarter" after an ordinal or "that", "each", "per" names a period and is no number.
    """
    found: list[GoalNumber] = []
    spans = [match.span() for match in [*_MIXED.finditer(text), *_SCALED.finditer(text)]]
    fractions = [*_FRACTION_WORD.finditer(text), *_HYPHENED_FRACTION.finditer(text)]
    for match in sorted(fractions, key=lambda match: match.start()):
        if any(start <= match.start() < end for start, end in spans):
            continue
        if (parts := worded_fraction(match.group(0))) is None:
            continue
        numerator, denominator = parts
        value = numerator / denominator
        accepted = [value, float(numerator), float(denominator)]
        if _takes_away(_clause(text, match.start(), match.end())):
            accepted += _rest(numerator, denominator)
        found.append(GoalNumber(match.group(0), value, match.end(), accepted=accepted))
        spans.append(match.span())
    for match in _EQUAL_PARTS.finditer(text):
        # "cuts it into fifths": 5 parts, each 1/5 (GSM8K train 2433: `/ 5` refused as a
        # number not stated); a story may cut so and use nothing of it, so it is not required
        word = match.group("parts").casefold()
        count = 2 if word == "halves" else _DENOMINATORS[word.removesuffix("s")]
        found.append(
            GoalNumber(
                match.group(0), count, match.end(), accepted=[count, 1 / count], required=False
            )
        )
    for match in _NUMBER_WORD.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue  # the "two" of "two thirds"
        word = match.group(1).casefold()
        if word in _PERIODS and _PERIOD_BEFORE.search(text, 0, match.start()):
            continue
        if word in _MULTIPLIER_VERBS and _NOUN_BEFORE.search(text, 0, match.start()):
            continue
        if word in _UNIT_WORDS and not _COUNT_BEFORE.search(text, 0, match.start()):
            continue
        tens, _, ones = word.replace("-", " ").partition(" ")
        values = (_WORD_VALUES[tens][0] + _ONES[ones],) if ones else _WORD_VALUES[word]
        if percent := _WORD_PERCENT.match(text, match.end()):
            # "thirty percent" is 30%, as "30 percent" is (GSM8K train 2705: 0.30 refused)
            words = _clause(text, match.start(), percent.end())
            lost, grown = _takes_away(words), bool(_GROWTH_WORDS.search(words))
            written = text[match.start() : percent.end()]
            found.append(_percent(written, values[0], percent.end(), lost, grown))
            continue
        found.append(
            GoalNumber(
                match.group(0),
                values[0],
                match.end(),
                False,
                None,
                [*values],
                required=not _counts_a_list(text, match.end(), values[0])
                and not (word in _COMPOUNDED and _COMPOUND_AFTER.match(text, match.end()))
                and word not in _UNIT_WORDS,
            )
        )
    return sorted(found, key=lambda number: number.end)


_AMOUNT = r"\$?\d+(?:,\d{3})*(?:\.\d+)?"
# A list of amounts: "28, 31 and 26", "$4 and $7"; one or the other: "one ... 30, the other 45".
LIST_SEPARATOR = r"(?:\s*,\s*(?:and\s+)?|\s+and\s+)"  # "28, 31 and 26", "A, B, and C"
_LIST = re.compile(rf"{_AMOUNT}(?:{LIST_SEPARATOR}{_AMOUNT})+")
_ONE_THE_OTHER = re.compile(r"\bone\b[^.?!]*?\d[^.?!]*?\bthe other\b[^.?!]*?\d", re.IGNORECASE)


# A count, a few words, a colon and the things counted, named (GSM8K train 4897)
_NAMED_LIST = re.compile(r"(?:\s+[\w-]+){1,3}\s*:\s*(?P<items>[A-Za-z][\w\s,'-]*?)\s*(?:[.;:?!]|$)")


def _counts_a_list(text: str, end: int, count: float) -> bool:
    """Whether a number word counts the amounts its sentence then lists, one by one.

    "Three classes have 28, 31 and 26 pupils", "Two pumps fill a tank: one pumps 30 litres
    a minute, the other 45": a plan uses each listed amount, and the count says nothing
    more (the suite's pencils and pumps-minutes: right programs refused for leaving it out).
    "goats have four legs" lists nothing, and stays required.
    """
    sentence = re.split(r"(?<=[.?!])\s", text[end:], maxsplit=1)[0]
    if count == 2 and _ONE_THE_OTHER.search(sentence):
        return True
    if named := _NAMED_LIST.match(sentence):  # "3 different colors: orange, green, and blue"
        return len(re.split(LIST_SEPARATOR, named.group("items"))) == count
    listed = _LIST.search(sentence)
    return listed is not None and len(re.findall(_AMOUNT, listed.group(0))) == count


@dataclass(frozen=True)
class Stated:
    """A quantity a text states: one of its numbers and, where the words say one, its unit."""

    number: GoalNumber
    unit: pint.Unit | None

    @property
    def text(self) -> str:
        """The number as the text writes it."""
        return self.number.text


_PER = {"per"}
_PER_OR_NOT = {"a", "an", "each", "every"}
# "half an hour", "a quarter of a mile": a fraction of one unit, read as an amount of it.
_ARTICLE = re.compile(r"\s+(?:of\s+)?an?\s", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z%/][A-Za-z0-9%/^*.]*")


def stated_quantities(text: str) -> list[Stated]:
    """Each number of a text with the unit written right after it, if it is a known unit.

    A number whose words may mean two units ("7.5 hours a day") is stated once per unit,
    and so is one the engine's own reading of the text (`read_numbers`) gives another unit.
    """
    return _with_reading(_stated_alone(text), text, 0)


def _with_reading(stated: list[Stated], text: str, start: int) -> list[Stated]:
    """`stated`, numbers of `text` from `start` on, and the unit `read_numbers(text)` gives each.

    Alone, "30 litres per minute" states a rate; in a goal that states no duration the
    reading makes it 30 l (as "40 images per hour" is a plain 40). Held to the words alone,
    the engine refused its own inputs: the suite's pumps-minutes lost three right programs.
    """
    found = list(stated)
    for read in read_numbers(text, worded_units=True):
        for item in stated:
            same_place = start + item.number.end == read.end and item.number.value == read.value
            if same_place and all(o.unit != read.unit for o in found if o.number is item.number):
                found.append(Stated(item.number, read.unit))
    return found


def _stated_alone(text: str) -> list[Stated]:
    """`stated_quantities` from the words after each number alone."""
    found = []
    for number in goal_numbers(text):
        if number.clock_hours is not None:
            found.append(Stated(number, parse_unit("h")))
        elif number.days is not None:  # a count of days, or of the days' number
            found.extend([Stated(number, parse_unit("d")), Stated(number, None)])
        elif number.percent:
            found.append(Stated(number, parse_unit("percent")))
        else:
            units: list[pint.Unit | None] = [*_units_after(text[number.end :])] or [None]
            if _is_money(text, number):
                units = _money_units(text[number.end :])
            if _AGES.search(text) and _YEAR in units:
                units.append(None)  # an age: "4 years older" may be a plain 4
            found.extend(Stated(number, unit) for unit in units)
    found.extend(
        Stated(number, parse_unit("percent") if number.percent else None)
        for number in word_numbers(text)
    )
    return found


# A question of ages counts years as plain numbers ("Ana will be 15 in 3 years, how old is
# Sarah?": 15 is plain, so 3 years must add to it). GSM8K train 1307: every plan that added
# "four years older" to an age was refused on units.
_AGES = re.compile(r"\b(?:ages?|aged|how old|years? old|older|younger)\b", re.IGNORECASE)
_YEAR = parse_unit("year")


# "Book 1 cost 13.00" in a goal that writes "$10.00" elsewhere: cents say it is money too
# (GSM8K train 2289: every sum of the prices was refused, dollars plus a plain number).
_CENTS = re.compile(r"\d+\.\d\d")


def _is_money(text: str, number: GoalNumber) -> bool:
    start = number.end - len(number.text)
    if text[:start].rstrip().endswith("$"):
        return True
    return (
        "$" in text
        and _CENTS.fullmatch(number.text) is not None
        and _unit_after(text[number.end :]) is None
    )


def _money_units(rest: str) -> list[pint.Unit | None]:
    """Money: $7 is 7 USD; $7 per hour is 7 USD or 7 USD/h (the read input is the rate)."""
    dollar = parse_unit("USD")
    # As `_as_rate` reads it: the per-word first or second ("$5 for each hour", GSM8K train
    # 881: read as 5 USD/h, then refused as not what its own quote states).
    words = [word.strip(".,;:()?!").casefold() for word in rest.split()[:3]]
    per_at = next((i for i, word in enumerate(words[:2]) if word in _PER | _PER_OR_NOT), None)
    if per_at is None or per_at + 1 >= len(words):
        return [dollar]
    try:
        per = parse_unit(words[per_at + 1], counts=False)
    except UnitError:
        return [dollar]
    return [dollar, dollar / per]


def _units_after(rest: str) -> list[pint.Unit]:
    """The known units the words right after a number may mean: one word, or a rate.

    "60 L per minute" is a rate; "7.5 hours a day" is a rate or a duration (both are
    accepted). Only one word otherwise: in "a 450 Mbps link", link is a unit of length.
    """
    if _GLUED_LETTER.match(rest):
        return []
    words = [word.strip(".,;:()?!") for word in rest.split()[:3]]
    joiner = words[1].casefold() if len(words) == 3 else ""
    texts = [f"{words[0]} / {words[2]}"] if joiner in _PER | _PER_OR_NOT else []
    if joiner not in _PER:
        texts += words[:1]
    units = []
    for text in texts:
        if not text or not _WORD.fullmatch(text.replace(" ", "")):
            continue
        if text.casefold() in _NOT_UNITS:  # "9 points" are no typographic points
            continue
        try:
            unit = parse_unit(_SPOKEN.get(text.casefold(), text), counts=False)
        except UnitError:
            continue
        if is_everyday(unit):
            units.append(unit)
    return units


def normalized(text: str) -> str:
    """Text with whitespace runs made one space, and case folded: how quotes are matched."""
    return " ".join(text.split()).casefold()


def quoted_quantities(quote: str, goal: str) -> list[Stated]:
    """What a quote of the goal states, its percentages read with the goal's words around.

    A quote "12%" of a goal saying "12% of the traffic lost to retries" states a loss:
    its complement counts, as it would for the quote "12% lost to retries".
    """
    stated = _stated_alone(quote)
    if span := re.search(r"\s+".join(map(re.escape, quote.split())), goal, re.IGNORECASE):
        stated = _with_reading(stated, goal, span.start())
        # a quote "3:2" says no ratio, nor "dozens of eggs" how many: the goal around it does
        stated += [
            Stated(replace(number, end=number.end - span.start()), None)
            for number in _read_in_context(goal)
            if span.start() < number.end <= span.end()
            and not any(item.number.value == number.value for item in stated)
        ]
    if _AGES.search(goal):  # "3 years" quoted from a question of ages may be a plain 3
        stated += [Stated(item.number, None) for item in stated if item.unit == _YEAR]
    written, goal_text = normalized(quote), normalized(goal)
    where = goal_text.find(written)
    if where < 0:
        return stated
    around = [
        number.value
        for number in goal_numbers(goal_text)
        if number.complement and where < number.end <= where + len(written)
    ]
    return [
        Stated(_percent(item.text, item.number.value, item.number.end, True), item.unit)
        if item.number.percent and not item.number.complement and matches(item.number.value, around)
        else item
        for item in stated
    ]


def states(stated: Stated, value: Any) -> bool:
    """Whether `value` is the quantity `stated`, in any unit of its kind.

    A percentage is its fraction, or where its words say a share is lost or left the
    fraction's complement too (12% lost: 0.12 lost or 0.88 kept), as a plain number or a
    dimensionless quantity; a number with no unit (or a count such as "25 steps") is that
    number.
    """
    if isinstance(value, bool):
        return False
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if not isinstance(magnitude, int | float) or as_float(magnitude) is None:
        return False
    unit = stated.unit
    if unit is None or is_count_unit(unit):
        return matches(float(magnitude), [stated.number.value])
    if stated.number.percent:
        if isinstance(value, pint.Quantity):
            if not value.dimensionless:
                return False
            magnitude = value.to("dimensionless").magnitude
        share = stated.number.value / 100
        return matches(
            float(magnitude), [share, 1 - share] if stated.number.complement else [share]
        )
    if not isinstance(value, pint.Quantity):
        expected = quantity(stated.number.value, unit)
        return bool(unit.dimensionless) and matches(
            float(value), [float(expected.to("dimensionless").magnitude)]
        )
    return bool(value.is_compatible_with(unit)) and matches(
        float(value.to(unit).magnitude), [stated.number.value]
    )


def as_float(number: Any) -> float | None:
    """`number` as a float; None for an integer of 400 digits, which no goal states."""
    try:
        return float(number)
    except (OverflowError, TypeError, ValueError):
        return None


def literal_numbers(value: Any) -> list[float]:
    """Numeric literals in arguments: numbers, and numbers inside expressions or quantities."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [number] if (number := as_float(value)) is not None else []
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


@dataclass(frozen=True)
class ReadNumber:
    """A quantity the goal states, read for the planner: its value, unit and place."""

    value: float
    unit: pint.Unit | None
    start: int  # where its words begin ("$" included)
    end: int
    unit_end: int = -1  # where the unit's word after the number ends; -1: none read there


# English words that pint also reads as units (attosecond, inch, typographic point, ...):
# never a unit right after a number in running text ("half as many", "9 points").
_NOT_UNITS = {
    "a", "an", "as", "at", "in", "is", "it", "or", "to", "by", "do", "no", "so", "up",
    "point", "points", "hand", "hands", "turn", "turns", "line", "lines", "link", "links",
    "rod", "rods", "chain", "chains", "span", "spans", "stone", "stones", "cycle", "cycles",
    # "1 has a birthday" is no hectare, "1 more mug of cocoa" no microgram (GSM8K train 604,
    # 5636)
    "has", "mug", "mugs",
}  # fmt: skip
_TIME = "[time]"
# What people mean by a word pint reads otherwise ("5 kilos" is no 5 kiloseconds).
_SPOKEN = {"kilo": "kg", "kilos": "kg"}


def read_numbers(text: str, *, worded_units: bool = False) -> list[ReadNumber]:
    """Every quantity a text states, digits and words, with the unit its words give.

    A number word ("two hours") takes the unit after it only with `worded_units`: the
    reading of older runs, which replays re-read, keeps it a plain number.

    Percentages are shares (90% -> 0.9), clock ranges hours, "$2" dollars, a number before
    a unit that unit. "40 images per hour" is a rate (40 / h) only when the text also states
    a duration to multiply it by; otherwise it, like a count ("16 eggs"), is a plain number,
    so counts of different things still add and multiply as the question means.
    """
    found = []
    words = word_numbers(text)
    for number in [*goal_numbers(text), *words]:
        if number.label:
            continue
        start = number.end - len(number.text)
        unit: pint.Unit | None = None
        unit_end = -1
        value = number.value
        if number.clock_hours is not None:
            unit = parse_unit("h")
        elif number.days is not None:
            unit = parse_unit("d")
        elif number.percent:
            value = number.value / 100
        elif _is_money(text, number):
            start -= text[:start].endswith("$")
            unit = parse_unit("USD")
        elif _TIME_OF_DAY.match(text, number.end):
            pass  # "at 6 a.m." says when: no 6 metre-years (GSM8K test 953)
        elif worded_units or number not in words:
            rest = text[number.end :]
            if (
                worded_units
                and number.text.casefold() in _PERIODS
                and (article := _ARTICLE.match(rest))
            ):
                # "half an hour" is 0.5 h; "twice a week" is how often, no 2 weeks
                rest = rest[article.end() - 1 :]
            unit, between = _unit_after(rest), _BETWEEN.match(rest)
            if unit == _INCH and _closes_quotation(text, number.end):  # 'said "I have 5"'
                unit = None
            if unit is None and between is not None:  # "7 additional minutes": 7 min
                rest = rest[between.end() :]
                # "one-quarter of the second floor" names a floor (GSM8K train 6951)
                unit = None if _WHICH_SECOND.match(rest) else _unit_after(rest)
            if unit is not None:
                unit_end = len(text) - len(rest) + _unit_word_end(rest)
            if unit == _YEAR and _AGES.search(text):
                unit = None
        if value != 0:
            found.append(ReadNumber(value, unit, start, number.end, unit_end))
    durations = any(r.unit is not None and r.unit.dimensionality == {_TIME: 1} for r in found)
    if durations:
        found = [
            read
            if read.unit_end > read.end + 1 and _ARTICLE.match(text[read.end :])
            else _as_rate(read, text)
            for read in found
        ]
    return _compared_alike(sorted(found, key=lambda read: read.start), text)


# "2 more than 5 miles", "10 less than 50 packages per hour": the difference is in the unit
# of what it is taken from (GSM8K train 2145, 467, test 911: a plain 2 added to 5 mi was
# refused, "units do not match")
_LESS_THAN = re.compile(r"\s+(?:less|more|fewer)\s+than\s+", re.IGNORECASE)
# a count, in digits or a whole number word: not "25% more than $20,000" (a share of it), nor
# "a third more than 30 minutes"
_COUNT = re.compile(
    rf"\d[\d,]*(?:\.\d+)?|(?:{_TENS})(?:[- ](?:{_UNITS}))?|{_UNITS}|ten", re.IGNORECASE
)
_YEAR_BEFORE = re.compile(r"\b(?:in|since|by|until|of)\s+$", re.IGNORECASE)  # "In 2019 more than"


def _compared_alike(found: list[ReadNumber], text: str) -> list[ReadNumber]:
    """Each plain count "k less|more|fewer than" a quantity given that quantity's unit."""
    for at in range(len(found) - 2, -1, -1):  # from the last: "1 less than 2 more than 5 mi"
        read, after = found[at], found[at + 1]
        near = _LESS_THAN.match(text, read.end)
        if (
            read.unit is None
            and after.unit is not None
            and near
            and near.end() == after.start
            and _COUNT.fullmatch(text, read.start, read.end)
            and not _YEAR_BEFORE.search(text, 0, read.start)
        ):
            found[at] = ReadNumber(read.value, after.unit, read.start, read.end)
    return found


# An inch mark right after a number ('24" long', "a 24” tall dog"); one that closes a
# quotation is told apart by `_closes_quotation`.
_INCH_MARK = re.compile(r'["”](?![A-Za-z0-9])')
_INCH = parse_unit("in")
# Words that may stand between a number and its unit and leave the unit the number's:
# "7 additional minutes"; "drinking 4 of those gallons" (GSM8K test 1199: a plain 4 taken
# from 24 gallons was refused, "units do not match").
_BETWEEN = re.compile(
    r"\s*(?:more|additional|extra|fewer|less|other|of\s+(?:those|these|the|that))(?=\s)",
    re.IGNORECASE,
)


def _closes_quotation(text: str, end: int) -> bool:
    """Whether a quotation mark at `end` closes one the text opened before it.

    Marks right after a digit are inch marks, not quotation marks ('24" long').
    """
    before = text[:end]
    straight = len(re.findall(r'(?<!\d)"', before))
    return straight % 2 == 1 or before.count("“") > len(re.findall(r"(?<!\d)”", before))


# "three 2s, four 3s", "a 10K race", "class 3B": a letter written onto the number makes it a
# plural, thousands or a name, not seconds, kelvin or bytes (GSM8K train 3138, 372)
_GLUED_LETTER = re.compile(r"[sKB](?![\w/])")
_WHICH_SECOND = re.compile(r"\s*second\s+[a-z]")


def _unit_after(rest: str) -> pint.Unit | None:
    if _INCH_MARK.match(rest):  # 'her hair is 24" long'
        return _INCH
    if _GLUED_LETTER.match(rest):
        return None
    rest = rest[1:] if rest.startswith("-") else rest  # "a 4-hour window"
    word = rest.split()[0].strip(".,;:()?!") if rest.split() else ""
    if not word or word.casefold() in _NOT_UNITS or not _WORD.fullmatch(word):
        return None
    try:
        unit = parse_unit(_SPOKEN.get(word.casefold(), word), counts=False)
    except UnitError:
        return None
    return None if unit.dimensionless or not is_everyday(unit) else unit


def _unit_word_end(rest: str) -> int:
    """Where the word `_unit_after` read as the unit ends, counted from `rest`'s start."""
    match = re.match(r"-?\s*[^\s.,;:()]+", rest)
    return match.end() if match else 0


# "mend 3 pairs of shoes in an hour": a count of things done in one period, a few words on
# (GSM8K train 1630: read as a plain 3, its 35 hours of work made 105 h of shoes)
_IN_ONE = re.compile(r"(?:\s+[A-Za-z'-]+){1,4}?\s+in\s+(?:an?|one)\s+(?P<period>[a-z]+)\b")
# "2 pages of notes every day", "4 pieces of gum a day": a rate whose thing is named after
# "of" (GSM8K train 5063, test 730: read as a plain 2, the pages came out in days, and the
# packs' ceil of them was refused as a ceil of a time)
_OF_THING = re.compile(
    r"\s+[A-Za-z'-]+\s+of\s+[A-Za-z'-]+\s+(?P<per>per|an?|each|every)\s+(?P<period>[a-z]+)\b"
    r"(?!\s+(?:ago|before|after|later|earlier|time)\b)"  # "a day ago", "a second time"
)


def _listed_before(text: str, read: ReadNumber) -> bool:
    """Whether the sentence before `read` counts the things it counts.

    "The first bakery needs 2 sacks, ..., the third 12 sacks of strawberries per week"
    (GSM8K train 4616) says the rate of the whole list: a 12 / week added to a plain 2
    would be refused.
    """
    noun = re.match(r"\s+([A-Za-z'-]+)", text[read.end :])
    before = _sentence_before(text, read.start)
    return noun is not None and re.search(rf"\w\s+{re.escape(noun.group(1))}\b", before) is not None


def _names_a_period(words: list[str]) -> bool:
    unit = _unit_after(words[0]) if words else None
    return unit is not None and unit.dimensionality == {_TIME: 1}


def _as_rate(read: ReadNumber, text: str) -> ReadNumber:
    """A rate over time: 40 images per hour is 40 / h, $10 per hour 10 USD / h."""
    words = [word.strip(".,;:()?!").casefold() for word in text[read.end :].split()[:3]]
    per_at = next((i for i, word in enumerate(words[:2]) if word in _PER | _PER_OR_NOT), None)
    of_thing = _OF_THING.match(text, read.end) if per_at is None else None
    if of_thing and not _listed_before(text, read):
        words, per_at = [of_thing.group("per"), of_thing.group("period")], 0
    within = _IN_ONE.match(text, read.end) if per_at is None and read.unit is None else None
    if within and not _names_a_period(words[:1]):  # "four weeks in a month" is no rate
        words, per_at = ["in", within.group("period")], 0
    if per_at is None or per_at + 1 >= len(words):
        return read
    per = _unit_after(words[per_at + 1])
    if per is None or per.dimensionality != {_TIME: 1}:
        return read
    if read.unit is not None and read.unit.dimensionality == {_TIME: 1}:
        return read  # "7.5 hours a day" is a duration, each day
    unit = read.unit / per if read.unit is not None else 1 / per
    return ReadNumber(read.value, unit, read.start, read.end, read.unit_end)
