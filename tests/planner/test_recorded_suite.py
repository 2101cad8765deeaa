"""The project's suite as a small real model answered it, replayed offline with the preset.

Each file in recorded_suite/ is one goal of `examples/eval/suite.yaml` from a live run
(2026-12-07: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama-server, `STEPGRAPH_PRESET=
small-model`, `benchmarks/small_model.py --suite ... --record`): every reply the model
gave, with what it was asked for. Played back through today's engine with the preset's
settings, each goal ends as it did live (verified or not), never verified wrong, never an
internal error. Among them: `pool-requests`, whose program and a second sample of the words
in prose agreed after the first words disagreed (an agreement after a disagreement: right,
unverified), and `sprint-person-hours`, whose second sample's own code backed it (verified).
"""

import json
from pathlib import Path

import pytest

from stepgraph import Engine, Planner
from stepgraph.evaluation import load_suite, run_goal
from stepgraph.planner import PlannerSettings
from tests.conftest import EXAMPLES
from tests.planner._recordings import RecordedModel

SUITE = EXAMPLES / "eval" / "suite.yaml"
CASES = sorted((Path(__file__).parent / "recorded_suite").glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_a_recorded_suite_goal_ends_as_it_did_live(path, tmp_path):
    case = json.loads(path.read_text(encoding="utf-8"))
    suite = load_suite(SUITE)
    [goal] = [goal for goal in suite.goals if goal.id == case["id"]]
    settings = PlannerSettings(preset="small-model").planner_arguments()
    planner = Planner(RecordedModel(case["replies"]), **settings)
    engine = Engine(planner=planner, cross_check=True)
    outcome = run_goal(suite, goal, engine, SUITE.parent, tmp_path / "run.jsonl")
    assert not outcome.verified_wrong, (outcome.answer, goal.expect)
    assert outcome.error_kind != "internal", outcome.error
    assert outcome.verified is (case["live"] == "verified"), (outcome.status, outcome.answer)
    assert outcome.correct is case["correct"], outcome.answer


def test_the_whole_suite_is_recorded():
    assert {path.stem for path in CASES} == {goal.id for goal in load_suite(SUITE).goals}
