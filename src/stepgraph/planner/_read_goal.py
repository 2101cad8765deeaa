"""The goal's quantities, read by the engine, so that a small model only wires steps.

A model that copies numbers out of a question makes the mistakes stepgraph exists to
stop: 450 MB/s for "450 Mbps", 24 made up for "a day", three misread as 3 of something
else. Here every number the goal states (digits, percentages, clock ranges, money, number
words) becomes a named input whose value carries the unit the words say and whose quote
is the goal's own words, so each passes grounding by construction. The model is shown
them as ``${inputs.name}``; the plan gets those it refers to (`bind_read_inputs`).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import GroundedInput, StepGraph
from stepgraph.references import find_references
from stepgraph.task import parse_input
from stepgraph.units import dimension_name, format_value, parse_unit, quantity
from stepgraph.verifiers import (
    ClockRange,
    ReadNumber,
    clock_ranges,
    is_percent,
    lone_times,
    read_numbers,
    word_numbers,
    worded_fraction,
)
from stepgraph.verifiers._everyday import is_everyday

_NAME_WORD = re.compile(r"[A-Za-z][A-Za-z_]{1,23}")
_SKIP = {
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "per",
    "each", "every", "is", "are", "was", "were", "more", "less", "than", "as", "many", "much",
    "times", "that", "this", "from", "into", "over", "how", "what", "his", "her", "their",
    "st", "nd", "rd", "th",  # an ordinal's ending: "the 3rd floor" names the floor
    # pronouns, conjunctions and verbs name nothing: "45 kg while the boys" is no `while`,
    # "4 pounds and he sells" no `he`
    "he", "she", "it", "its", "they", "we", "you", "him", "them", "our", "your", "while", "so",
    "but", "if", "when", "then", "until", "because", "though", "although", "also", "still",
    "these", "those", "be", "been", "get", "got", "gets", "had", "has", "have", "became",
    # "send 4 TB across a link": the data is no `across`
    "across", "through", "via",
}  # fmt: skip
_COMPARATIVES = {"less", "more", "fewer"}
_BETWEEN = {"more", "additional", "extra", "fewer", "less", "other"}  # "2 more hours"
_DOLLAR = parse_unit("USD")
_MULTIPLIERS = {
    "twice",
    "double",
    "triple",
    "thrice",
    "doubled",
    "tripled",
    "quadruple",
    "quadrupled",
}
_SHARE_OF = re.compile(r"\s+of\b", re.IGNORECASE)  # right after a percentage
_QUOTE_WORDS = 4  # words after the number kept in the quote: context for the model


def read_inputs(goal: str, *, numbered: bool = False) -> dict[str, GroundedInput]:
    """One named, quoted input per quantity the goal states, in the goal's order.

    `numbered`: a count or a sum of money is named with its number as well (``eggs_16``,
    ``usd_10``), so a model that thinks in the goal's numbers finds the name of each, and
    a number word takes the unit after it as digits do ("Two years after": 2 years, as
    "15 years ago" is).
    """
    # Copies: the planner asks once per prompt and per attempt; the reading is done once.
    return {name: item.model_copy() for name, item in _read(goal, numbered)}


@lru_cache(maxsize=32)
def _read(goal: str, numbered: bool = False) -> tuple[tuple[str, GroundedInput], ...]:
    inputs: dict[str, GroundedInput] = {}
    for number in read_numbers(goal, worded_units=numbered):
        value = _value_text(number.value, number.unit)
        quote = _quote(goal, number.start, number.end)
        name = _name(goal, number.start, number.end, number.unit)
        if numbered:
            name = _numbered(name, goal[number.start : number.end], number.value, number.unit)
            if is_percent(goal[number.start : number.end]) and _SHARE_OF.match(goal, number.end):
                name = f"{name}_share"  # "30% of the tickets" is no count of tickets
            name = _lettered(name, inputs)  # usd_10_2 would read as 10.2
        else:
            name = unique_name(name, inputs)
        inputs[name] = GroundedInput(value=value, quote=quote)
    return tuple(inputs.items())


def goal_shape(goal: str) -> str:
    """The goal's words with each stated quantity replaced by its kind: the question it asks.

    Two goals of one shape ask the same question of other quantities ("2.5 TB over 450
    Mbps" and "4 TB over 1 Gbps"): a quantity with a unit keeps only its dimension (its
    unit may change within it); a count, a share, money and a clock range keep their kind.
    Any other word that differs ("90% utilisation", "90% loss") makes another shape.
    """
    parts, at = [], 0
    for number in read_numbers(goal):
        parts += [goal[at : number.start], _kind_token(goal, number)]
        at = max(number.end, number.unit_end)
    parts.append(goal[at:])
    return " ".join("".join(parts).casefold().split())


def _kind_token(goal: str, number: ReadNumber) -> str:
    written = goal[number.start : number.end]
    if is_percent(written):
        return "<share>"
    if written.startswith("$"):
        return "<money>"
    if clock_ranges(written):
        return "<clock>"
    if number.unit is not None and number.unit_end > 0:
        return f"<{dimension_name(quantity(1, number.unit))}>"
    return "<number>"


def bind_read_inputs(plan: StepGraph, read: Mapping[str, GroundedInput]) -> StepGraph:
    """The plan with the read inputs it refers to (and did not declare itself) added."""
    referred = {
        ref.path[0] for ref in find_references(_texts(plan)) if ref.step == "inputs" and ref.path
    }
    missing = {
        name: item
        for name, item in read.items()
        if name in referred and name not in plan.inputs and name not in plan.constants
    }
    if not missing:
        return plan
    return plan.model_copy(update={"inputs": {**plan.inputs, **missing}})


def _texts(plan: StepGraph) -> list[object]:
    found: list[object] = [check.expression for check in plan.checks]
    found += [plan.answer] if plan.answer else []
    return found + [step.args for step in plan.steps]


def _value_text(number: float, unit: pint.Unit | None) -> str:
    if unit is None:
        return f"{number:.12g}"
    shown = format_value(quantity(number, unit))
    magnitude, _, unit_text = shown.partition(" ")
    try:
        exact = math.isclose(float(magnitude.replace(",", "")), number, rel_tol=1e-12)
    except ValueError:
        exact = True
    # "1/3 cup" is not 0.333333 cup: 3 cups of it were 9.00001 scoops (GSM8K train 7230)
    return shown if exact else f"{number:.12g} {unit_text}"


def _quote(goal: str, start: int, end: int) -> str:
    """The number and a few words after it, as the goal writes them.

    The quote stops at the sentence's end and before the next number, so each quote
    states one quantity.
    """
    written = goal[start:end]
    if written[-1] in ",.;":  # "she is 60, calculate": the clause ends with the number
        return written.rstrip(",.;")
    rest = goal[end:]
    stop = len(rest)
    for index, match in enumerate(re.finditer(r"\S+", rest)):
        word = match.group(0)
        if index == _QUOTE_WORDS or re.search(r"\d|\$", word) or word_numbers(word):
            stop = match.start()
            break
        sentence_end = re.search(r"[.?!;,](\s|$)", word + " ")
        if sentence_end is not None:
            stop = match.start() + sentence_end.start()
            break
    return (written + rest[:stop]).strip().rstrip(",")


def _name(goal: str, start: int, end: int, unit: pint.Unit | None) -> str:
    """A telling word of the quote after the number ("16 eggs" -> eggs), else the unit's kind."""
    if goal[start:end].casefold() in _MULTIPLIERS:  # "double what Eduardo teaches": no eduardo
        return goal[start:end].casefold()
    words: list[str] = _NAME_WORD.findall(_quote(goal, start, end)[end - start :])
    if unit is not None and len(words) > 1 and words[0].casefold() in _BETWEEN:
        words = words[1:]  # "7 additional minutes": the unit comes next
    if unit is not None and words and _is_unit(words[0]):
        words = words[1:]  # the unit's own word ("TB", "hours"), not "images" in a rate
    share = is_percent(goal[start:end]) or worded_fraction(goal[start:end]) is not None
    reach = 4 if share else 2  # "12% of the traffic lost"
    folded = [w.casefold() for w in words[:reach]]
    if "than" in folded:  # "20% less than on Tuesday": Tuesday is the other quantity
        folded = folded[: folded.index("than")]
    after = [w for w in folded if w not in _SKIP]
    if after and folded[0] == "times":  # "three times Mark's age" multiplies; it is not Mark's
        return "times"
    if after:
        return after[0]
    compared = [w for w in folded if w in _COMPARATIVES]
    if share and compared:  # `less`, not a share named after what it is compared with
        return compared[0]
    written = goal[start:end]
    if written.isalpha():  # "five away": the number word names itself
        return written.casefold()
    if unit is not None:
        return _KIND_NAMES.get(dimension_name(quantity(1, unit)), "amount")
    named = re.sub(r"\W", "_", written.rstrip(",.")).strip("_")
    return named.casefold() if named[:1].isalpha() else "n" + named  # "thirty percent"


