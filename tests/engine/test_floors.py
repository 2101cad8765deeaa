"""A floor that drops a remainder needs a question about whole things that fit."""

import pytest

from stepgraph.engine._floors import dropped_remainders
from stepgraph.units import parse_quantity
from tests.engine._programs import one_step, run_programs

# Held-out GSM8K 1140 and the model's program there (verified with 18 before; the answer is 27)
POTATOES = (
    "Gomer ate 5 less than 23 scoops of mashed potatoes.  If it takes 3 less than 6 potatoes "
    "to make 1 less than 3 scoops of mashed potatoes, how many potatoes did Gomer eat?"
)
FLOORED = """```python
scoops = 23 - 5
potatoes_per_scoop = (6 - 3) // (3 - 1)
total_potatoes = scoops * potatoes_per_scoop
print(total_potatoes)
```"""
DIVIDED = """```python
scoops = 23 - 5
potatoes_per_scoop = (6 - 3) / (3 - 1)
total_potatoes = scoops * potatoes_per_scoop
print(total_potatoes)
```"""


def _verdict(goal: str, text: str, **bindings):
    return dropped_remainders(goal, *one_step(text, **bindings))


@pytest.mark.parametrize(
    ("goal", "text", "bindings", "fails"),
    [
        (POTATOES, "${a} // ${b}", {"a": 3, "b": 2}, True),
        (POTATOES, "${a} // ${b}", {"a": 6, "b": 2}, False),  # nothing dropped
        (POTATOES, "floor(${a} / ${b}) * 2", {"a": 3, "b": 2}, True),
        ("How many boxes can she fill?", "${a} // ${b}", {"a": 50, "b": 12}, False),
        ("How many full boxes are there?", "${a} // ${b}", {"a": 50, "b": 12}, False),
        ("How many cookies are left over?", "${a} - ${a} // ${b} * ${b}", {"a": 50, "b": 12},
         False),
        ("How many days does the toothpaste last?", "${a} // ${b}",
         {"a": parse_quantity("105 g"), "b": parse_quantity("18 g")}, True),
        ("Share 7 apples. How many each", "${a} // ${b}", {"a": 7, "b": 2}, False),  # no "?"
        # rounding up, as people write it with //: "How many buses do we need?" (everyday-12)
        (POTATOES, "(${a} + ${b} - 1) // ${b}", {"a": 132, "b": 40}, False),
        (POTATOES, "-(-${a} // ${b})", {"a": 132, "b": 40}, False),
        (POTATOES, "(${a} + ${b} - 2) // ${b}", {"a": 132, "b": 40}, True),
    ],
)  # fmt: skip
def test_a_floor_that_drops_a_remainder_fails_unless_the_question_asks_what_fits(
    goal, text, bindings, fails
):
    verdict = _verdict(goal, text, **bindings)
    assert (verdict is not None) is fails, verdict
    if verdict is not None:
        assert not verdict.passed and verdict.step == "s"
        assert "drops a remainder" in verdict.description


def test_the_verdict_says_the_numbers_and_what_to_write():
    verdict = _verdict(POTATOES, "${a} // ${b}", a=3, b=2)
    assert verdict is not None
    assert "3 // 2 drops a remainder (the quotient is 1.5)" in verdict.description
    assert "divide with /" in verdict.description


def test_a_floored_potato_is_refused_and_the_next_program_verifies(tmp_path):
    words = "18 scoops; 3 potatoes make 2 scoops: 18 * 3 / 2 = 27.\nANSWER: 27"
    outcome, model = run_programs(POTATOES, 27, [FLOORED, DIVIDED], words, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.programs == []


def test_a_floored_potato_is_never_verified(tmp_path):
    """Before, 18 was verified: the words made the same slip (the held-out run's second words)."""
    words = "18 scoops, 3 // 2 = 1 potato a scoop: 18.\nANSWER: 18"
    outcome, _ = run_programs(POTATOES, 27, [FLOORED] * 3, words, tmp_path)
    assert not outcome.verified
    assert "drops a remainder" in str(outcome.error) + (outcome.answer or "")
