"""A planner's plan is validated once: the session runs the graph the planner's checks built."""

import pytest

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.executor import _validate
from stepgraph.testing import ScriptedLLM
from tests.planner.conftest import migration_plan

GOAL = "nights to move 2.5 TB over 450 Mbps, 6 h a night, 90% used, 0.88 retry factor"
TASK = Task(goal=GOAL, inputs={"data": "2.5 TB", "link": "450 Mbps"})
ANSWER = "${nights} nights (${per_night} per night)"


@pytest.fixture
def validations(monkeypatch):
    """How many times a whole plan went through the static checks."""
    calls: list[int] = []
    inner = _validate._validate_plan

    def counted(plan, *args, **kwargs):
        calls.append(len(plan.steps))
        return inner(plan, *args, **kwargs)

    monkeypatch.setattr(_validate, "_validate_plan", counted)
    return calls


def test_a_planner_s_plan_is_checked_once_per_run(tmp_path, validations):
    planner = Planner(ScriptedLLM([migration_plan(answer=ANSWER)]))
    result = Engine(planner=planner).run(TASK, journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.VERIFIED
    assert len(validations) == 1


def test_a_planner_that_overrides_only_plan_still_runs_and_its_plan_is_checked(
    tmp_path, validations
):
    """A subclass's own `plan()` is asked, as before; the session checks what it returns."""
    asked: list[str] = []

    class Mine(Planner):
        def plan(self, task, journal=None, **options):
            asked.append(task.task.goal)
            return super().plan(task, journal, **options)

    planner = Mine(ScriptedLLM([migration_plan(answer=ANSWER)]))
    result = Engine(planner=planner).run(TASK, journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.VERIFIED and asked == [GOAL]
    assert len(validations) == 2  # its parse, and the session's check of its plan