def _numbered(name: str, written: str, value: float, unit: pint.Unit | None) -> str:
    """A count's or money's name with its number: words next to a number often mislead.

    "a hat for $10 and a pencil for $2" named the $10 `pencil`; `usd_10` cannot. A
    quantity with another unit, a share and a clock range keep their names (`data`,
    `window`): their units tell them apart.
    """
    money = written.startswith("$") or unit == _DOLLAR  # "cost 13.00" beside "$10.00"
    if is_percent(written) or ":" in written or (unit is not None and not money):
        return name
    if written.isalpha() and name == written.casefold():  # "four": the word is the number
        return name
    digits = f"{value:.12g}".replace(".", "_").replace("-", "minus_")
    if "/" in written and " " not in written:  # "3/5": its value 0.6 named as written
        digits = written.replace("/", "_over_")
    if (parts := worded_fraction(written)) is not None:  # "two-thirds" as 2/3 is
        digits = "{}_over_{}".format(*parts)
    if re.fullmatch(r"n[\d_]+", name):  # no telling word: the number alone
        return f"n{digits}"
    return f"{'usd' if money else name}_{digits}"


def _lettered(name: str, taken: Collection[str]) -> str:
    """`name`, or `name_b`, `name_c`, ... : the first that is not taken."""
    for suffix in ["", *(f"_{letter}" for letter in "bcdefghijklmnopqrstuvwxyz")]:
        if f"{name}{suffix}" not in taken:
            return f"{name}{suffix}"
    return unique_name(name, taken)


