"""Real-model runs helped by plan memory, replayed offline by today's engine.

Each journal in recorded_memory/ is a goal of examples/eval/suite.yaml that the 1.5B model
(Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama-server, 2026-12-05) answered with plan memory
on (`stepgraph eval --memory --cross-check`, `STEPGRAPH_PROGRAM_ONLY=auto`): memory held a
person's plan for another transfer goal (examples/memory/transfer-seed.yaml) and the
suite's goals verified before it. Its first plan and the cross-check's other plan were shown
those remembered plans as examples; both agreed, and the answer is the suite's. Replay
takes the examples from the record, so each run must come out identical today.
"""

from pathlib import Path

import pytest

from stepgraph.engine import replay
from stepgraph.evaluation import load_suite
from stepgraph.evaluation._correct import text_matches
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES

RECORDED = sorted((Path(__file__).parent / "recorded_memory").glob("*.jsonl"))


@pytest.mark.parametrize("path", RECORDED, ids=[path.stem for path in RECORDED])
def test_a_memory_helped_real_run_replays_identically_and_verified_right(path, tmp_path):
    suite = load_suite(EXAMPLES / "eval" / "suite.yaml")
    [goal] = [goal for goal in suite.goals if goal.id == path.stem]
    journal = read_journal(path)
    assert journal.of_kind("plan.examples"), "a run memory gave examples to"
    asked = [event.purpose for event in journal.of_kind("llm.request")]
    (cross,) = [c for c in journal.of_kind("check") if c.kind == "cross_check"]
    # another plan, shown the same examples, agreed; or the plan is the goal's one
    # quantity converted into the unit asked, which has no other route (tib-to-gb and
    # rate-mbs-to-mbps: recorded with a second plan, replayed without it since)
    assert "cross" in asked or "no other route to compare" in cross.description
    assert cross.passed
    report = replay(path, out=tmp_path / "replayed.jsonl")
    assert report.identical, report.divergences or report.error
    replayed = read_journal(tmp_path / "replayed.jsonl")
    (end,) = replayed.of_kind("run.end")
    assert end.status == "verified"
    (answer,) = replayed.of_kind("answer")
    assert text_matches(goal.expected(), answer.text, suite.tolerance_of(goal)), answer.text
