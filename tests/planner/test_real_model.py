"""Against a real model, when one is named: STEPGRAPH_REAL_LLM=http://127.0.0.1:8765/v1.

CI does not build a model server, so this is skipped there; `benchmarks/real_model.sh`
builds one and runs the whole suite. What a real model answered is kept offline in
tests/planner/recorded/ (test_recorded_answers.py).
"""

import json
import os

import pytest

from tests.conftest import EXAMPLES, invoke

REAL_LLM = os.environ.get("STEPGRAPH_REAL_LLM")


@pytest.mark.real_llm
@pytest.mark.skipif(
    not REAL_LLM,
    reason="no real model: set STEPGRAPH_REAL_LLM to an OpenAI-compatible URL (and "
    "STEPGRAPH_MODEL), e.g. a llama.cpp server started by benchmarks/real_model.sh",
)
def test_a_real_model_answers_a_goal_and_nothing_wrong_is_verified(tmp_path):
    result = invoke(
        "eval",
        EXAMPLES / "eval" / "suite.yaml",
        "--goal",
        "rate-mbps-to-mbs",
        "--json",
        "--base-url",
        REAL_LLM,
        "--journal-dir",
        tmp_path,
        env={"OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "local")},
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["headline"]["verified_wrong"] == 0
    [goal] = document["goals"]
    assert goal["model_calls"] >= 1  # the model was really asked
