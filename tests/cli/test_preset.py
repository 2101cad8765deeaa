"""`--preset small-model`: the measured small-model settings in one switch, each overridable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from stepgraph.cli._model_options import ModelOptions
from stepgraph.cli._model_options import Preset as OptionPreset
from stepgraph.journal import read_journal
from stepgraph.planner import SMALL_MODEL, PlannerSettings, Preset
from tests.conftest import invoke
from tests.planner.test_http import ChatServer

RECORDED = Path(__file__).parents[1] / "planner" / "recorded_gsm8k" / "gsm8k-train-152.only.json"


def test_the_option_names_the_planner_s_presets():
    assert get_args(OptionPreset) == get_args(Preset)


def test_the_preset_over_http_asks_a_program_caps_tokens_and_cross_checks(httpserver, tmp_path):
    """One flag instead of eight variables: a recorded GSM8K answer verifies as it did."""
    case = json.loads(RECORDED.read_text())
    server = ChatServer(httpserver, [(200, reply["content"]) for reply in case["replies"]])
    journal = tmp_path / "run.jsonl"
    result = invoke(
        "run",
        case["question"],
        "--preset",
        "small-model",
        "--base-url",
        server.url,
        "--model",
        "qwen",
        "--journal",
        journal,
        "--no-memory",
        "--json",
        env={"OPENAI_API_KEY": "not-needed"},
    )
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["status"] == "verified"
    assert "44" in outcome["answer"]
    assert [r["body"]["max_tokens"] for r in server.requests] == [1024, 1024]
    config = read_journal(journal).of_kind("run.start")[0].config
    assert config.cross_check is True
    assert (config.plan_syntax, config.retry_with, config.program_only) == (
        "lines",
        "fresh",
        "auto",
    )
    # nothing more is asked on a disagreement: what agrees after one no longer verifies
    assert (config.numbered_names, config.second_words, config.afresh_on_disagreement) == (
        True,
        False,
        False,
    )
    purposes = [request.purpose for request in read_journal(journal).of_kind("llm.request")]
    assert purposes == ["program", "worked"]
    # answers stream, so that one that loops is stopped; plans show the nearest examples
    assert (config.stop_loops, config.examples) == (True, "nearest")
    assert [r["body"].get("stream") for r in server.requests] == [True, True]


def test_a_setting_given_beside_the_preset_wins(monkeypatch):
    monkeypatch.setenv("STEPGRAPH_PRESET", "small-model")
    monkeypatch.setenv("STEPGRAPH_RETRY_WITH", "feedback")
    settings = PlannerSettings()
    assert settings.retry_with == "feedback"
    assert settings.cross_route == SMALL_MODEL["cross_route"] == "auto"
    options = ModelOptions(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key="k",
        preset="small-model",
        plan_syntax="json",
        max_tokens=300,
    )
    planner = options.planner()
    assert planner is not None
    assert (planner.syntax, planner.retry_with, planner.numbered_names) == (
        "json",
        "feedback",
        True,
    )
    assert planner.client.settings.max_tokens == 300
    assert options.cross_checks(None) is True
    assert options.cross_checks(False) is False


def test_without_the_preset_nothing_changes(monkeypatch):
    monkeypatch.delenv("STEPGRAPH_PRESET", raising=False)
    options = ModelOptions(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    planner = options.planner()
    assert planner is not None
    assert (planner.syntax, planner.retry_with, planner.program_only) == ("json", "feedback", False)
    assert planner.client.settings.max_tokens is None
    assert options.cross_checks(None) is False


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_an_unknown_preset_is_a_usage_error(how):
    flag = ["--preset", "tiny"] if how == "flag" else []
    env = {"STEPGRAPH_PRESET": "tiny"} if how == "variable" else {}
    result = invoke("run", "How many eggs are in 3 boxes of 12?", *flag, "--scripted", "x", env=env)
    assert result.exit_code == 2, result.output
    assert "small-model" in result.output


def test_eval_with_the_preset_cross_checks_and_says_so(tmp_path):
    """The report's header says the cross-check was on, as the preset turns it on."""
    suite = tmp_path / "suite.yaml"
    goal = "A shelf holds 3 rows of 12 books. How many books does it hold?"
    suite.write_text(json.dumps({"name": "t", "goals": [{"id": "g", "goal": goal, "expect": 36}]}))
    script = tmp_path / "script.yaml"
    program = "```python\nrows = 3\nbooks = 12\nprint(rows * books)\n```"
    script.write_text(
        json.dumps({"scripted": True, "responses": [program, "3 x 12 = 36. ANSWER: 36"]})
    )
    documents = {}
    for flags in ([], ["--no-cross-check"]):
        result = invoke(
            "eval", suite, "--scripted", script, "--preset", "small-model", *flags, "--json",
            "--journal-dir", tmp_path / f"j{len(documents)}",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        documents[tuple(flags)] = json.loads(result.stdout)
    crossed, plain = documents[()], documents[("--no-cross-check",)]
    assert crossed["cross_check"] is True and plain["cross_check"] is False
    assert crossed["goals"][0]["verified"] and crossed["goals"][0]["correct"]
    assert crossed["goals"][0]["model_calls"] == 2  # the program, then the words
