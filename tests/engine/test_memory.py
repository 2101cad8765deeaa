"""Plan memory: a typed goal of a verified goal's shape is answered again with no model call.

Every expected number here is worked out by hand from the goal's words (bytes, seconds,
shares), never taken from what the engine printed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stepgraph import Engine, Planner, Task, tool
from stepgraph.engine import PlanMemory, parked, replay
from stepgraph.journal import read_journal
from stepgraph.model import ApprovalPolicy, RunStatus
from stepgraph.testing import ScriptedLLM

GOAL = (
    "How many nights does it take to move {data} TB over a {link} link, transferring only "
    "from {start} to 06:00, at {use}% utilisation and with {lost}% of the traffic lost to "
    "retries?"
)
FIRST = {"data": "2.5", "link": "450 Mbps", "start": "00:00", "use": "90", "lost": "12"}
OTHER = {"data": "4", "link": "1 Gbps", "start": "22:00", "use": "80", "lost": "5"}
PLAN = """rate: "GB/h" = link
per_night = rate * duration * utilisation * (1 - traffic)
nights = ceil(data / per_night)
assert nights * per_night >= data, "the nights cover the data"
answer = f"{nights} nights ({per_night} per night)"
"""
TOOLS = ["unit_convert", "calculate"]


def _goal(**numbers: str) -> str:
    return GOAL.format(**numbers)


def _task(goal: str) -> Task:
    return Task(name="goal", goal=goal, tools=TOOLS)


def _engine(folder: Path, *answers: str, memory: bool = True) -> tuple[Engine, ScriptedLLM]:
    llm = ScriptedLLM(list(answers))
    engine = Engine(planner=Planner(llm, syntax="lines"), journal_dir=folder, memory=memory)
    return engine, llm


def _kinds(journal: Path) -> list[str]:
    return [event.event for event in read_journal(journal).events]


def _nights_by_hand(tb: float, bits_per_second: float, hours: float, use: float, lost: float):
    per_night_gb = bits_per_second / 8 * hours * 3600 * use * (1 - lost) / 1e9
    return math.ceil(tb * 1000 / per_night_gb), per_night_gb


def test_a_goal_of_the_same_shape_is_answered_with_the_remembered_plan_and_no_model_call(
    tmp_path: Path,
) -> None:
    """Other quantities in the same sentence: the plan is re-bound, run and verified anew."""
    engine, llm = _engine(tmp_path, PLAN)  # one answer: a second model call would fail
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    assert first.status is RunStatus.VERIFIED
    result = engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    nights, per_night = _nights_by_hand(4, 1e9, 8, 0.80, 0.05)
    assert result.status is RunStatus.VERIFIED and result.recalled_from == first.run_id
    assert result.answer.startswith(f"{nights} nights ({per_night:,.0f} GB per night")
    assert len(llm.requests) == 1
    events = read_journal(tmp_path / "second.jsonl").events
    recalled = next(e for e in events if e.event == "plan.recalled")
    assert recalled.from_run == first.run_id
    assert recalled.rebound["link"] == {"was": "450 Mbps", "now": "1 Gbps", "quote": "1 Gbps link"}
    assert recalled.rebound["duration"]["now"] == "8 h"  # 22:00 to 06:00
    proposed = next(e for e in events if e.event == "plan.proposed")
    assert proposed.source == "memory" and proposed.plan_hash == recalled.plan_hash
    assert "llm.request" not in _kinds(tmp_path / "second.jsonl")


def test_the_canonical_numbers_recalled_give_the_canonical_answer(tmp_path: Path) -> None:
    """Remembered from other numbers, the README's question still takes 3 nights."""
    engine, _ = _engine(tmp_path, PLAN)
    engine.run(_task(_goal(**OTHER)), journal=tmp_path / "other.jsonl")
    result = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "canonical.jsonl")
    assert result.status is RunStatus.VERIFIED
    assert result.answer.startswith("3 nights (962.28 GB per night")


