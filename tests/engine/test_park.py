"""Out-of-band approval: a run with nobody at a terminal parks, and a decision made elsewhere
(another process, after a restart) continues it from its journal."""

import fcntl
import os
import subprocess
import sys

import pytest

from stepgraph import (
    ApprovalError,
    ApprovalPolicy,
    Engine,
    Planner,
    PlanValidationError,
    RunStatus,
    Task,
    tool,
)
from stepgraph.cli import ExitCode
from stepgraph.engine import Decision, decide, parked, resume
from stepgraph.journal import RunIndex, read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, ROOT, flat, invoke
from tests.planner.conftest import migration_plan

SENT: list[str] = []


@tool(side_effects=True)
def send_report(text: str) -> str:
    """Send a report to the team (changes the world)."""
    SENT.append(text)
    return "sent"


def report_task() -> Task:
    steps = [
        {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
        {"id": "mail", "tool": "send_report", "args": {"text": "nights: ${n}"}},
    ]
    return Task(goal="report the nights", plan={"steps": steps, "answer": "${n}"}, approval="ask")


def park(tmp_path, task=None, **engine):
    journal = tmp_path / "runs" / "parked.jsonl"
    result = Engine(tools=[send_report], **engine).run(task or report_task(), journal=journal)
    assert result.status is RunStatus.AWAITING_APPROVAL
    return journal


def test_a_parked_run_runs_nothing_until_approved_then_records_who_and_when(tmp_path):
    SENT.clear()
    journal = park(tmp_path)
    assert SENT == [] and read_journal(journal).of_kind("run.end") == []
    state = parked(journal)
    assert state is not None and state.awaiting.side_effects == ["send_report"]
    result = decide(journal, Decision("approve", who="alice", how="api"), tools=[send_report])
    assert result.status is RunStatus.VERIFIED and result.answer == "3"
    assert SENT == ["nights: 3"]
    [approved] = read_journal(journal).of_kind("plan.approved")
    assert (approved.who, approved.how) == ("alice", "api") and approved.when.endswith("Z")
    assert parked(journal) is None


def test_a_rejected_parked_run_ends_not_run(tmp_path):
    SENT.clear()
    journal = park(tmp_path)
    result = decide(journal, Decision("reject", who="bob", how="web"), tools=[send_report])
    events = read_journal(journal)
    assert result.status is RunStatus.NOT_RUN and SENT == []
    assert events.of_kind("plan.rejected")[0].who == "bob"
    assert events.of_kind("run.end")[0].status == "not_run" and events.of_kind("action") == []


def test_an_edit_parks_again_with_the_diff_and_runs_the_edited_plan(tmp_path):
    journal = park(tmp_path)
    plan = parked(journal).plan
    edited = plan.model_copy(
        update={"steps": [plan.steps[0].model_copy(update={"args": {"expression": "2 + 2"}})]}
    )
    result = decide(journal, Decision("edit", plan=edited, who="carol"), tools=[send_report])
    assert result.status is RunStatus.AWAITING_APPROVAL
    state = parked(journal)
    assert state.plan == edited
    assert state.diff()["removed"] == ["mail"] and "args" in state.diff()["changed"]["n"]
    done = decide(journal, Decision("approve", who="carol"), tools=[send_report])
    assert done.answer == "4" and done.status is RunStatus.VERIFIED


def test_a_revision_asks_the_planner_and_parks_the_new_plan(tmp_path):
    model = ScriptedLLM(
        [migration_plan("floor", answer="${nights}"), migration_plan("ceil", answer="${nights}")]
    )
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"}, approval="ask")
    journal = park(tmp_path, task, planner=Planner(model))
    revised = decide(
        journal, Decision("revise", comment="round up", who="dan"), planner=Planner(model)
    )
    assert revised.status is RunStatus.AWAITING_APPROVAL
    assert "round up" in model.requests[1][-1]["content"]
    assert "ceil" in parked(journal).plan.steps[-1].args["expression"]
    done = decide(journal, Decision("approve", who="dan"), planner=Planner(model))
    assert done.answer == "3"


def test_a_decided_run_cannot_be_decided_again_and_a_nameless_decision_is_refused(tmp_path):
    journal = park(tmp_path)
    with pytest.raises(ApprovalError, match="needs the name"):
        decide(journal, Decision("approve", who=" "), tools=[send_report])
    decide(journal, Decision("reject", who="erin"), tools=[send_report])
    with pytest.raises(ApprovalError, match="not awaiting approval"):
        decide(journal, Decision("approve", who="erin"), tools=[send_report])


def test_two_deciders_at_once_one_is_refused(tmp_path):
    journal = park(tmp_path)
    with journal.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ApprovalError, match="another process"):
            decide(journal, Decision("approve", who="x"), tools=[send_report])
    assert parked(journal) is not None  # nothing was lost: it still waits


