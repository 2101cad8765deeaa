"""benchmarks/rejudge.py: recorded replies judged again with a method's own settings."""

import json

from benchmarks.rejudge import rejudge

from tests.engine.test_cross_worked_code import GOAL, PLAN_322, PROGRAM_322


def test_a_recorded_method_is_replayed_with_the_route_asked_for(tmp_path):
    case = {
        "id": "kangaroos",
        "question": GOAL,
        "expected": "322",
        "verified": False,
        "correct": True,
        "replies": [{"content": PLAN_322}, {"content": PROGRAM_322}],
    }
    (tmp_path / "kangaroos.worked.json").write_text(json.dumps(case), encoding="utf-8")
    (tmp_path / "other.stepgraph.json").write_text(json.dumps(case), encoding="utf-8")
    [words] = rejudge(tmp_path, "json", method="worked", cross_route="worked")
    [code] = rejudge(tmp_path, "json", method="worked", cross_route="worked-code")
    assert (words["now_status"], words["now_correct"]) == ("unverified", True)
    assert (code["now_verified"], code["now_correct"]) == (True, True)
    assert code["then_verified"] is False  # the record's outcome, beside today's
