"""Planning and repair through the scripted model: bounded loops, reuse of unchanged steps."""

import json
from collections import Counter

import pytest

from stepgraph import (
    Engine,
    PlannerNotConfiguredError,
    PlanningError,
    RunStatus,
    Task,
    replay,
    tool,
)
from stepgraph.journal import read_journal
from stepgraph.planner import Planner
from stepgraph.testing import ScriptedLLM
from tests.planner.conftest import migration_plan

GOAL = Task(
    name="goal", goal="Nights to move the data", inputs={"data": "2.5 TB", "link": "450 Mbps"}
)


def run(responses, tmp_path, tools=(), task=GOAL, **engine_options):
    model = ScriptedLLM(responses)
    engine = Engine(tools=tools, planner=Planner(model), **engine_options)
    path = tmp_path / "j.jsonl"
    return engine.run(task, journal=path), read_journal(path), model


def actions_per_step(journal):
    return Counter(event.step for event in journal.of_kind("action"))


def test_a_failed_check_is_repaired_and_unchanged_steps_are_not_run_again(tmp_path):
    """floor() instead of ceil() fails the coverage check; the repair changes only 'nights'."""
    answer = "${nights} nights"
    result, journal, model = run(
        [migration_plan("floor", answer=answer), migration_plan("ceil", answer=answer)], tmp_path
    )
    assert result.status is RunStatus.VERIFIED
    assert result.answer == "3 nights"
    assert actions_per_step(journal) == {"rate": 1, "total": 1, "per_night": 1, "nights": 2}
    assert result.reused == ["per_night", "rate", "total"]
    [repair] = journal.of_kind("plan.repair")
    assert repair.diff["changed"] == {
        "nights": {
            "args": [
                {"expression": "floor(${total} / ${per_night})"},
                {"expression": "ceil(${total} / ${per_night})"},
            ]
        }
    }
    repair_request = model.requests[1][-1]["content"]
    assert "verification failed (check): ${nights} * ${per_night} >= ${total}" in repair_request
    assert "- nights: 2" in repair_request


def test_a_failed_step_is_repaired(tmp_path):
    calls = []

    @tool
    def lookup_rate(link: str) -> str:
        """The contracted rate of a named link."""
        calls.append(link)
        if link != "primary":
            raise LookupError(f"no link named {link!r}; known: primary")
        return "450 Mbps"

    def plan(link):
        return json.dumps(
            {
                "steps": [
                    {"id": "rate_text", "tool": "lookup_rate", "args": {"link": link}},
                    {
                        "id": "rate",
                        "tool": "unit_convert",
                        "args": {"value": "${rate_text}", "to_unit": "MB/s"},
                    },
                ],
                "answer": "${rate}",
            }
        )

    result, journal, model = run([plan("main"), plan("primary")], tmp_path, tools=[lookup_rate])
    assert result.status is RunStatus.VERIFIED
    assert result.answer == "56.25 MB/s"
    assert calls == ["main", "primary"]
    assert (
        "step 'rate_text' failed: LookupError: no link named 'main'"
        in model.requests[1][-1]["content"]
    )


def test_the_same_failing_call_is_refused_after_two_runs(tmp_path):
    """The loop guard: a planner that keeps asking for the same broken call is stopped."""
    calls = []

    @tool
    def always_fails(x: int) -> int:
        """Fail every time."""
        calls.append(x)
        raise RuntimeError("broken backend")

    same = json.dumps({"steps": [{"id": "a", "tool": "always_fails", "args": {"x": 1}}]})
    result, journal, _ = run([same, same, same], tmp_path, tools=[always_fails], repair_rounds=2)
    assert calls == [1, 1]
    assert result.status is RunStatus.STEP_FAILED
    last = [e for e in journal.of_kind("observation")][-1]
    assert last.error == "refused: this call already ran 2 times without success"
    assert len(journal.of_kind("plan.repair")) == 2


def test_a_refused_call_after_a_reused_step_is_not_run_all_the_same(tmp_path):
    """Held-out GSM8K 1016: the loop guard refused the call, and it ran a third time anyway,
    for the reused step before it had queued it; the journal then held two observations of
    the step, and its replay diverged."""
    calls = []

    @tool
    def always_fails(x: int) -> int:
        """Fail every time."""
        calls.append(x)
        raise RuntimeError("broken backend")

    steps = [
        {"id": "x", "tool": "calculate", "args": {"expression": "1"}},
        {"id": "a", "tool": "always_fails", "args": {"x": "${x}"}},
    ]
    same = json.dumps({"steps": steps, "answer": "${a}"})
    result, journal, _ = run([same, same, same], tmp_path, tools=[always_fails], repair_rounds=2)
    assert calls == [1, 1]
    assert result.status is RunStatus.STEP_FAILED
    errors = [e.error for e in journal.of_kind("observation") if e.step == "a"]
    assert errors == ["RuntimeError: broken backend"] * 2 + [
        "refused: this call already ran 2 times without success"
    ]
    assert actions_per_step(journal)["a"] == 2
    report = replay(tmp_path / "j.jsonl", tools=[always_fails])
    assert report.identical, [str(d) for d in report.divergences]


