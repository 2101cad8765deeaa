import json

from werkzeug import Response

from stepgraph.cli import ExitCode
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES, flat, invoke

PLANNED = EXAMPLES / "planned"
SCRIPT = PLANNED / "migration.script.yaml"


def test_the_goal_only_example_runs_offline_through_plan_repair_and_run(tmp_path):
    journal = tmp_path / "j.jsonl"
    result = invoke("run", PLANNED / "migration.yaml", "--scripted", SCRIPT, "--journal", journal)
    assert result.exit_code == ExitCode.OK, result.output
    output = flat(result.output)
    assert "plan rejected: step 'rate': output is in [information] / [time]" in output
    assert "repair round 1: changed nights" in output
    assert "Answer: 3 nights (962.28 GB per night; 2,500 GB in all)" in output
    events = read_journal(journal)
    assert len(events.of_kind("llm.request")) == len(events.of_kind("llm.response")) == 3
    assert all(e.usage for e in events.of_kind("llm.response"))


def test_plan_prints_a_validated_graph_and_can_write_it(tmp_path):
    out = tmp_path / "plan.json"
    result = invoke(
        "plan",
        PLANNED / "migration.yaml",
        "--scripted",
        SCRIPT,
        "--out",
        out,
        "--journal",
        tmp_path / "j.jsonl",
    )
    assert result.exit_code == ExitCode.OK
    written = json.loads(out.read_text())
    assert [step["id"] for step in written["plan"]["steps"]] == [
        "rate",
        "total",
        "per_night",
        "nights",
    ]
    assert len(written["plan_hash"]) == 64 and "approval" not in written


def test_show_prompt_prints_the_four_parts_and_the_examples():
    result = invoke("plan", "anything at all", "--show-prompt")
    assert result.exit_code == ExitCode.OK
    for part in (
        "You are the planner of stepgraph",
        "Rules:",
        "## calculate",
        "## unit_convert",
        "Output contract",
        "Example 1",
        "Example 2",
    ):
        assert part in result.stdout


def test_a_goal_with_no_model_and_no_plan_names_the_three_ways_forward(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "STEPGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    result = invoke("run", "How many nights to move 2.5 TB over 450 Mbps?")
    assert result.exit_code == ExitCode.INVALID
    output = flat(result.output)
    assert "set OPENAI_BASE_URL and/or OPENAI_API_KEY" in output
    assert "add a 'plan:' to the task file" in output
    assert "--scripted FILE" in output


def test_a_failing_model_endpoint_exits_model_failed(httpserver, monkeypatch):
    httpserver.expect_request("/v1/chat/completions").respond_with_response(
        Response(
            '{"error": {"message": "overloaded"}}',
            status=503,
            headers={"retry-after-ms": "1"},
            content_type="application/json",
        )
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = invoke("run", "nights to move 2.5 TB", "--base-url", httpserver.url_for("/v1"))
    assert result.exit_code == ExitCode.MODEL_FAILED
    assert "HTTP 503" in flat(result.output)


def test_a_missing_script_file_is_a_clear_error(tmp_path):
    result = invoke("run", "a goal", "--scripted", tmp_path / "nope.yaml")
    assert result.exit_code == ExitCode.INVALID
    assert "not a scripted-responses file" in flat(result.output)