def test_a_parked_run_survives_its_process_and_is_approved_from_the_command_line(tmp_path):
    """The run parks in one process, which exits; `stepgraph approve RUN_ID` finishes it."""
    runs = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    started = subprocess.run(
        [sys.executable, "-m", "stepgraph", "run", str(EXAMPLES / "migration.yaml"),
         "--approve", "ask", "--journal", str(runs / "m.jsonl")],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    assert started.returncode == ExitCode.AWAITING, started.stdout + started.stderr
    assert "stepgraph approve" in flat(started.stdout)
    [row] = RunIndex(runs).runs(status="awaiting_approval")
    listed = invoke("runs", "--runs", runs, "--status", "awaiting_approval")
    assert row.run_id in listed.output
    result = invoke("approve", row.run_id, "--by", "alice", "--runs", runs)
    assert result.exit_code == ExitCode.OK, result.output
    assert "3 nights" in flat(result.output)
    [approved] = read_journal(runs / "m.jsonl").of_kind("plan.approved")
    assert (approved.who, approved.how) == ("alice", "cli")
    again = invoke("approve", row.run_id, "--by", "alice", "--runs", runs)
    assert again.exit_code == ExitCode.DECISION_CONFLICT
    assert "not awaiting approval" in flat(again.output)
    unknown = invoke("approve", "nosuchrun", "--runs", runs)
    assert unknown.exit_code == ExitCode.INVALID and "no run 'nosuchrun'" in flat(unknown.output)


def test_reject_from_the_command_line(tmp_path):
    runs = tmp_path / "runs"
    Engine().run(EXAMPLES / "migration.yaml", journal=runs / "m.jsonl", approval=ApprovalPolicy.ASK)
    [row] = RunIndex(runs).runs()
    result = invoke("approve", row.run_id, "--reject", "--by", "bob", "--runs", runs)
    assert result.exit_code == ExitCode.NOT_RUN
    assert RunIndex(runs).runs()[0].status in {"not_run"}


def test_resume_does_not_stand_in_for_the_decision(tmp_path):
    SENT.clear()
    journal = park(tmp_path)
    with pytest.raises(ApprovalError, match="parked awaiting approval"):
        resume(journal, tools=[send_report])
    assert SENT == [] and parked(journal) is not None


def test_an_invalid_edit_is_refused_before_anything_is_written(tmp_path):
    journal = park(tmp_path)
    before = journal.read_bytes()
    plan = parked(journal).plan
    broken = plan.model_copy(
        update={"steps": [plan.steps[0].model_copy(update={"tool": "no_such_tool"})]}
    )
    with pytest.raises(PlanValidationError, match="no_such_tool"):
        decide(journal, Decision("edit", plan=broken, who="x"), tools=[send_report])
    assert journal.read_bytes() == before


def test_a_repair_under_ask_parks_again_and_reuses_what_settled_once_approved(tmp_path):
    """A failed check sends the plan back; the repaired plan waits for a decision too."""
    model = ScriptedLLM(
        [migration_plan("floor", answer="${nights}"), migration_plan("ceil", answer="${nights}")]
    )
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"}, approval="ask")
    journal = park(tmp_path, task, planner=Planner(model))
    first = decide(journal, Decision("approve", who="fay"), planner=Planner(model))
    assert first.status is RunStatus.AWAITING_APPROVAL  # ran, failed a check, repaired, parked
    events = read_journal(journal)
    assert [e.event for e in events.events].count("plan.repair") == 1
    state = parked(journal)
    assert "ceil" in state.plan.steps[-1].args["expression"] and state.diff()["changed"]
    done = decide(journal, Decision("approve", who="fay"), planner=Planner(model))
    assert done.status is RunStatus.VERIFIED and done.answer == "3"
    events = read_journal(journal)
    reused = {e.step for e in events.of_kind("step.reused")}
    assert {"rate", "total", "per_night"} <= reused
    assert [e.who for e in events.of_kind("plan.approved")] == ["fay", "fay"]


def per_step_task() -> Task:
    steps = [
        {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
        {"id": "other", "tool": "calculate", "args": {"expression": "6 * 7"}},
        {"id": "mail", "tool": "send_report", "args": {"text": "nights: ${n}"}},
    ]
    return Task(
        goal="report", plan={"steps": steps, "answer": "${n} ${other}"}, approval="per-step"
    )


def test_per_step_runs_the_read_only_steps_and_only_the_side_effect_waits(tmp_path):
    SENT.clear()
    journal = park(tmp_path, per_step_task())
    events = read_journal(journal)
    assert {e.step for e in events.of_kind("observation")} == {"n", "other"}
    assert SENT == [] and parked(journal).awaiting.side_effects == ["send_report"]
    done = decide(journal, Decision("approve", who="gus"), tools=[send_report])
    assert done.status is RunStatus.VERIFIED and done.answer == "3 42" and SENT == ["nights: 3"]
    events = read_journal(journal)
    assert {e.step for e in events.of_kind("step.reused")} == {"n", "other"}
    assert [e.step for e in events.of_kind("action")].count("n") == 1  # it ran once


def test_per_step_rejected_runs_no_side_effect(tmp_path):
    SENT.clear()
    journal = park(tmp_path, per_step_task())
    result = decide(journal, Decision("reject", who="hal"), tools=[send_report])
    assert result.status is RunStatus.NOT_RUN and SENT == []


def test_an_edit_of_a_grounded_task_is_held_to_the_goal_as_an_edit_at_the_prompt(tmp_path):
    steps = [
        {
            "id": "n",
            "tool": "calculate",
            "args": {"expression": "ceil(${inputs.data} / 962.28 GB)"},
        },
        {"id": "mail", "tool": "send_report", "args": {"text": "nights: ${n}"}},
    ]
    task = Task(
        goal="report the nights for 2500 GB at 962.28 GB a night",
        inputs={"data": {"value": "2500 GB", "quote": "2500 GB"}},
        grounded=True,
        plan={"steps": steps, "answer": "${n}"},
        approval="ask",
    )
    journal = park(tmp_path, task)
    before = journal.read_bytes()
    plan = parked(journal).plan
    made_up = plan.model_copy(
        update={
            "steps": [
                plan.steps[0].model_copy(
                    update={"args": {"expression": "ceil(${inputs.data} / 500 GB)"}}
                ),
                plan.steps[1],
            ]
        }
    )
    with pytest.raises(PlanValidationError, match="500"):
        decide(journal, Decision("edit", plan=made_up, who="x"), tools=[send_report])
    assert journal.read_bytes() == before
