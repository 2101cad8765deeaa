"""`stepgraph eval`: suites load, outcomes are measured from journals, correctness is strict."""

import json

import pytest
import yaml

from stepgraph.cli import ExitCode
from stepgraph.evaluation import load_suite, parse_expected
from stepgraph.evaluation._correct import text_matches, value_matches
from stepgraph.exceptions import TaskFileError, UnitError
from stepgraph.units import parse_quantity, parse_unit, quantity
from tests.conftest import EXAMPLES, flat, invoke

WORKERS = "3 workers each process 40 items per hour for 7.5 hours. How many items in total?"
TINY = {
    "name": "tiny",
    "goals": [
        {
            "id": "right",
            "category": "work",
            "goal": WORKERS,
            "expect": {"value": 900, "unit": "items"},
        },
        # internally consistent but wrong: the plan adds the hours instead of multiplying
        {
            "id": "wrong",
            "category": "work",
            "goal": WORKERS,
            "expect": {"value": 900, "unit": "items"},
        },
        {
            "id": "unplanned",
            "category": "units",
            "goal": "450 Mbps in MB/s?",
            "expect": "56.25 MB/s",
        },
    ],
}
RESPONSES = [
    '{"steps": [{"id": "items", "tool": "calculate", "args": {"expression": "3 * 40 * 7.5"}}]}',
    "They process 900 items in total.",
    '{"steps": [{"id": "items", "tool": "calculate", "args": {"expression": "3 * 40 + 7.5"}}]}',
    "They process 127.5 items in total.",
    "no plan here",  # three attempts without a plan: the planner gives up
    "still none",
    "sorry",
]


@pytest.fixture
def tiny(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(TINY))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"scripted": True, "responses": RESPONSES}))
    return suite, script, tmp_path / "journals"


def _eval_json(suite, script, journals):
    result = invoke("eval", suite, "--scripted", script, "--journal-dir", journals, "--json")
    assert result.exit_code == ExitCode.OK, result.output
    return json.loads(result.stdout)


def test_right_wrong_and_unplanned_goals_are_told_apart(tiny):
    """A correct plan is verified and correct; a consistent wrong one verified but wrong."""
    document = _eval_json(*tiny)
    right, wrong, unplanned = document["goals"]
    assert (right["verified"], right["correct"], right["first_plan_valid"]) == (True, True, True)
    assert right["matched"] == "step items = 900"
    assert (wrong["verified"], wrong["correct"]) == (True, False)
    assert (unplanned["valid"], unplanned["first_plan_valid"]) == (False, False)
    assert (unplanned["verified"], unplanned["correct"]) == (False, False)
    assert (unplanned["error_kind"], unplanned["exit_code"]) == ("invalid", ExitCode.INVALID)
    assert (unplanned["model_calls"], unplanned["plan_attempts"]) == (3, 3)
    assert document["headline"] == {"verified_wrong": 1, "verified_correct_rate": 0.3333}


def test_the_json_document_holds_the_totals_and_one_journal_per_goal(tiny):
    _, _, journals = tiny
    document = _eval_json(*tiny)
    totals = document["totals"]
    assert totals["runs"] == 3 and totals["verified"] == 2 and totals["correct"] == 1
    assert totals["verified_wrong"] == 1 and totals["errors"] == {"invalid": 1}
    assert totals["model_calls"] == 7 and document["categories"]["work"]["runs"] == 2
    assert sorted(p.name for p in journals.iterdir()) == [
        "right-run1.jsonl",
        "unplanned-run1.jsonl",
        "wrong-run1.jsonl",
    ]


def test_the_table_prints_the_two_headline_figures(tiny):
    suite, script, journals = tiny
    result = invoke("eval", suite, "--scripted", script, "--journal-dir", journals)
    assert result.exit_code == ExitCode.OK
    output = flat(result.output)
    assert "wrong answers reported as verified: 1 (must be 0)" in output
    assert "verified-correct rate: 33.3% (1 of 3)" in output


def test_goal_and_limit_choose_goals_and_an_unknown_goal_is_refused(tiny):
    suite, script, journals = tiny
    result = invoke("eval", suite, "--scripted", script, "--goal", "right", "--json",
                    "--journal-dir", journals)  # fmt: skip
    assert [g["goal"] for g in json.loads(result.stdout)["goals"]] == ["right"]
    result = invoke("eval", suite, "--scripted", script, "--goal", "nope")
    assert result.exit_code == ExitCode.USAGE and "no goal with id: nope" in flat(result.output)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("goals: []", "goals"),
        ("goals:\n- {id: a, goal: g, expect: 3 GB/sx}", "unknown unit"),
        ("goals:\n- {id: a, goal: g, expect: 3}\n- {id: a, goal: g, expect: 4}", "used twice"),
        ("goals:\n- {id: a, goal: g}", "expect"),
        ("- just a list", "mapping"),
    ],
)
def test_a_bad_suite_exits_invalid_with_the_problem(tmp_path, content, problem):
    suite = tmp_path / "bad.yaml"
    suite.write_text(content)
    result = invoke("eval", suite, "--scripted", tmp_path / "unused.yaml")
    assert result.exit_code == ExitCode.INVALID
    assert problem in flat(result.output)


