"""A conversion done by hand with a named constant: converted by the units instead.

A new user's question (2026-12-06): a program's ``km_per_mile = 1.609344`` left the goal's
26.2 miles in miles, "42.1648 mi" for "How many kilometres ...?", and every check passed.
"""

import pytest

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.journal import read_journal
from stepgraph.planner import PlannerSettings
from stepgraph.testing import ScriptedLLM

MARATHON = "How many kilometres is a 26.2 mile marathon?"


def run(goal, answer, tmp_path, *, program_only=False):
    """As `--preset small-model` plans (programs bind their literals to the goal's read
    quantities), without the cross-check."""
    settings = PlannerSettings(preset="small-model").planner_arguments()
    llm = ScriptedLLM([answer])
    planner = Planner(llm, **{**settings, "program_only": program_only}, plan_retries=0)
    path = tmp_path / "run.jsonl"
    result = Engine(planner=planner).run(Task(name="g", goal=goal), journal=path)
    return result, read_journal(path)


def _program(*lines):
    return "```python\n" + "\n".join(lines) + "\n```"


@pytest.mark.parametrize(
    ("goal", "program", "unit", "expected"),
    [
        (
            MARATHON,
            _program(
                "miles = 26.2",
                "km_per_mile = 1.609344  # one mile is 1.609344 kilometres",
                "km = miles * km_per_mile",
                "print(km)",
            ),
            "km",
            42.1648128,
        ),
        (
            "How many grams is 8 ounces of cheese?",
            _program(
                "ounces = 8",
                "grams_per_ounce = 28.35  # one ounce is about 28.35 grams",
                "grams = ounces * grams_per_ounce",
                "print(grams)",
            ),
            "g",
            226.796185,
        ),
        (
            "How many miles is a 10 km run?",
            _program(
                "km = 10",
                "km_per_mile = 1.609344  # kilometres in a mile",
                "miles = km / km_per_mile",
                "print(miles)",
            ),
            "mi",
            6.21371192,
        ),
    ],
)
def test_a_program_s_named_factor_converts_by_the_units(goal, program, unit, expected, tmp_path):
    result, journal = run(goal, program, tmp_path, program_only=True)
    assert result.status is RunStatus.VERIFIED, result.answer
    [value] = [v for v in result.values.values() if getattr(v, "units", None) is not None][-1:]
    assert str(value.units) == unit  # not the goal's miles or ounces
    assert value.magnitude == pytest.approx(expected)
    [proposed] = journal.of_kind("plan.proposed")
    assert any("as its name and why say; the units convert it" in r for r in proposed.repairs)
    assert any(v.kind == "reverse" and "converted back" in v.description for v in result.verdicts)


def test_a_declared_unit_and_a_named_factor_convert_once(tmp_path):
    """The engine's own advice ("declare it under constants") used to convert twice: 67.86 km."""
    lines = (
        "km_per_mile = 1.609344  # a mile is 1.609344 km\n"
        'km: "km" = marathon * km_per_mile\n'
        'answer = f"{km} km"'
    )
    result, _ = run(MARATHON, lines, tmp_path)
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.values["km"].magnitude == pytest.approx(42.1648128)
    assert result.answer == "42.1648 km km" or result.answer.startswith("42.1648 km")


@pytest.mark.parametrize(
    "constant",
    [
        # a price per mile: no second unit of length to convert into
        "rate_per_mile = 1.609344  # dollars per mile",
        # the units named, but the number is no ratio of them (1.5 km a mile)
        "km_per_mile = 1.5  # one mile is 1.5 km",
        # an attack on the repair: a price whose number is a mile in km, the why naming
        # another unit of length beside the money; a conversion would drop the dollars
        "price_per_mile = 1.609344  # dollars per mile, as the kilometre rate says",
    ],
)
def test_a_constant_that_is_no_ratio_of_its_units_stays_a_number(constant, tmp_path):
    name = constant.split(" ")[0]
    program = _program("miles = 26.2", constant, f"total = miles * {name}", "print(total)")
    result, journal = run(MARATHON, program, tmp_path, program_only=True)
    [proposed] = journal.of_kind("plan.proposed")
    assert not any("the units convert it" in r for r in proposed.repairs)
    assert result.values["total"].magnitude == pytest.approx(26.2 * float(constant.split()[2]))


def test_a_count_divided_by_minutes_in_an_hour_is_left_alone(tmp_path):
    """No unit on the count: 60 minutes an hour names two units, but nothing is in them."""
    goal = "A class has 3 lessons of 40 minutes each. How many hours is that?"
    program = _program(
        "lessons = 3",
        "minutes = 40",
        "minutes_per_hour = 60  # 60 minutes in an hour",
        "total = lessons * minutes",
        "hours = total / minutes_per_hour",
        "print(hours)",
    )
    result, journal = run(goal, program, tmp_path, program_only=True)
    [proposed] = journal.of_kind("plan.proposed")
    assert not any("the units convert it" in r for r in proposed.repairs)