def test_repair_rounds_are_bounded(tmp_path):
    bad = migration_plan("floor", answer="${nights} nights")
    result, journal, model = run([bad, bad], tmp_path, repair_rounds=1)
    assert result.status is RunStatus.UNVERIFIED
    assert len(model.requests) == 2 and len(journal.of_kind("plan.repair")) == 1


def test_the_planner_gives_up_after_its_retries_and_keeps_every_attempt(tmp_path):
    bad = json.dumps({"steps": [{"id": "a", "tool": "web_search", "args": {}}]})
    model = ScriptedLLM([bad, bad, bad])
    engine = Engine(planner=Planner(model, plan_retries=2))
    path = tmp_path / "j.jsonl"
    with pytest.raises(PlanningError, match="no valid plan in 3 attempts") as error:
        engine.run(GOAL, journal=path)
    assert "unknown tool 'web_search'" in str(error.value)
    journal = read_journal(path)
    assert len(journal.of_kind("llm.request")) == 3
    assert [e.attempt for e in journal.of_kind("plan.invalid")] == [1, 2, 3]
    assert journal.of_kind("run.end")[0].status == "invalid"


def test_without_a_planner_a_goal_only_task_names_three_ways_forward():
    with pytest.raises(PlannerNotConfiguredError) as error:
        Engine().run(GOAL)
    message = str(error.value)
    assert "OPENAI_BASE_URL" in message and "'plan:'" in message and "--scripted" in message


def test_an_answer_with_a_number_no_step_produced_is_flagged(tmp_path):
    result, _, _ = run([migration_plan(), "3 nights [nights], about 7 hours each."], tmp_path)
    [verdict] = [v for v in result.verdicts if v.kind.value == "answer"]
    assert not verdict.passed and verdict.values["7"] == "untraced"
    assert verdict.values["3"] == "nights"
    assert result.status is RunStatus.UNVERIFIED


def test_the_scripted_model_records_what_it_was_asked_and_refuses_to_improvise():
    model = ScriptedLLM(["one"])
    assert model.complete([{"role": "user", "content": "hi"}]).text == "one"
    assert model.requests == [[{"role": "user", "content": "hi"}]]
    with pytest.raises(Exception, match="only 1 responses and was asked for response 2"):
        model.complete([{"role": "user", "content": "again"}])


def test_a_fresh_repair_asks_from_the_goal_alone_and_its_plan_still_must_verify(tmp_path):
    """`retry_with="fresh"`: the failed plan and its failure are not shown, so not copied."""
    answer = "${nights} nights"
    floor, ceil = migration_plan("floor", answer=answer), migration_plan("ceil", answer=answer)
    model = ScriptedLLM([floor, ceil])
    engine = Engine(planner=Planner(model, retry_with="fresh"))
    result = engine.run(GOAL, journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.VERIFIED
    assert result.answer == "3 nights"
    first, repair = model.requests
    assert repair[0] == first[0]  # the same system prompt: a server's cache keeps it
    asked = repair[-1]["content"]
    assert asked.startswith(first[-1]["content"])
    assert "floor(" not in asked and "verification failed" not in asked
    assert "did not pass its checks" in asked


def test_fresh_repairs_that_fail_too_end_unverified_with_the_last_failure(tmp_path):
    floor = migration_plan("floor", answer="${nights} nights")
    model = ScriptedLLM([floor, floor, floor])
    engine = Engine(planner=Planner(model, retry_with="fresh"), repair_rounds=2)
    result = engine.run(GOAL, journal=tmp_path / "j.jsonl")
    assert result.status is not RunStatus.VERIFIED
    assert len(model.requests) == 3
    failed = [v.description for v in result.verdicts if not v.passed]
    assert any(d.startswith("${nights} * ${per_night} >= ${total}") for d in failed), failed
    assert result.answer.startswith("no answer: verification failed")


def test_an_argument_no_float_holds_is_fed_back_and_the_next_plan_runs(tmp_path):
    # The same in a JSON plan: a 400-digit value given to unit_convert raised OverflowError
    # in the static checks (every check compares arguments as floats).
    huge = (
        '{"steps": [{"id": "rate", "tool": "unit_convert", "args": {"value": 1%s, ' % ("0" * 400)
        + '"from_unit": "Mbps", "to_unit": "MB/s"}}]}'
    )
    plan = migration_plan(answer="${nights} nights")
    result, journal, model = run([huge, plan], tmp_path)
    assert result.status is RunStatus.VERIFIED and result.answer == "3 nights"
    feedback = model.requests[1][-1]["content"]
    assert "(401 characters) is too large to compute with" in feedback
