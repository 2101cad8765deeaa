"""Real answers of a small model to GSM8K questions, replayed offline: never verified wrong.

Each file in recorded_gsm8k/ is a case `benchmarks/small_model.py --record` wrote: the
question (GSM8K, MIT licence), its expected number and every reply the model
(Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp) gave, in order, with the plan syntax it
was asked for. Played back through today's planner and engine, a run may be unverified or
fail; it is never verified with another answer, and never an internal error. A case the
engine still verifies wrong says why (`known_wrong`) and is a strict xfail: fixed, it fails
until the mark goes. A case recorded with ``cross_route: worked`` (the cross-check by the
model's own worked answer) replays with it; ``caught_by_worked_answer`` marks a wrong plan
that passed every check of its own and that only the words caught; ``retry_with: fresh``
replays a run whose refused plans were asked for again without feedback; ``program_first``
one whose first request was for the model's own program, ``program_only`` one that asked
for programs and no plan (``afresh_on_disagreement``, ``second_words``: what it asked
after a disagreement); ``unverified_but_right`` one whose live run verified by a route
that verifies no more (it says why), its right answer kept apart, unverified.

Replies are served by what is asked: a request for a program gets the next recorded
program, one for the worked answer the next worked answer, any other the next of the rest
(older recordings, which name no purpose, in their order). A change that makes an earlier
request enough (a program the engine now reads) so replays what the model said to each
request, instead of handing a plan to a request for words.
"""

import json
from pathlib import Path

import pytest

from stepgraph import Engine, Planner
from stepgraph.evaluation import Suite, run_goal
from stepgraph.testing import ScriptedLLM
from tests.planner._recordings import RecordedModel

CASES = sorted((Path(__file__).parent / "recorded_gsm8k").glob("*.json"))


def _suite(case: dict) -> Suite:
    goal = {"id": case["id"], "goal": case["question"], "expect": case["expected"]}
    return Suite(name="recorded", tolerance=1e-9, goals=[goal])


def _case(path: Path) -> object:
    """A case; one the engine still verifies wrong says why (`known_wrong`) and is xfail."""
    why = json.loads(path.read_text(encoding="utf-8")).get("known_wrong")
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_case(path) for path in CASES])
def test_a_recorded_gsm8k_answer_is_never_verified_when_it_is_wrong(path, tmp_path):
    case = json.loads(path.read_text(encoding="utf-8"))
    route = case.get("cross_route")  # "worked": the run was cross-checked by the words
    replies = case["replies"]
    # older recordings name no purpose: their replies are served in the order given
    by_kind = all("purpose" in reply for reply in replies)
    model = RecordedModel(replies) if by_kind else ScriptedLLM([r["content"] for r in replies])
    planner = Planner(
        model,
        plan_retries=2,
        syntax=case.get("syntax", "lines"),
        cross_route=route or "plan",
        numbered_names=bool(case.get("numbered_names")),
        retry_with=case.get("retry_with", "feedback"),
        program_first=bool(case.get("program_first")),
        program_only=bool(case.get("program_only")),
        afresh_on_disagreement=bool(case.get("afresh_on_disagreement")),
        second_words=bool(case.get("second_words")),
    )
    suite = _suite(case)
    engine = Engine(planner=planner, cross_check=route is not None)
    outcome = run_goal(suite, suite.goals[0], engine, tmp_path, tmp_path / "r.jsonl")
    assert not outcome.verified_wrong, (outcome.answer, outcome.expected)
    assert outcome.error_kind != "internal", outcome.error
    if case.get("verified_correct"):  # what the real run got right stays right
        assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    if case.get("unverified_but_right"):  # verified once, by a route that verifies no more
        assert not outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    if case.get("caught_by_worked_answer"):  # a wrong plan every own check passed
        assert "worked answer, in words, disagrees" in (outcome.answer or ""), outcome.answer


def test_the_recorded_cases_are_there():
    assert len(CASES) >= 1
