"""A plan a person edited at approval is judged as theirs after a restart, as it is at once.

The goal-number coverage verdict holds the planner's plans of a typed goal; a person's
edit is not held to the goal's prose. A parked run whose plan was edited, approved in
another process, or then interrupted and resumed, must be judged as the same run would
be had the person edited and approved it at a terminal: same plan, same verdicts, same
step states.
"""

from __future__ import annotations

import json
from pathlib import Path

from stepgraph import Engine, Planner, RunResult, RunStatus, StepGraph, Task, VerdictKind
from stepgraph.engine import Decision, ParkingApprover, decide, parked, resume
from stepgraph.testing import ScriptedLLM

GOAL = "How many nights to move 2.5 TB at 962.28 GB per night?"
# The planner's plan uses both numbers of the goal; the person's edit writes 2.5 TB as
# 2500 GB, which leaves the goal's "2.5" unused: a model would be sent back, a person not.
PLANNED = {
    "steps": [
        {"id": "nights", "tool": "calculate", "args": {"expression": "ceil(2.5 TB / (962.28 GB))"}}
    ],
    "answer": "${nights} nights",
}


def planner() -> Planner:
    return Planner(ScriptedLLM([json.dumps(PLANNED)]))  # one plan: no repair is asked for


def edited(plan: StepGraph) -> StepGraph:
    step = plan.steps[0].model_copy(update={"args": {"expression": "ceil(2500 GB / (962.28 GB))"}})
    return plan.model_copy(update={"steps": [step]})


def judged(result: RunResult) -> tuple:
    kinds = sorted(v.kind.value for v in result.verdicts)
    return result.status, result.answer, kinds, result.step_states, result.plan


def at_a_terminal(tmp_path: Path) -> RunResult:
    """Edited and approved in the process that planned it."""
    plan = StepGraph.model_validate(PLANNED)
    approver = ParkingApprover(
        Decision("edit", plan=edited(plan), who="carol"), Decision("approve", who="carol")
    )
    return Engine(planner=planner()).run(
        Task(goal=GOAL, approval="ask"), journal=tmp_path / "terminal.jsonl", approver=approver
    )


def parked_then_edited(tmp_path: Path) -> tuple[Path, RunResult]:
    """Parked, edited from elsewhere (it parks again), then approved from elsewhere."""
    journal = tmp_path / "parked.jsonl"
    first = Engine(planner=planner()).run(Task(goal=GOAL, approval="ask"), journal=journal)
    assert first.status is RunStatus.AWAITING_APPROVAL
    change = Decision("edit", plan=edited(parked(journal).plan), who="carol")
    assert decide(journal, change, planner=planner()).status is RunStatus.AWAITING_APPROVAL
    return journal, decide(journal, Decision("approve", who="carol"), planner=planner())


def test_an_edit_approved_at_a_terminal_is_not_held_to_the_goal(tmp_path):
    result = at_a_terminal(tmp_path)
    assert result.status is RunStatus.VERIFIED and result.answer == "3 nights"
    assert not [v for v in result.verdicts if v.kind is VerdictKind.COVERAGE]


def test_a_parked_edit_approved_elsewhere_is_judged_as_at_a_terminal(tmp_path):
    _, result = parked_then_edited(tmp_path)
    assert judged(result) == judged(at_a_terminal(tmp_path))


def test_a_resumed_run_of_an_edited_plan_is_judged_as_the_edited_plan(tmp_path):
    """Killed after the edited plan's approval: resume runs and judges the edited plan."""
    journal, finished = parked_then_edited(tmp_path)
    lines = journal.read_text().splitlines()
    approved = max(i for i, line in enumerate(lines) if '"event":"plan.approved"' in line)
    journal.write_text("\n".join(lines[: approved + 1]) + "\n")  # as if killed right after
    result = resume(journal, planner=planner())
    assert judged(result) == judged(finished)
    assert result.plan == edited(StepGraph.model_validate(PLANNED))
    assert result.step_states == {"nights": "verified"}