@pytest.mark.parametrize(
    ("words", "changed"),
    [
        ("% utilisation", "% loss"),  # a share that means something else
        ("utilisation and with", "utilisation, with"),  # other words between the quantities
        ("lost to retries?", "lost to retries each night?"),  # words more
    ],
)
def test_a_goal_that_differs_in_more_than_its_quantities_is_planned_afresh(
    tmp_path: Path, words: str, changed: str
) -> None:
    """A near-miss sentence is another question: the planner is asked, memory is not used."""
    answer = PLAN.replace("utilisation", "loss") if "loss" in changed else PLAN  # its names
    engine, llm = _engine(tmp_path, PLAN, answer)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    near_miss = _goal(**OTHER).replace(words, changed)
    assert near_miss != _goal(**OTHER)
    engine.run(_task(near_miss), journal=tmp_path / "near.jsonl")
    assert len(llm.requests) == 2
    assert "plan.recalled" not in _kinds(tmp_path / "near.jsonl")


def test_a_plan_that_wrote_a_goal_number_itself_is_never_recalled(tmp_path: Path) -> None:
    """`6 h` typed into a step would stay 6 h for a 22:00 start: refused, the planner asked."""
    copied = PLAN.replace("rate * duration", 'rate * "6 h"').replace(
        "\n", "\nunused(duration, 'same as the window')\n", 1
    )
    fresh = PLAN
    engine, llm = _engine(tmp_path, copied, fresh)
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    if first.status is not RunStatus.VERIFIED:
        pytest.skip("the copied plan did not verify, so there is nothing to recall")
    result = engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    events = read_journal(tmp_path / "second.jsonl").events
    refusal = next(e for e in events if e.event == "plan.recalled")
    assert refusal.plan_hash is None and "00:00 to 06:00" in refusal.refused[0]
    assert len(llm.requests) == 2
    nights, _ = _nights_by_hand(4, 1e9, 8, 0.80, 0.05)
    assert result.status is RunStatus.VERIFIED and result.answer.startswith(f"{nights} nights")


def test_an_unverified_run_is_not_remembered(tmp_path: Path) -> None:
    """A plan whose check failed teaches nothing: the next goal of its shape is planned."""
    wrong = PLAN.replace("ceil(", "floor(")
    engine, llm = _engine(tmp_path, wrong, PLAN)
    engine = Engine(
        planner=Planner(llm, syntax="lines"), journal_dir=tmp_path, memory=True, repair_rounds=0
    )
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    assert first.status is RunStatus.UNVERIFIED
    assert PlanMemory(tmp_path).entries() == []
    engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    assert len(llm.requests) == 2


def test_a_forgotten_or_deleted_run_is_never_recalled(tmp_path: Path) -> None:
    """`forget` is kept across an index rebuild; a deleted journal is gone from memory."""
    engine, llm = _engine(tmp_path, PLAN, PLAN, PLAN)
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    memory = PlanMemory(tmp_path)
    assert [e.run_id for e in memory.entries()] == [first.run_id]
    assert memory.forget(first.run_id)
    (tmp_path / ".index.sqlite3").unlink()  # rebuilt from the journals: still forgotten
    second = engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    assert len(llm.requests) == 2 and second.status is RunStatus.VERIFIED
    (tmp_path / "second.jsonl").unlink()
    assert PlanMemory(tmp_path).entries() == []
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "third.jsonl")
    assert len(llm.requests) == 3


def test_memory_is_rebuilt_from_the_journals_when_its_index_is_gone(tmp_path: Path) -> None:
    """The runs folder is the memory: with the index deleted, the plan is recalled all the same."""
    engine, llm = _engine(tmp_path, PLAN)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    (tmp_path / ".index.sqlite3").unlink()
    other, _ = _engine(tmp_path)  # a new engine, no answers at all
    result = other.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    assert result.status is RunStatus.VERIFIED


