"""A count of things the goal needs is whole: a fraction of a printer is no answer."""

import pytest

from stepgraph.engine._counts import whole_count
from stepgraph.planner._read_goal import asked_count
from tests.engine._programs import run_programs

PRINTERS = (
    "A print job of 20,000 pages must finish within 2 hours. Each printer prints 25 pages "
    "per minute. How many printers are needed?"
)
DIVIDED = """```python
pages = 20000
minutes = 2 * 60  # 2 hours in minutes
per_minute = 25
print(pages / (per_minute * minutes))
```"""
ROUNDED_UP = """```python
import math
pages = 20000
minutes = 2 * 60  # 2 hours in minutes
per_minute = 25
print(math.ceil(pages / (per_minute * minutes)))
```"""
WORDS = "One printer prints 25 * 120 = 3000 pages; 20000 / 3000 = 6.67, so 7.\nANSWER: 7"


@pytest.mark.parametrize(
    ("goal", "noun"),
    [
        (PRINTERS, "printers"),
        ("How many buses must the school rent for 350 pupils?", "buses"),
        ("How many hours are needed?", None),  # a unit of measure: a fraction is an answer
        ("How many cups of flour does she need?", None),
        ("How many apples does she have left?", None),  # nothing needed whole
        ("She needs 3 boxes. How many apples are in a box", None),  # no question asked
    ],
)
def test_the_things_a_question_needs_whole(goal, noun):
    assert asked_count(goal) == noun


def test_a_fraction_of_a_needed_thing_fails_and_says_how_to_round():
    verdict = whole_count(PRINTERS, 6.666666666666667)
    assert verdict is not None and not verdict.passed
    assert "6.66667 is no whole number of them: round up (ceil)" in verdict.description
    assert whole_count(PRINTERS, 7.0) is None
    assert whole_count("How many hours are needed?", 6.5) is None


def test_float_noise_on_a_whole_count_is_no_fraction_but_a_millionth_is():
    """3 cups / 0.333333333333 cup is 9.000000000009: whole; 7.000001 printers are not."""
    assert whole_count(PRINTERS, 3 / 0.333333333333) is None
    assert whole_count(PRINTERS, 7.000001) is not None


def _run(programs: list[str], tmp_path):
    return run_programs(PRINTERS, 7, programs, WORDS, tmp_path, afresh_on_disagreement=True)


def test_a_program_that_stops_at_a_fraction_of_a_printer_is_asked_again(tmp_path):
    """The suite's printers-needed: 6.67 printers against the words' 7, unverified each time."""
    outcome, model = _run([DIVIDED, ROUNDED_UP], tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.programs == []  # the second program was asked for


def test_a_fraction_of_a_printer_is_never_verified(tmp_path):
    outcome, _ = _run([DIVIDED, DIVIDED, DIVIDED], tmp_path)
    assert not outcome.verified
    assert "no whole number" in (outcome.answer or "") + str(outcome.error)