def test_the_example_suite_loads_with_25_goals_each_with_an_expected_value():
    suite = load_suite(EXAMPLES / "eval" / "suite.yaml")
    assert len(suite.goals) >= 25
    assert all(goal.expected().magnitude > 0 for goal in suite.goals)
    assert {g.category for g in suite.goals} >= {"transfer", "units", "work", "counts", "lookup"}


def test_a_unit_trap_is_not_correct():
    """56.25 Mbps is not 56.25 MB/s, in a step's value or in the answer."""
    expected = parse_expected("56.25 MB/s")
    assert value_matches(expected, parse_quantity("450 Mbps"), 1e-3)
    assert not value_matches(expected, parse_quantity("56.25 Mbps"), 1e-3)
    assert text_matches(expected, "That is 56.25 MB/s.", 1e-3) == "56.25 MB/s"
    assert text_matches(expected, "That is 56.25 Mbps.", 1e-3) is None


def test_counts_percentages_and_echoed_numbers():
    nights = parse_expected(3, "nights")
    assert nights.kind == "count" and value_matches(nights, 3, 1e-3)
    assert text_matches(nights, "3 nights (962.28 GB per night)", 1e-3) == "3 nights"
    assert text_matches(nights, "3 workers, as asked", 1e-3, ignore=[3]) is None
    growth = parse_expected("25 %")
    assert value_matches(growth, 0.25, 1e-3) and value_matches(growth, 25, 1e-3)
    assert text_matches(growth, "It grew by 25%.", 1e-3) == "25%"
    assert not value_matches(growth, 0.3, 1e-3)


def test_a_malformed_expected_value_is_an_error():
    with pytest.raises(UnitError):
        parse_expected("about three")
    with pytest.raises(TaskFileError):
        load_suite(EXAMPLES / "eval" / "missing.yaml")


def test_a_count_given_as_a_rate_of_one_kind_is_read_as_written():
    """A count asked as "how many hours a week": 5 h/week is 5, not pint's 0.03 (h over h)."""
    hours = parse_expected(5)
    a_week = parse_unit("h/week")
    assert value_matches(hours, quantity(5, a_week), 1e-9)
    assert not value_matches(hours, quantity(6, a_week), 1e-9)


def test_a_dataset_s_bare_number_is_in_the_unit_the_answer_is_written_in():
    """Train 5836: "2 oz" left, where the question spilled 2 ounces, was judged wrong: the
    value had a dimension and its text only repeated the question's 2."""
    assert value_matches(parse_expected(2), quantity(2, parse_unit("oz")), 1e-9)
    assert value_matches(parse_expected(500), quantity(500, parse_unit("USD/h")), 1e-9)
    assert not value_matches(parse_expected(2), quantity(3, parse_unit("oz")), 1e-9)
    assert not value_matches(parse_expected(2), quantity(120, parse_unit("min")), 1e-9)
    # a count that names what it counts is no bare number: 5 hours are not 5 nights
    assert not value_matches(parse_expected("5 nights"), quantity(5, parse_unit("h")), 1e-9)


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_table_keeps_what_each_goal_got_at_any_terminal_width(tiny, columns):
    """At 80-100 columns the "got" column was squeezed off the edge; now the rest stacks."""
    suite, script, journals = tiny
    result = invoke("eval", suite, "--scripted", script, "--journal-dir", journals,
                    env={"COLUMNS": str(columns)})  # fmt: skip
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    table = "\n".join(lines)
    assert "got (or error)" in table and "step items = 900" in table
    assert "WRONG" in table and "900 items" in table and "56.25 MB/s" in table
    assert ("tokens in/out" in table) == (columns == 200)  # the wide layout when it fits
    assert "exit 3" in table or "│    3 │" in table  # the unplanned goal's exit status


def test_a_sum_of_money_is_the_bare_number_a_dataset_expects():
    """GSM8K train 5235: the plan's 500 USD was judged wrong (and so verified-wrong)."""
    assert value_matches(parse_expected(500), quantity(500, parse_unit("USD")), 1e-9)
    assert not value_matches(parse_expected(450), quantity(500, parse_unit("USD")), 1e-9)
    assert not value_matches(parse_expected("500 EUR"), quantity(500, parse_unit("USD")), 1e-9)


def test_a_sum_in_cents_is_the_same_amount_in_dollars_a_dataset_expects():
    """GSM8K train 6399: "twenty cents per meter", the total earned: 500,000 cent is 5000."""
    cents = quantity(500_000, parse_unit("cent"))
    assert value_matches(parse_expected(5000), cents, 1e-9)
    assert value_matches(parse_expected(500_000), cents, 1e-9)  # "how many cents", as said
    assert not value_matches(parse_expected(50), cents, 1e-9)
    assert not value_matches(parse_expected(5000), quantity(500_000, parse_unit("USD")), 1e-9)