def test_a_plan_whose_tool_changed_since_it_verified_is_not_recalled(tmp_path: Path) -> None:
    """The tool's fingerprint differs: the remembered plan would call another tool in effect."""

    @tool
    def shelves_of(count: float) -> float:
        """The number of shelves, as counted."""
        return count

    @tool(name="shelves_of")
    def shelves_changed(count: float, spare: float = 0) -> float:
        """The number of shelves, as counted, plus spare ones."""
        return count + spare

    plan = "n = shelves_of(count=shelves)\ntotal = n * books\nanswer = f'{total} books'"
    goal = "A shelf holds {} books. How many books do {} shelves hold?"
    llm = ScriptedLLM([plan, plan])
    planner = Planner(llm, syntax="lines")
    tools = ["calculate", "shelves_of"]
    first = Engine(tools=[shelves_of], planner=planner, journal_dir=tmp_path, memory=True)
    result = first.run(
        Task(name="goal", goal=goal.format(12, 3), tools=tools), journal=tmp_path / "a.jsonl"
    )
    assert result.status is RunStatus.VERIFIED, result.answer
    same = Engine(tools=[shelves_of], planner=planner, journal_dir=tmp_path, memory=True)
    same.run(Task(name="goal", goal=goal.format(10, 4), tools=tools), journal=tmp_path / "b.jsonl")
    assert len(llm.requests) == 1  # unchanged: recalled
    changed = Engine(tools=[shelves_changed], planner=planner, journal_dir=tmp_path, memory=True)
    changed.run(
        Task(name="goal", goal=goal.format(20, 5), tools=tools), journal=tmp_path / "c.jsonl"
    )
    assert len(llm.requests) == 2
    refusal = next(
        e for e in read_journal(tmp_path / "c.jsonl").events if e.event == "plan.recalled"
    )
    assert "shelves_of" in refusal.refused[0]


def test_a_recalled_run_replays_identically(tmp_path: Path) -> None:
    """The journal alone replays it: the recalled plan comes from the record, not from memory."""
    engine, _ = _engine(tmp_path, PLAN)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    (tmp_path / "first.jsonl").unlink()  # the memory it came from is gone: the record suffices
    report = replay(tmp_path / "second.jsonl", out=tmp_path / "replayed.jsonl")
    assert report.identical, report.divergences or report.error
    assert "plan.recalled" in _kinds(tmp_path / "replayed.jsonl")


def test_a_recalled_plan_that_does_not_verify_falls_back_to_a_fresh_plan(tmp_path: Path) -> None:
    """A plan check true of the old numbers and false of the new: the planner plans afresh."""
    bounded = PLAN.replace(
        "assert nights",
        'assert per_night <= data, "a night moves at most all of it"\nassert nights',
    )
    engine, llm = _engine(tmp_path, bounded, PLAN)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    small = {**OTHER, "data": "0.5"}  # 500 GB, less than one night's 2,736 GB
    result = engine.run(_task(_goal(**small)), journal=tmp_path / "second.jsonl")
    kinds = _kinds(tmp_path / "second.jsonl")
    assert kinds.index("plan.recalled") < kinds.index("llm.request") < kinds.index("plan.repair")
    assert llm.requests[-1][0]["role"] == "system"  # asked to plan, not to repair the recalled one
    assert "Goal:" in llm.requests[-1][1]["content"]
    assert result.status is RunStatus.VERIFIED and result.answer.startswith("1 nights")


def test_a_recalled_plan_passes_the_approval_gate_and_says_where_it_came_from(
    tmp_path: Path,
) -> None:
    """Approval still applies: parked for a person, the review names the run it came from."""
    engine, _ = _engine(tmp_path, PLAN)
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    journal = tmp_path / "second.jsonl"
    result = engine.run(_task(_goal(**OTHER)), journal=journal, approval=ApprovalPolicy.ASK)
    assert result.status is RunStatus.AWAITING_APPROVAL
    waiting = parked(journal, review_only=True)
    assert waiting is not None
    view = waiting.view()
    assert first.run_id in view.origin and "450 Mbps -> 1 Gbps" in view.origin


