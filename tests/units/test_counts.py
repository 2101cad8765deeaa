"""Count nouns are units of their own: apples add to apples, never to people."""

import pytest

from stepgraph import PlanValidationError, RunStatus, StepGraph
from stepgraph.exceptions import CalculationError, UnitError
from stepgraph.executor import validate_plan
from stepgraph.tools import default_registry
from stepgraph.tools.expression import evaluate
from stepgraph.units import format_value, parse_quantity, parse_unit
from tests.conftest import make_task


def test_apples_add_up_to_apples(run_task):
    task = make_task(
        [
            {
                "id": "left",
                "tool": "calculate",
                "args": {"expression": "23 apples - 17 apples + 6 apples"},
            }
        ],
        answer="${left} left",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED
    assert format_value(result.values["left"]) == "12 apples"
    assert result.answer == "12 apples left"


def test_apples_and_people_do_not_add():
    with pytest.raises(CalculationError, match="units do not match.*apples.*people"):
        evaluate("3 apples + 2 people")


def test_singular_and_plural_are_one_unit():
    assert evaluate("1 crate + 2 crates") == parse_quantity("3 crates")
    assert evaluate("1 person + 2 people") == parse_quantity("3 people")
    assert evaluate("ceil(1000 apples / (24 apples))") == 42  # apples per apple: a plain number


def test_a_count_noun_needs_its_number():
    """A bare word is a step written without ${...} far more often than a count."""
    with pytest.raises(CalculationError, match=r"write \$\{total\}"):
        evaluate("total / rate")


@pytest.mark.parametrize(("text", "suggestion"), [("Gbs", "'Gbps'"), ("Mbsp", "'Mbps'")])
def test_a_misspelt_unit_still_errs_with_a_suggestion(text, suggestion):
    with pytest.raises(UnitError, match=f"unknown unit '{text}' \\(did you mean {suggestion}"):
        parse_unit(text)
    with pytest.raises(CalculationError, match=suggestion):
        evaluate(f"23 {text}")


def test_a_count_can_be_an_expect_unit_and_stays_a_number_in_checks(run_task):
    task = make_task(
        [
            {"id": "per_night", "tool": "calculate", "args": {"expression": "900 GB"}},
            {
                "id": "nights",
                "tool": "calculate",
                "args": {"expression": "ceil(2500 GB / ${per_night})"},
                "expect_unit": "nights",
            },
        ],
        checks=[{"expression": "${nights} * ${per_night} >= 2500 GB"}],
        answer="${nights} nights",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED, [v.description for v in result.verdicts]
    assert result.values["nights"] == 3 and result.answer == "3 nights"


def test_a_count_that_is_not_whole_is_not_verified(run_task):
    """A real model answered 'tables of 8 for 230 people' with 230 / 8 = 28.75 tables."""
    task = make_task(
        [
            {
                "id": "tables",
                "tool": "calculate",
                "args": {"expression": "230 / 8"},
                "expect_unit": "tables",
            }
        ],
        answer="${tables} tables",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.UNVERIFIED
    [unit] = [v for v in result.verdicts if v.kind == "unit"]
    assert "28.75 is not a whole number of tables" in unit.description


def test_people_in_a_plan_that_wants_nights_are_refused_before_running():
    plan = StepGraph.model_validate(
        {
            "steps": [
                {
                    "id": "n",
                    "tool": "calculate",
                    "args": {"expression": "3 people"},
                    "expect_unit": "nights",
                }
            ]
        }
    )
    with pytest.raises(PlanValidationError, match="expect_unit 'nights'"):
        validate_plan(plan, default_registry(), {})
