"""A plan's own check that uses a number the goal does not state: dropped, not the plan."""

import pytest

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM

GOAL = "A batch job takes 135 minutes. How many hours is that?"


def run(lines, tmp_path):
    planner = Planner(ScriptedLLM([lines]), plan_retries=0, syntax="lines")
    path = tmp_path / "run.jsonl"
    return Engine(planner=planner).run(Task(name="g", goal=GOAL), journal=path), read_journal(path)


@pytest.mark.parametrize(
    "check",
    [
        # the answer worked out in the model's head (the suite's minutes-to-hours, its
        # cross-check plan: refused three times for the 2.25)
        'assert hours == 2.25, "the answer is 2.25 hours"',
        # a conversion by hand inside the check
        'assert hours * 60 == duration, "the hours cover the minutes"',
    ],
)
def test_the_check_is_dropped_and_said_and_the_plan_runs(check, tmp_path):
    result, journal = run(
        f'hours = unit_convert(duration, "h")\n{check}\nanswer = f"{{hours}}"', tmp_path
    )
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.values["hours"].to("h").magnitude == pytest.approx(2.25)
    [proposed] = journal.of_kind("plan.proposed")
    assert any("dropped: it uses a number the goal does not state" in r for r in proposed.repairs)
    assert proposed.plan["checks"] == []  # what is approved and run is what is shown


def test_a_step_with_such_a_number_still_refuses_the_plan(tmp_path):
    lines = 'hours: "h" = duration * 1.1\nassert hours == 2.25, "why"\nanswer = f"{hours}"'
    with pytest.raises(Exception, match="1.1 is not a number of the goal"):
        run(lines, tmp_path)


def test_a_check_of_the_goal_s_own_numbers_stays(tmp_path):
    lines = (
        'hours = unit_convert(duration, "h")\nassert hours >= duration, "all"\nanswer = f"{hours}"'
    )
    result, journal = run(lines, tmp_path)
    [proposed] = journal.of_kind("plan.proposed")
    assert len(proposed.plan["checks"]) == 1 and not any("dropped" in r for r in proposed.repairs)
    assert any(v.kind == "check" and v.passed for v in result.verdicts)