def test_nearest_remembered_plans_become_the_worked_examples(tmp_path: Path) -> None:
    """Another question with shared words: the planner is shown the remembered plan first."""
    engine, llm = _engine(tmp_path, PLAN, PLAN)
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    other_goal = (
        "How many nights does it take to move 2.5 TB over a 450 Mbps link, transferring only "
        "from 00:00 to 06:00, at 90% utilisation and with 12% of the traffic lost to retries, "
        "on a shared line?"
    )
    engine.run(_task(other_goal), journal=tmp_path / "second.jsonl")
    system = llm.requests[1][0]["content"]
    example = system[system.index("Example 1") :]
    assert example.split("\n")[1] == f"Goal: {_goal(**FIRST)}"
    shown = [
        e for e in read_journal(tmp_path / "second.jsonl").events if e.event == "plan.examples"
    ]
    assert [item["run_id"] for item in shown[0].examples] == [first.run_id]
    report = replay(tmp_path / "second.jsonl", out=tmp_path / "replayed.jsonl")
    assert report.identical, report.divergences or report.error


def test_without_memory_every_goal_is_planned(tmp_path: Path) -> None:
    """`memory=False` (the library's default): no recall, no remembered examples."""
    engine, llm = _engine(tmp_path, PLAN, PLAN, memory=False)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    engine.run(_task(_goal(**OTHER)), journal=tmp_path / "second.jsonl")
    assert len(llm.requests) == 2
    assert "Example 1\nGoal: 3 people" in llm.requests[1][0]["content"]


OTHER_WORDS = (
    "How many nights does it take to move 2.5 TB over a 450 Mbps link, transferring only "
    "from 00:00 to 06:00, at 90% utilisation and with 12% of the traffic lost to retries, "
    "on a shared line?"
)


def test_the_cross_checks_other_plan_is_shown_the_same_remembered_examples(tmp_path: Path):
    """Not the first plan (never shown), but the remembered plans of other goals the first
    plan was shown: with the fixed examples only, a small model wrote no valid second plan
    for a transfer goal the first plan had right (suite, 2026-12-05)."""
    llm = ScriptedLLM([PLAN] * 4)  # each run: its plan, then the cross-check's
    planner = Planner(llm, syntax="lines")
    engine = Engine(planner=planner, journal_dir=tmp_path, memory=True, cross_check=True)
    first = engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    result = engine.run(_task(OTHER_WORDS), journal=tmp_path / "second.jsonl")
    assert result.status is RunStatus.VERIFIED and result.answer.startswith("3 nights")
    asked = read_journal(tmp_path / "second.jsonl").of_kind("llm.request")
    assert [event.purpose for event in asked] == ["plan", "cross"]
    cross = llm.requests[-1]
    example = cross[0]["content"][cross[0]["content"].index("Example 1") :]
    assert example.split("\n")[1] == f"Goal: {_goal(**FIRST)}", example[:200]
    assert first.run_id in str(read_journal(tmp_path / "second.jsonl").of_kind("plan.examples"))
    report = replay(tmp_path / "second.jsonl", out=tmp_path / "replayed.jsonl")
    assert report.identical, report.divergences or report.error


def test_a_fresh_plan_is_shown_the_examples_the_first_request_showed(tmp_path: Path):
    """`retry_with="fresh"` asks the first request again: with its remembered examples."""
    engine, _ = _engine(tmp_path, PLAN)
    engine.run(_task(_goal(**FIRST)), journal=tmp_path / "first.jsonl")
    remembered = PlanMemory(tmp_path).nearest(OTHER_WORDS, 2)
    prepared = Engine().prepare(_task(OTHER_WORDS))
    failed = Planner(ScriptedLLM([PLAN]), syntax="lines").plan(prepared)
    llm = ScriptedLLM([PLAN])
    fresh = Planner(llm, syntax="lines", retry_with="fresh")
    fresh.repair_checked(prepared, failed, {}, ["a check failed"], examples=remembered)
    system = llm.requests[0][0]["content"]
    assert system[system.index("Example 1") :].split("\n")[1] == f"Goal: {_goal(**FIRST)}"
