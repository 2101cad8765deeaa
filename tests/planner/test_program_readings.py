"""How a program's numbers are read as the goal's: percentages named by their number, units
named in a comment. Each goal is a GSM8K train question whose right program was refused."""

import pytest

from stepgraph import Engine, Planner
from stepgraph.evaluation import Suite, run_goal
from stepgraph.model import Task
from stepgraph.planner._planner import _numbers_of, _read_values
from stepgraph.planner._program import program_lines
from stepgraph.task import PreparedTask, resolve_inputs
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry

FROGS = (
    "A frog lays 800 eggs a year.  10 percent dry up, and 70 percent are eaten.  1/4 of the "
    "remaining eggs end up hatching, how many frogs hatch out of the 800?"
)
FROGS_PROGRAM = """```python
eggs = 800
dry_up_percentage = 10
eaten_percentage = 70
dried = eggs * (dry_up_percentage / 100)
eaten = eggs * eaten_percentage / 100
remaining = eggs - dried - eaten
print(remaining * (1 / 4))
```"""
SILK = (
    "Alex makes luxury dresses out of silk. Each dress needs 5 meters of silk and Alex has 600 "
    "meters of silk in storage. His friends also want to learn how to make these dresses so "
    "Alex gives all 5 of them 20 meters of silk each. He uses the rest to make dresses himself. "
    "How many dresses can Alex make?"
)
SILK_PROGRAM = """```python
silk_per_dress = 5  # meters
total_silk = 600  # meters
given = 20 * 5  # meters (20 meters each for 5 friends)
print((total_silk - given) // silk_per_dress)
```"""


def _task(goal: str) -> PreparedTask:
    task = PreparedTask(Task(name="p", goal=goal), default_registry(), {})
    task.inputs = resolve_inputs(task.task)
    return task


def _lines(goal: str, code: str) -> str:
    """The plan lines a program is read as, with the goal's numbers as the planner reads them."""
    planner = Planner(ScriptedLLM([]), syntax="lines", numbered_names=True)
    read = planner._read(_task(goal))
    numbers, quotes = list(_numbers_of(read).values()), {n: i.quote for n, i in read.items()}
    return program_lines(f"```python\n{code}```", numbers, _read_values(read), quotes)


def _verified(goal: str, expect: float, program: str, words: str, tmp_path) -> None:
    planner = Planner(
        ScriptedLLM([program, words]), syntax="lines", numbered_names=True,
        cross_route="worked-code", program_only=True,
    )  # fmt: skip
    suite = Suite(name="p", goals=[{"id": "g", "goal": goal, "expect": expect}])
    outcome = run_goal(
        suite, suite.goals[0], Engine(planner=planner, cross_check=True), tmp_path,
        tmp_path / "r.jsonl",
    )  # fmt: skip
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer, outcome.error)


def test_a_percentage_named_by_its_number_and_divided_by_100_is_the_goal_s_share(tmp_path):
    """Train 2816: `dry_up_percentage = 10` then `/ 100`; "10 percent" was refused unused."""
    lines = _lines(FROGS, FROGS_PROGRAM.strip("`python\n"))
    assert "dry_up_percentage = 0.1" in lines
    assert "dried = eggs * dry_up_percentage" in lines
    assert "eaten = eggs * eaten_percentage\n" in lines
    _verified(FROGS, 40, FROGS_PROGRAM, "800 - 80 - 560 = 160; 160 / 4 = 40.\nANSWER: 40", tmp_path)


@pytest.mark.parametrize(
    "use",
    [
        "x = 800 / p / 100",  # divides by the percentage: read as 10, the program is refused
        "x = 800 * p",  # a bare use: the 10 is a count, not a share
        "p = p / 100\nx = 800 * p",  # the name bound anew
    ],
)
def test_a_percentage_name_used_otherwise_is_read_as_written(use):
    lines = _lines(FROGS, f"p = 10\n{use}\nprint(x)\n")
    assert "p = 10\n" in lines


def test_a_comment_naming_the_unit_picks_which_of_the_goal_s_equal_numbers_it_is(tmp_path):
    """Train 641: 5 is both "5 meters" and "5 of them"; `# meters` says which."""
    lines = _lines(SILK, SILK_PROGRAM.strip("`python\n"))
    assert "silk_per_dress = silk  # meters" in lines
    _verified(SILK, 100, SILK_PROGRAM, "600 - 100 = 500; 500 / 5 = 100.\nANSWER: 100", tmp_path)


