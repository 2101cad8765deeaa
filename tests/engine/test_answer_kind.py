"""The answer is of the kind the question asks: a rate is no answer to "How long?"."""

import pytest

from stepgraph.engine._asked import answer_kind, asked_kind
from stepgraph.units import parse_quantity
from tests.engine._programs import run_programs

# GSM8K train 957: the model's program, verified with 135 1/min before (recorded replies)
GRILL = (
    "A charcoal grill burns fifteen coals to ash every twenty minutes of grilling. The grill "
    "ran for long enough to burn three bags of coals. Each bag of coal contains 60 coals. "
    "How long did the grill run?"
)
COALS_OVER_MINUTES = """```python
coals_per_bag = 60
bags = 3
coals_per_burn = 15
minutes_per_burn = 20
total_coals_burned = coals_per_bag * bags * coals_per_burn
print(total_coals_burned / minutes_per_burn)
```"""
MINUTES = """```python
coals = 60 * 3
burns = coals / 15
print(burns * 20)
```"""


@pytest.mark.parametrize(
    ("goal", "answer", "fits"),
    [
        (GRILL, "135 1/min", False),
        (GRILL, "240 min", True),
        (GRILL, "4 h", True),
        ("How long is the fence?", "12 m", True),  # "how long" of a length
        ("How long is the fence?", "12 m**2", False),
        ("How many GB arrive?", "3 h", False),
        ("How many GB arrive?", "962.28 GB", True),
        ("How many GB arrive each night?", "962.28 GB/d", True),  # so much a period
        ("How many GB arrive?", "962.28 GB/d", False),
        ("How far did she run?", "6 mi/h", False),
        ("How much time does the copy take?", "5 TB", False),
        ("How many tiles can they paint in 15 minutes?", "375 min", True),  # counts: not held
        ("How much money does he make?", "760 h", True),  # money: not held
        ("The copy takes 3 h. It has 5 TB", "5 TB", True),  # no question asked
    ],
)
def test_an_answer_of_another_kind_than_asked_fails(goal, answer, fits):
    verdict = answer_kind(goal, [parse_quantity(answer)])
    assert (verdict is None) is fits, verdict
    if verdict is not None:
        assert not verdict.passed and answer.split()[0] in verdict.description


def test_one_value_of_the_kind_asked_among_the_answer_s_will_do():
    """ "20 Mbps: 140 s" answers "How long"; which value is the answer is the cross-check's."""
    speed, time = parse_quantity("20 Mbps"), parse_quantity("140 s")
    assert answer_kind("How long does the download take?", [speed, time]) is None
    verdict = answer_kind("How long does the download take?", [speed, speed * 2])
    assert verdict is not None
    assert "20 Mbps, 40 Mbps is [information] / [time]" in verdict.description


def test_a_plain_number_and_count_nouns_are_no_other_kind():
    """A plan that carries no units cannot be told; "tiles" or "coals" are no dimension."""
    assert answer_kind(GRILL, [135]) is None
    assert answer_kind(GRILL, [parse_quantity("240 coals * min / coals")]) is None
    assert answer_kind("How many hours does it take?", [parse_quantity("3 h / tiles")]) is None
    assert asked_kind("How many apples does she have?") is None


WORDS = "60 * 3 = 180 coals; 180 / 15 = 12 burns; 12 * 20 = 240 minutes.\nANSWER: 240"


def test_a_rate_for_how_long_is_refused_and_the_next_program_verifies(tmp_path):
    programs = [COALS_OVER_MINUTES, MINUTES]
    outcome, model = run_programs(GRILL, "240 min", programs, WORDS, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.programs == []  # the second program was asked for


def test_a_rate_for_how_long_is_never_verified(tmp_path):
    """Before, the program's 135 1/min was verified where the words said 135 as well."""
    words = "15 coals every 20 minutes, 180 coals: 180 * 15 / 20 = 135.\nANSWER: 135"
    outcome, _ = run_programs(GRILL, 135, [COALS_OVER_MINUTES] * 3, words, tmp_path)
    assert not outcome.verified
    assert "another kind" in str(outcome.error) + (outcome.answer or "")
