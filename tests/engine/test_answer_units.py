"""The word after a reference in an answer template is read against the value it follows.

A unit of the value's dimension is the unit the answer is written in (once); a unit of
another dimension, or a count after a value with units, makes the run unverified.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepgraph import Engine, RunResult, RunStatus, StepGraph, Task
from stepgraph.verifiers import check_answer_template
from tests.conftest import EXAMPLES


def run(tmp_path: Path, expression: str, answer: str) -> RunResult:
    """Run a one-step plan, `a` = `expression`, answered by `answer`."""
    plan = StepGraph.model_validate(
        {"steps": [{"id": "a", "tool": "calculate", "args": {"expression": expression}}]}
    )
    task = Task(goal="test", plan=plan, answer=answer)
    journal = tmp_path / f"run-{len(list(tmp_path.iterdir()))}.jsonl"
    return Engine().run(task, journal=journal)


def test_a_time_unit_after_a_time_is_the_unit_the_answer_is_written_in(tmp_path):
    """'${a} hours' with a = 50/9 h reads '5.55556 hours', not '5.55556 h hours'."""
    result = run(tmp_path, "50 h / 9", "${a} hours")
    assert result.answer == "5.55556 hours"
    assert result.status is RunStatus.VERIFIED


def test_minutes_after_minutes_are_said_once(tmp_path):
    """'${a} minutes' with a = 48 min reads '48 minutes'."""
    result = run(tmp_path, "48 min", "${a} minutes.")
    assert result.answer == "48 minutes."
    assert result.status is RunStatus.VERIFIED


def test_a_time_is_converted_to_the_unit_the_template_names(tmp_path):
    """'${a} days' with a = 36 h reads '1.5 days': the value is converted, not relabelled."""
    result = run(tmp_path, "36 h", "${a} days")
    assert result.answer == "1.5 days"
    assert result.status is RunStatus.VERIFIED
    assert result.answer_sources == {"1.5 days": "a"}


def test_a_size_is_converted_to_the_size_unit_the_template_names(tmp_path):
    """'${a} TB' with a = 1,200 GB reads '1.2 TB', not '1,200 GB TB'."""
    result = run(tmp_path, "1200 GB", "${a} TB in all")
    assert result.answer == "1.2 TB in all"
    assert result.status is RunStatus.VERIFIED


def test_a_time_in_hours_followed_by_days_is_converted_not_doubled(tmp_path):
    """'${a} days' with a = 5 h is '0.208333 days', never '5 h days'."""
    result = run(tmp_path, "5 h", "${a} days")
    assert result.answer == "0.208333 days"
    assert result.status is RunStatus.VERIFIED


def test_a_count_word_after_a_size_is_not_verified(tmp_path):
    """'${a} nights' with a = 5 GB fails the answer check: a count needs a plain number."""
    result = run(tmp_path, "5 GB", "${a} nights")
    assert result.status is RunStatus.UNVERIFIED
    assert "the answer says '${a} nights' but a is 5 GB: a count needs a plain number" in (
        result.answer
    )
    assert result.answer.startswith("no answer: ")


def test_a_count_word_after_a_time_is_not_verified(tmp_path):
    """'${a} trips' with a = 5 h is refused: 5 h is no number of trips."""
    result = run(tmp_path, "5 h", "${a} trips needed")
    assert result.status is RunStatus.UNVERIFIED
    assert "'${a} trips' but a is 5 h: a count needs a plain number" in result.answer


def test_a_unit_of_another_dimension_is_not_verified(tmp_path):
    """'${a} days' with a = 5 GB says a time the run did not compute."""
    result = run(tmp_path, "5 GB", "${a} days")
    assert result.status is RunStatus.UNVERIFIED
    assert "the answer says '${a} days' but a is 5 GB: days is [time], not [information]" in (
        result.answer
    )


def test_a_plain_number_is_written_before_any_count_or_unit_word(tmp_path):
    """A plain number counts whatever the text calls it: '${a} nights', '${a} days'."""
    nights = run(tmp_path, "ceil(2500 GB / (962.28 GB))", "${a} nights")
    assert (nights.answer, nights.status) == ("3 nights", RunStatus.VERIFIED)
    days = run(tmp_path, "ceil(1.5 PB / (40 Gbit/s) / (1 day))", "${a} days")
    assert (days.answer, days.status) == ("4 days", RunStatus.VERIFIED)


def test_a_count_after_its_own_count_is_said_once(tmp_path):
    """'${a} tables' with a = 29 tables reads '29 tables'; other words stay as written."""
    result = run(tmp_path, "ceil(230 people / (8 people/table))", "${a} tables, per room")
    assert result.answer == "29 tables, per room"
    assert result.status is RunStatus.VERIFIED


def test_words_that_are_no_units_after_a_quantity_are_untouched(tmp_path):
    """'per', 'in', 'total' and 'remains' after a quantity are English, not units or counts."""
    result = run(tmp_path, "962.28 GB", "${a} per night, ${a} in all, ${a} total, ${a} remains")
    assert result.answer == (
        "962.28 GB per night, 962.28 GB in all, 962.28 GB total, 962.28 GB remains"
    )
    assert result.status is RunStatus.VERIFIED


def test_the_migration_example_answer_stays_exactly_as_it_was(tmp_path):
    """examples/migration.yaml answers '3 nights (962.28 GB per night; 2,500 GB in all)'."""
    result = Engine().run(EXAMPLES / "migration.yaml", journal=tmp_path / "run.jsonl")
    assert result.answer == "3 nights (962.28 GB per night; 2,500 GB in all)"
    assert result.status is RunStatus.VERIFIED


@pytest.mark.parametrize(
    ("template", "passed"),
    [("${a} hours", True), ("${a} GB", False), ("${a} crates", False), ("${a} each", None)],
)
def test_the_template_check_judges_the_word_after_a_quantity(template, passed):
    """The static template check passes a fitting unit and fails a misfit or a count."""
    from stepgraph.units import quantity

    said = check_answer_template(template, {"a": quantity(5, "h")})
    assert (said.passed if said is not None else None) is passed