def test_a_number_in_the_unit_its_comment_names_is_the_goal_s_quantity_in_another_unit():
    """Train 6849: `rest = 0.5  # in hours` for "30-minute rest stops"."""
    goal = "A trip takes 3 hours of driving and two 30-minute rest stops. How long, in hours?"
    lines = _lines(goal, "drive = 3\nrest = 0.5  # in hours\nprint(drive + 2 * rest)\n")
    assert "rest = rest  # in hours" in lines  # the step named as the input it reads
    assert "rest = 0.5" in _lines(goal, "drive = 3\nrest = 0.5  # in days\nprint(drive + rest)\n")


SOAP = (
    "Maria buys a large bar of French soap that lasts her for 2 months.  She spends $8.00 per "
    "bar of soap.  If she wants to stock up for the entire year, how much will she spend on "
    "soap?"
)
SOAP_PROGRAM = """```python
months_per_bar = 2
cost_per_bar = 8.00
months_in_year = 12
bars_needed = months_in_year / months_per_bar
print(bars_needed * cost_per_bar)
```"""


def test_a_number_its_name_says_is_a_calendar_fact_is_that_period_s_length(tmp_path):
    """Train 4180: `months_in_year = 12` (no comment) was refused as a number not stated."""
    lines = _lines(SOAP, SOAP_PROGRAM.strip("`python\n"))
    assert 'months_in_year = "12 month"  # a year has 12 months' in lines
    _verified(SOAP, 48, SOAP_PROGRAM, "12 / 2 = 6 bars; 6 * 8 = 48.\nANSWER: 48", tmp_path)


@pytest.mark.parametrize("line", ["months_in_year = 10", "days_in_year = 12", "months = 12"])
def test_a_name_that_states_no_calendar_fact_exactly_declares_nothing(line):
    lines = _lines(SOAP, f"months_per_bar = 2\n{line}\nprint({line.split()[0]} / months_per_bar)\n")
    assert f"{line}\n" in lines


SLEEP = (
    "A cougar is sleeping for 4 hours at night, and a zebra for 2 hours more. How much time do "
    "both animals sleep in one week?"
)


def test_a_per_night_value_times_7_named_per_week_counts_the_nights(tmp_path):
    """Train 4791: the 7 was refused as a hand conversion; the names say nights in a week."""
    code = (
        "cougar = 4\nzebra = cougar + 2\nper_night = cougar + zebra\n"
        "per_week = per_night * 7\nprint(per_week)\n"
    )
    assert "per_week_factor = 7  # a week has 7 days" in _lines(SLEEP, code)
    program = f"```python\n{code}```"
    _verified(SLEEP, 70, program, "4 + 6 = 10 hours a night; 10 * 7 = 70.\nANSWER: 70", tmp_path)


@pytest.mark.parametrize(
    "line",
    [
        "per_week = per_night * 5",  # 5 is no calendar fact of a week
        "per_month = per_night * 7",  # a month has no 7 nights
        "total = per_night * 7",  # the name says nothing of a week
    ],
)
def test_a_calendar_number_the_names_do_not_explain_stays_refused(line):
    code = f"cougar = 4\nzebra = cougar + 2\nper_night = cougar + zebra\n{line}\nprint(1)\n"
    assert f"{line}\n" in _lines(SLEEP, code)


SNACKS = (
    "Alexander is going food shopping. If he buys 5 apples for $1 each and 2 oranges for $2 "
    "each, how much does he spend?"
)
SNACKS_PROGRAM = """```python
apples = 5
price_apple = 1
oranges = 2
price_orange = 2
print(apples * price_apple + oranges * price_orange)
```"""


def test_a_number_of_two_inputs_is_the_one_the_variable_s_name_says(tmp_path):
    """Train 2400: "2 oranges" and "$2 each"; `price_orange = 2` was a plain 2, refused."""
    lines = _lines(SNACKS, SNACKS_PROGRAM.strip("`python\n"))
    assert "price_orange = usd_2\n" in lines  # a name of money: the sum of money
    assert "oranges = oranges_2\n" in lines  # the quote's own word
    _verified(SNACKS, 9, SNACKS_PROGRAM, "5 * 1 + 2 * 2 = 9.\nANSWER: 9", tmp_path)


def test_a_name_that_says_neither_leaves_the_number_unbound():
    lines = _lines(SNACKS, "x = 2\ny = 5\nprint(x * y)\n")
    assert "x = 2\n" in lines