def _is_unit(word: str) -> bool:
    try:
        parse_unit(word, counts=False)
    except StepgraphError:
        return False
    return True


_KIND_NAMES = {
    "[information]": "data",
    "[information] / [time]": "rate",
    "[time]": "duration",
    "[length]": "distance",
    "[mass]": "weight",
    "[length] ** 3": "volume",
    "[currency_usd]": "dollars",
}


def unique_name(name: str, taken: Collection[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first that is not taken."""
    if name not in taken:
        return name
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


# The unit a question asks its answer in: "How many GB ...?", "... in MB/s?", "How many
# gigabytes (GB) ...". Only in the question itself (the last sentence with a "?").
_ASKED = (
    re.compile(r"\bhow\s+many\s+(?P<unit>[A-Za-z][A-Za-z/]*)", re.IGNORECASE),
    re.compile(r"\bin\s+(?P<unit>[A-Za-z][A-Za-z/]*)\s*\?"),
)


def the_question(goal: str) -> str | None:
    """The goal's question: its last sentence that ends with "?"; None where it asks none.

    Read back from the last "?" to the end of the sentence before, a "." between digits
    ("4.7 GB") ending none: one pass, where a pattern tried at each place took minutes on a
    goal of "1.1.1. ..." written against it.
    """
    end = goal.rfind("?")
    if end < 0:
        return None
    start = end
    while start > 0 and not _ends_sentence(goal, start - 1):
        start -= 1
    return goal[start : end + 1]


def _ends_sentence(text: str, at: int) -> bool:
    if text[at] in "?!":
        return True
    if text[at] != ".":
        return False
    between_digits = (
        0 < at < len(text) - 1 and text[at - 1].isdecimal() and text[at + 1].isdecimal()
    )
    return not between_digits


def asked_unit(goal: str) -> pint.Unit | None:
    """The physical unit the goal's question wants its answer in; None if it names none.

    A count ("How many nights") is no such unit: a unit of measure or money, so a value can
    be shown and compared in it ("How many GB arrive" of a value in Mbit·h/s).
    """
    text = the_question(goal) or goal
    found: list[pint.Unit] = []
    for pattern in _ASKED:
        for match in pattern.finditer(text):
            try:
                unit = parse_unit(match.group("unit"), counts=False)
            except StepgraphError:
                continue
            if not unit.dimensionless and is_everyday(unit) and unit not in found:
                found.append(unit)
    return found[0] if len(found) == 1 else None


# "What time does it arrive?", "what is the latest time she can start", "what is the arrival
# time", "at what time will it be full": the answer is a time of day, which no quantity here
# is (a plan's 795 min or 13.25 h reads as another time). Not "what's the total time taken"
# or "the travel time", durations.
_TIME_OF_DAY_ASKED = re.compile(
    r"\b(?:what|which)(?:\s+(?:is|was|will\s+be)|'s)?(?:\s+the)?(?:\s+(?:latest|earliest|"
    r"arrival|departure|finish(?:ing)?|end(?:ing)?|start(?:ing)?|closing|opening|landing))?"
    r"\s+time\b"
    r"(?!\s+(?:period|span|frame|interval|difference|zone)s?\b)",
    re.IGNORECASE,
)


# "When does it arrive?" asks for a time of day where the goal states one to start from
# ("leaves at 10:40"); "When did they meet?" of years asks for a year.
_WHEN = re.compile(r"\bwhen\s+(?:will|does|did|do|is|was|should|would|can|could)\b", re.I)


def asked_time_of_day(goal: str) -> str | None:
    """The goal's words that ask for a time of day ("What time"), or None."""
    if match := _TIME_OF_DAY_ASKED.search(goal):
        return match.group(0)
    question = the_question(goal)
    when = _WHEN.search(question) if question else None
    return when.group(0) if when and lone_times(goal) else None


_HOW_MANY = re.compile(r"\bhow many (?P<noun>[a-z]+)\b", re.IGNORECASE)
# Words that say the things are needed whole: "needed", "must", "to buy", "fit"
_NEEDED = re.compile(
    r"\b(?:needs?|needed|require[sd]?|required|must|necessary|buy|rent|hire|fit|use)\b",
    re.IGNORECASE,
)


def asked_count(goal: str) -> str | None:
    """The things the goal's question counts where it needs them whole ("printers"), or None.

    None where the question counts a unit of measure ("how many hours", "how many cups"):
    those are quantities, and a fraction of one is an answer.
    """
    question = the_question(goal)
    if question is None or not _NEEDED.search(question):
        return None
    match = _HOW_MANY.search(question)
    if match is None:
        return None
    noun = match.group("noun")
    try:
        unit = parse_unit(noun, counts=False)
    except StepgraphError:
        return noun
    return noun if unit.dimensionless else None


def read_values(read: Mapping[str, GroundedInput]) -> dict[str, Any]:
    """Each read input's value; one that does not parse is refused with the plan's inputs."""
    values = {}
    for name, item in read.items():
        with contextlib.suppress(StepgraphError):
            values[name] = parse_input(item.value)
    return values


def numbers_of(read: Mapping[str, GroundedInput]) -> dict[str, float]:
    """Each read input's number as the goal states it: 10 for "$10", 6 for "00:00 to 06:00".

    A quantity the goal states twice ("two cellphones ... buying two units") is the first
    input's: a literal 2 is that input, where two names for one number left it unbound and
    refused (GSM8K train 2986). Equal numbers in other units stay apart (5 m, 5 friends).
    """
    numbers: dict[str, float] = {}
    seen: set[tuple[float, str]] = set()
    for name, value in read_values(read).items():
        magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
        if isinstance(magnitude, int | float) and not isinstance(magnitude, bool):
            stated = (float(magnitude), str(getattr(value, "units", "")))
            if stated not in seen:
                numbers[name] = float(magnitude)
                seen.add(stated)
    return numbers


def converted_numbers_of(read: Mapping[str, GroundedInput]) -> dict[str, tuple[float, ...]]:
    """Each read quantity's number in the goal's other units of its kind ("50 cents": 0.5).

    A program writes "5 items that cost 50 cents each" in the dollars it sums as ``5 * 0.5``
    (GSM8K train 6068): the 0.5 is the 50 cents converted by hand, not the story's "half".
    Only units the goal itself states, and only numbers that differ from the stated one.
    """
    values = {
        name: value
        for name, value in read_values(read).items()
        if isinstance(value, pint.Quantity) and not value.dimensionless
    }
    units = {str(value.units): value.units for value in values.values()}
    converted: dict[str, tuple[float, ...]] = {}
    for name, value in values.items():
        numbers = []
        for unit in units.values():
            if unit == value.units or value.dimensionality != (1 * unit).dimensionality:
                continue
            number = float(value.to(unit).magnitude)
            if not math.isclose(number, float(value.magnitude), rel_tol=1e-9):
                numbers.append(number)
        if numbers:
            converted[name] = tuple(numbers)
    return converted


def shares_of(read: Mapping[str, GroundedInput]) -> list[str]:
    """The read inputs that are plain shares ("half", "1/6 of", "30%"), not money or measures."""
    return [
        name
        for name, value in read_values(read).items()
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1
    ]


def measured_of(read: Mapping[str, GroundedInput]) -> list[str]:
    """The read inputs that have a unit ("1 Gbps", "6 h"), not counts or shares."""
    return [name for name, value in read_values(read).items() if isinstance(value, pint.Quantity)]


def clocks_of(read: Mapping[str, GroundedInput]) -> dict[str, ClockRange]:
    """The read inputs that are clock ranges ("1 to 5 PM"), each with its two times."""
    found = {}
    for name, item in read.items():
        ranges = clock_ranges(item.quote)
        if ranges and ranges[0].start == 0:  # the quote opens with the range it reads
            found[name] = ranges[0]
    return found
