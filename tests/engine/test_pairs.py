"""A question that asks for pairs of things the goal counts one by one needs a halving."""

import pytest

from stepgraph.engine._pairs import unpaired
from tests.engine._programs import one_step, run_programs

# Held-out GSM8K test 1267 and the model's program there (verified with 80; the answer is 40)
LEGS = (
    "A farm has 10 2-legged animals and 15 4-legged animals. If all animals are healthy, "
    "how many pairs of animal legs in total are on the farm?"
)
COUNTED_LEGS = """```python
two_legged_animals = 10
four_legged_animals = 15
total_legs_two_legged = two_legged_animals * 2
total_legs_four_legged = four_legged_animals * 4
total_legs = total_legs_two_legged + total_legs_four_legged
print(total_legs)
```"""
HALVED_LEGS = COUNTED_LEGS.replace(
    "print(total_legs)", "pairs = total_legs / 2  # two legs a pair\nprint(pairs)"
)
# GSM8K train 6050, 555 and 7154: pairs asked of single things, and of things counted in pairs
LEGGINGS = (
    "Haleigh needs to buy leggings for her pet animals. She has 4 dogs and 3 cats. "
    "How many pairs of leggings does she need?"
)
SHOES = (
    "Jacob has half the number of shoes Edward has. Edward has 3 times the number of shoes "
    "Brian has. If Brian has 22 pairs of shoes, how many pairs of shoes do they have in total?"
)
PANTS = (
    "Isabella and Alexis went to the mall to buy some pants and dresses. Alexis bought 3 "
    "times more pants and dresses than Isabella. If Alexis bought 21 pairs of pants and 18 "
    "dresses, how many pairs of pants and dresses did Isabella buy in total?"
)


def _verdict(goal: str, text: str, **bindings):
    return unpaired(goal, *one_step(text, **bindings))


@pytest.mark.parametrize(
    ("goal", "text", "bindings", "fails"),
    [
        (LEGS, "${a} * 2 + ${b} * 4", {"a": 10, "b": 15}, True),
        (LEGS, "(${a} * 2 + ${b} * 4) / 2", {"a": 10, "b": 15}, False),
        (LEGS, "(${a} * 2 + ${b} * 4) // ${p}", {"a": 10, "b": 15, "p": 2}, False),
        (LEGS, "(${a} * 2 + ${b} * 4) * 0.5", {"a": 10, "b": 15}, False),
        (LEGS, "${a} * 2 + ${b} * 4 / 4", {"a": 10, "b": 15}, True),  # a division, not by 2
        (LEGGINGS, "${d} * 4 + ${c} * 4", {"d": 4, "c": 3}, True),
        (SHOES, "${b} + ${b} * 3", {"b": 22}, False),  # the goal counts in pairs itself
        (PANTS, "${p} / 3 + ${d} / 3", {"p": 21, "d": 18}, False),
        ("How many socks does he own?", "${a} * 2", {"a": 4}, False),  # no pairs asked
        # the goal says "pair" elsewhere: it may count in pairs itself
        ("Socks are sold in pairs for $4. How many pairs can Tom buy with $20?",
         "${m} / ${p}", {"m": 20, "p": 4}, False),
        ("Socks cost $3/pair. How many pairs can he buy with $12?", "${m} / ${p}",
         {"m": 12, "p": 3}, False),
    ],
)  # fmt: skip
def test_pairs_asked_of_single_things_need_a_halving(goal, text, bindings, fails):
    verdict = _verdict(goal, text, **bindings)
    assert (verdict is not None) is fails, verdict
    if verdict is not None:
        assert not verdict.passed
        assert "no step divides by 2" in verdict.description


def test_legs_counted_for_pairs_are_never_verified(tmp_path):
    """Held-out 1267 through the engine: 80 was verified, the model's words counting legs too."""
    words = "10 * 2 = 20 legs and 15 * 4 = 60 legs: 80 in all.\nANSWER: 80"
    outcome, _ = run_programs(LEGS, 40, [COUNTED_LEGS] * 2, words, tmp_path)
    assert not outcome.verified
    assert "no step divides by 2" in str(outcome.error) + (outcome.answer or "")


def test_legs_halved_into_pairs_verify(tmp_path):
    """The same legs divided by two make the 40 pairs asked, and the run verifies."""
    words = "20 + 60 = 80 legs, and 80 / 2 = 40 pairs.\nANSWER: 40"
    outcome, _ = run_programs(LEGS, 40, [HALVED_LEGS], words, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)


def test_a_long_goal_written_against_the_reader_is_read_in_one_pass():
    """A goal is user text: 400 KB of "1.1.1..." before "how many pairs" once took minutes."""
    goal = "1." * 200_000 + " How many pairs of socks?"
    verdict = _verdict(goal, "${a} * 2", a=4)
    assert verdict is not None and not verdict.passed
