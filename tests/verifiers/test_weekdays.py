"""A range of weekdays in a goal is the number of days it counts (GSM8K train 1630)."""

import pytest

from stepgraph.planner._read_goal import read_inputs
from stepgraph.verifiers._numbers import goal_numbers
from stepgraph.verifiers._weekdays import weekday_ranges


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("From Monday to Thursday, the cobbler works", 4),
        ("open Monday through Friday", 5),
        ("every day Monday – Friday", 5),
        ("on Mondays-Saturdays", 6),
        ("from Friday to Monday", 4),  # past Sunday, on from Monday
        ("Sunday to Saturday", 7),
        ("from wednesday until sunday", 5),
    ],
)
def test_a_range_of_weekdays_counts_both_ends(text, days):
    (found,) = weekday_ranges(text)
    assert found.days == days


@pytest.mark.parametrize(
    "text",
    ["on Mondays and Fridays", "from Monday to Monday", "Monday, then Friday", "a Friday night"],
)
def test_two_days_named_are_no_range(text):
    assert weekday_ranges(text) == []


def test_the_goal_reads_a_range_of_weekdays_as_days_and_never_asks_for_it():
    goal = (
        "A cobbler can mend 3 pairs of shoes in an hour. From Monday to Thursday, the cobbler "
        "works for 8 hours each day, and on Friday, he only works from 8am to 11am. How many "
        "pairs of shoes can the cobbler mend in a week?"
    )
    read = {grounded.quote: grounded.value for grounded in read_inputs(goal).values()}
    assert str(read["Monday to Thursday"]) == "4 d"
    (days,) = [number for number in goal_numbers(goal) if number.days is not None]
    assert days.value == 4 and not days.required  # a story may name days it counts nothing by
