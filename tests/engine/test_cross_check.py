"""The cross-check: a verified run must be reproduced by a second, independent plan."""

import json

import pytest

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.engine import replay
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM

GOAL = "Apples are packed 24 to a crate. How many full crates can be packed from 1,000 apples?"


def _plan(expression, answer="${crates} crates"):
    steps = [{"id": "crates", "tool": "calculate", "args": {"expression": expression}}]
    return json.dumps({"steps": steps, "answer": answer})


def _step(name, expression, unit=None):
    return {"id": name, "tool": "calculate", "args": {"expression": expression}} | (
        {"expect_unit": unit} if unit else {}
    )


DOWNLOAD = "How long does it take to download a 350 MB file over a 20 Mbps connection?"


def _run(tmp_path, responses, name="j.jsonl"):
    model = ScriptedLLM(responses)
    engine = Engine(planner=Planner(model), cross_check=True)
    result = engine.run(Task(goal=GOAL), journal=tmp_path / name)
    return result, model, read_journal(tmp_path / name)


def test_two_routes_that_agree_verify_the_run(tmp_path):
    result, model, journal = _run(
        tmp_path, [_plan("floor(1000 / 24)"), _plan("(1000 - 1000 % 24) / 24")]
    )
    assert result.status is RunStatus.VERIFIED and result.answer == "41 crates"
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.passed and cross.values == {"first": "41", "second": "41"}
    assert len(model.requests) == 2
    assert "x_crates" in [e.step for e in journal.of_kind("observation")]  # told apart
    assert "route of your own" in model.requests[1][-1]["content"]
    assert "floor(1000 / 24)" not in json.dumps(model.requests[1])  # the first plan is not shown


def test_a_wrong_plan_that_verifies_on_its_own_is_caught_by_a_second_route(tmp_path):
    """A real model used ceil for full crates: 42, and every check of that plan passed.

    The repair round is shown the second plan and its values; a model that keeps its
    wrong plan leaves the run unverified, with no answer, and is not asked again.
    """
    wrong = _plan("ceil(1000 / 24)")
    result, model, journal = _run(tmp_path, [wrong, _plan("floor(1000 / 24)"), wrong])
    assert result.status is RunStatus.UNVERIFIED
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert not cross.passed and "disagrees: 41 against 42" in cross.description
    assert result.answer.startswith("no answer:") and "cross_check" in result.answer
    assert len(model.requests) == 3  # plan, second plan, one repair that changed nothing
    repair_request = model.requests[2][-1]["content"]
    assert "the second plan was:" in repair_request and "floor(1000 / 24)" in repair_request
    assert "x_crates = 41" in repair_request
    assert journal.of_kind("plan.repair") == []


def test_a_disagreement_repaired_verifies_against_the_same_second_plan(tmp_path):
    right = _plan("floor(1000 / 24)")
    result, model, _ = _run(tmp_path, [_plan("ceil(1000 / 24)"), right, right])
    assert result.status is RunStatus.VERIFIED and result.answer == "41 crates"
    crosses = [v for v in result.verdicts if v.kind == "cross_check"]
    assert crosses[-1].passed and "now agrees with the second plan" in crosses[-1].description
    assert len(model.requests) == 3  # plan, second plan, repair: no third plan asked for


def test_no_second_plan_means_not_verified(tmp_path):
    result, _, _ = _run(tmp_path, [_plan("floor(1000 / 24)"), "no", "plan", "here"])
    assert result.status is RunStatus.UNVERIFIED
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.description.startswith("no second plan to compare with")


