"""Clock ranges as people write them, a.m. and p.m. included, read as the hours between.

GSM8K writes "from 1:00 PM to 5:00 PM", "11 am - 1 pm", "between 8 a.m. and 11 a.m.":
before, none of them was read (and "8 a.m." was 8 metre-years), so a plan had nothing to
multiply a rate by, and a program's ``17 - 13`` was refused as numbers the goal never
states.
"""

from pathlib import Path

import pytest

from stepgraph.planner._read_goal import clocks_of, goal_shape, read_inputs
from stepgraph.verifiers import clock_ranges
from tests.planner.test_recorded_programs import _run


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("only from 00:00 to 06:00", 6),
        ("from 22:00 to 05:00 each night", 7),
        ("burning from 1:00 PM to 5:00 PM", 4),
        ("He is sailing from 1 to 4 PM.", 3),
        ("she works between 8 a.m. and 11 a.m. and", 3),
        ("open from 10 am until 10 pm", 12),
        ("he only works from 8am to 11am.", 3),
        ("At peak hours, 11 am - 1 pm", 2),
        ("if you eat between 2-4 pm", 2),
        ("From 12 noon to 3 pm, save 20%", 3),
        ("a show from 9 pm to midnight", 3),
        ("stapling from 8:00 AM until 11:00 PM", 15),
        ("the cafe opens from 11 to 2 pm", 3),  # 11 in the morning, not 11 at night
        ("the night shift runs from 10 p.m. till 6 a.m.", 8),
        ("sleepwalking from 2:15 to 2:38 am", 23 / 60),
    ],
)
def test_a_clock_range_is_the_hours_between_its_two_times(text: str, hours: float) -> None:
    (found,) = clock_ranges(text)
    assert found.hours == pytest.approx(hours)
    # the read input's quote is the range again, so a program's `end - start` finds it
    (clock,) = clocks_of(read_inputs(f"{text}. How many?", numbered=True)).values()
    assert clock.hours == pytest.approx(hours)


@pytest.mark.parametrize(
    "text",
    [
        "at 3 pm and 5 pm the bus comes",  # two times, not the hours between them
        "it takes 2 to 3 minutes",
        "from 9 am to 5 the shop is open",  # what the 5 means is a guess
        "open 4 pm to 10p every day",  # a typo, not a time
        "the ratio is 10:45 to 7:90",  # no minute 90
        "from 14 to 16 PM",  # no 14 PM
    ],
)
def test_what_is_no_clock_range_is_not_read_as_one(text: str) -> None:
    assert clock_ranges(text) == []


def test_a_read_range_is_an_input_of_hours_quoting_the_goal() -> None:
    read = read_inputs("A printer prints 40 pages every hour from 9 AM to 1 PM.", numbered=True)
    (duration,) = [item for item in read.values() if "AM" in item.quote]
    assert duration.value == "4 h"
    assert duration.quote.startswith("9 AM to 1 PM")
    # with a duration stated, "40 pages every hour" is a rate to multiply it by
    assert [item.value for item in read.values()] == ["40 1/h", "4 h"]


def test_a_time_of_day_alone_is_no_unit_of_measure() -> None:
    read = read_inputs("Kim goes to sleep at 10 p.m. and wakes up at 6 a.m.", numbered=True)
    # "6 a.m" was 6 metre-years (m·a): a unit no plan could use it in
    assert [item.value for item in read.values()] == ["10", "6"]


def test_two_ranges_of_other_times_ask_the_same_question() -> None:
    first = goal_shape("How many pages does it print from 9 AM to 1 PM?")
    assert first == goal_shape("How many pages does it print from 22:00 to 02:00?")
    assert first != goal_shape("How many pages does it print in 4 hours?")


QUESTION = "A printer prints 40 pages every hour. How many pages does it print from 9 AM to 1 PM?"