def test_a_second_plan_that_cannot_be_made_is_followed_by_another_try(tmp_path):
    """A small model's invalid second plan is not the end: the next one that verifies decides."""
    responses = [_plan("floor(1000 / 24)"), "no", "plan", "here", _plan("(1000 - 1000 % 24) / 24")]
    result, model, journal = _run(tmp_path, responses)
    assert result.status is RunStatus.VERIFIED and result.answer == "41 crates"
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.passed and "after 1 other plan(s) that could not be compared" in cross.description
    assert "x2_crates" in [e.step for e in journal.of_kind("observation")]
    assert len(model.requests) == 5
    report = replay(journal.path, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences


def test_the_cross_check_asks_a_bounded_number_of_plans(tmp_path):
    """Three other plans at most, each given the planner's attempts: then unverified."""
    result, model, _ = _run(tmp_path, [_plan("floor(1000 / 24)"), *["no plan"] * 20])
    assert result.status is RunStatus.UNVERIFIED
    assert len(model.requests) == 1 + 3 * 3


def test_a_cross_checked_run_replays_identically(tmp_path):
    _, _, journal = _run(tmp_path, [_plan("floor(1000 / 24)"), _plan("(1000 - 1000 % 24) / 24")])
    report = replay(journal.path, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences


def test_a_task_can_ask_for_the_cross_check(tmp_path):
    model = ScriptedLLM([_plan("floor(1000 / 24)"), _plan("(1000 - 1000 % 24) / 24")])
    task = Task(goal=GOAL, cross_check=True)
    result = Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    assert [v.kind for v in result.verdicts if v.kind == "cross_check"] == ["cross_check"]


def test_final_values_that_are_records_compare_as_equal_or_not(tmp_path):
    """A real model's two plans both ended on a lookup's record: compared, not a crash."""
    from stepgraph import tool

    @tool
    def find(name: str) -> dict:
        """Find a company by name."""
        return {"id": 42, "name": name}

    step = json.dumps({"steps": [{"id": "c", "tool": "find", "args": {"name": "Acme"}}]})
    model = ScriptedLLM([step, step, "Acme is company 42."])  # plan, second plan, answer
    engine = Engine(tools=[find], planner=Planner(model), cross_check=True)
    result = engine.run(Task(goal="Which company is Acme?"), journal=tmp_path / "j.jsonl")
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.passed


def test_an_endpoint_that_fails_is_not_asked_again_for_another_plan(tmp_path):
    """A timeout or an HTTP error is the endpoint's, not the plan's: one try, then unverified."""
    result, model, _ = _run(tmp_path, [_plan("floor(1000 / 24)")])  # nothing for a 2nd plan
    assert result.status is RunStatus.UNVERIFIED
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.description.startswith("no second plan to compare with: no plan (")
    assert len(model.requests) == 2


def _conversion_run(goal, lines, tmp_path, answers=()):
    llm = ScriptedLLM([lines, *answers])
    planner = Planner(llm, syntax="lines", numbered_names=True, plan_retries=0)
    path = tmp_path / "run.jsonl"
    result = Engine(planner=planner, cross_check=True).run(Task(name="c", goal=goal), journal=path)
    return result, read_journal(path), llm


@pytest.mark.parametrize(
    ("goal", "lines", "expected"),
    [
        # the suite's unit traps, as the 1.5B model planned them (a slipped factor dropped)
        ("How many GB is 2 TiB?", 'gb: "GB" = data * 1024', 2199.023255552),
        ("A disk writes 250 MB/s. What is that in Mbps?", 'rate: "Mbps" = rate / 1024', 2000),
        ("A job takes 135 minutes. How many hours?", 'h = unit_convert(duration, "h")', 2.25),
    ],
)  # fmt: skip
def test_the_goal_s_one_quantity_converted_into_the_unit_asked_has_no_other_route(
    goal, lines, expected, tmp_path
):
    name = lines.split(" ")[0].rstrip(":")
    result, journal, llm = _conversion_run(goal, f'{lines}\nanswer = f"{{{name}}}"', tmp_path)
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.values[name].magnitude == pytest.approx(expected)
    assert len(llm.requests) == 1  # no other plan asked for
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.passed and "no other route to compare" in cross.description


@pytest.mark.parametrize(
    ("goal", "lines"),
    [
        # into another unit than the one asked: which unit was meant is the model's reading
        ("How many GB is 2 TiB?", 'mb = unit_convert(data, "MB")'),
        # two steps: a route of its own, cross-checked as before
        ("How many GB is 2 TiB?", 'gb = unit_convert(data, "GB")\ntwice = gb * 1'),
        # a copy under a declared unit: no reverse check ran, so nothing would be checked
        ("A job takes 135 minutes. How many hours?", 'h: "h" = duration'),
    ],
)
def test_anything_more_than_that_one_conversion_is_cross_checked(goal, lines, tmp_path):
    last = lines.split("\n")[-1].split(" ")[0]
    result, journal, llm = _conversion_run(
        goal, f'{lines}\nanswer = f"{{{last}}}"', tmp_path, answers=["no plan"] * 9
    )
    assert result.status is not RunStatus.VERIFIED
    assert [e.purpose for e in journal.of_kind("llm.request")][1] == "cross"


def test_the_value_compared_is_the_one_the_answer_reports_not_the_plan_s_last_step(tmp_path):
    """A new user's download question (Qwen2.5-Coder-1.5B, 2026-12-06): the first plan ended
    on `speed = connection`, which its answer only mentions, and "20 Mbps against 140 s"
    was called a disagreement of two plans that both said 140 s."""
    goal = DOWNLOAD

    time = _step("time", "350 MB / (20 Mbps)", "s")
    first = {"steps": [time, _step("speed", "20 Mbps")], "answer": "${time} at ${speed}"}
    second = {"steps": [_step("t", "350 MB / (20 Mbps)", "s")], "answer": "${t}"}
    twice = _step("t", "350 MB / (20 Mbps) + 350 MB / (20 Mbps)", "s")
    wrong = {"steps": [twice], "answer": "${t}"}
    model = ScriptedLLM([json.dumps(first), json.dumps(second)])
    result = Engine(planner=Planner(model), cross_check=True).run(
        Task(goal=goal), journal=tmp_path / "j.jsonl"
    )
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert cross.passed and cross.values == {"first": "140 s", "second": "140 s"}
    assert result.status is RunStatus.VERIFIED and result.answer == "140 s at 20 Mbps"
    model = ScriptedLLM([json.dumps(first), json.dumps(wrong), json.dumps(first)])
    result = Engine(planner=Planner(model), cross_check=True).run(
        Task(goal=goal), journal=tmp_path / "k.jsonl"
    )
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert not cross.passed and "280 s against 140 s" in cross.description


def test_an_answer_that_leads_with_a_number_both_plans_share_still_holds_its_other_numbers(
    tmp_path,
):
    """An attack on comparing the answer's first value: lead with the link's speed, which any
    plan reproduces, and put a wrong time after it. The time must be among the other plan's
    times, so the run is not verified."""
    goal = DOWNLOAD

    twice = _step("time", "350 MB / (20 Mbps) + 350 MB / (20 Mbps)", "s")
    first = {"steps": [_step("speed", "20 Mbps"), twice], "answer": "${speed}: ${time}"}
    right = _step("t", "350 MB / (20 Mbps)", "s")
    second = {"steps": [_step("link", "20 Mbps"), right], "answer": "${link}, ${t}"}
    model = ScriptedLLM([json.dumps(first), json.dumps(second), json.dumps(first)])
    result = Engine(planner=Planner(model), cross_check=True).run(
        Task(goal=goal), journal=tmp_path / "j.jsonl"
    )
    assert result.status is not RunStatus.VERIFIED
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    assert not cross.passed and "280 s" in cross.description