@pytest.mark.parametrize(
    "program",
    [
        "pages = 40 * (13 - 9)\nprint(pages)",  # the 24-hour clock
        "pages = 40 * (1 - 9 + 12)\nprint(pages)",  # by hand, refused below: the 12
        "rate = 40\nstart = 9\nend = 13\nhours = end - start\nprint(rate * hours)",
        "start = 9  # 9 AM\nend = 13  # 1 PM on a 24-hour clock\nprint(40 * (end - start))",
    ],
    ids=["inline", "twelve-by-hand", "named-ends", "ends-with-why"],
)
def test_a_program_taking_the_hours_from_the_two_times_is_read_as_the_range(
    program: str, tmp_path: Path
) -> None:
    case = {"question": QUESTION, "program": program, "expected": 160.0, "python_value": 160.0}
    outcome = _run(case, tmp_path)
    if "12" in program:  # 12 is a number the goal never writes: still refused
        assert outcome.error_kind == "invalid"
        return
    assert outcome.verified and outcome.correct, outcome.error
    assert str(outcome.answer) in ("160", "160 pages")


def test_a_program_that_ignores_the_range_is_refused(tmp_path: Path) -> None:
    # the 1 of "1 PM" taken for the hours: a time of day, no number of the goal, and the
    # range left unused, which coverage refuses
    case = {"question": QUESTION, "program": "print(40 * 1)", "expected": 160.0}
    outcome = _run({**case, "python_value": 40.0}, tmp_path)
    assert not outcome.verified
    assert "9 AM to 1 PM" in (outcome.error or "")


@pytest.mark.parametrize(("hours", "python"), [("9 - 13", -4), ("1 - 9", -8)])
def test_two_times_whose_difference_is_not_the_range_are_not_read_as_it(
    hours: str, python: float, tmp_path: Path
) -> None:
    # 9 - 13 and 1 - 9 (for "9 AM to 1 PM") are -4 and -8 to Python: no reading may turn
    # them into the goal's 4 hours, and an answer of -160 or -320 pages is refused
    program = f"print(40 * ({hours}))"
    case = {"question": QUESTION, "program": program, "expected": 160.0}
    outcome = _run({**case, "python_value": 40.0 * python}, tmp_path)
    assert not outcome.verified
    assert "9 AM to 1 PM" in (outcome.error or "")


DISCOUNT = (
    "Lunch costs $12 and a drink $4. From 11 am to 2 pm, the drink is half price. How much "
    "does lunch with a drink cost at noon?"
)


def test_a_range_that_only_says_when_a_price_holds_need_not_be_used(tmp_path: Path) -> None:
    # no period, rate or time anywhere else: the hours have nothing to multiply
    program = "lunch = 12\ndrink = 4\nprint(lunch + drink * 0.5)"
    case = {"question": DISCOUNT, "program": program, "expected": 14.0, "python_value": 14.0}
    outcome = _run(case, tmp_path)
    assert outcome.verified and outcome.correct, outcome.error


def test_a_range_beside_a_rate_in_time_must_still_be_used(tmp_path: Path) -> None:
    goal = DISCOUNT.replace("a drink $4", "a drink $4, and lunch is served 20 plates an hour")
    program = "lunch = 12\ndrink = 4\nprint(lunch + drink * 0.5)"
    case = {"question": goal, "program": program, "expected": 14.0, "python_value": 14.0}
    outcome = _run(case, tmp_path)
    assert not outcome.verified
    assert "11 am to 2 pm" in (outcome.error or "")


def test_an_end_of_the_range_is_no_number_to_compute_with(tmp_path: Path) -> None:
    # attack: the range named in a check, so coverage passes, and its 05:00 taken as the
    # night's hours (5, not 7): the 5 is a time of day, no number of the goal, refused
    goal = "A printer prints 40 pages every hour from 22:00 to 05:00. How many pages a night?"
    program = "hours = 5\nassert duration > 0, 'a night'\nprint(40 * hours)"
    case = {"question": goal, "program": program, "expected": 280.0, "python_value": 200.0}
    outcome = _run(case, tmp_path)
    assert not outcome.verified
    assert "5 is not a number of the goal" in (outcome.error or "")
