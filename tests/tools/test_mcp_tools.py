"""Tools from MCP servers: real SDK servers as subprocesses, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from stepgraph import (
    ApprovalError,
    ApprovalPolicy,
    Engine,
    McpServerError,
    PlanValidationError,
    RunStatus,
    StepGraph,
    Task,
)
from stepgraph.engine import replay, resume
from stepgraph.journal import read_journal
from stepgraph.model import McpServerSpec
from stepgraph.planner import Planner
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, invoke
from tests.tools.conftest import EXAMPLE_SERVER, faulty, faulty_over

NIGHTS_PLAN = {
    "steps": [
        {"id": "link", "tool": "link_speed", "args": {"link": "office-uplink"}},
        {"id": "size", "tool": "dataset_size", "args": {"name": "photos"}},
        {
            "id": "per_night",
            "tool": "calculate",
            "args": {"expression": "${link} * 6 h * 0.9"},
            "expect_unit": "GB",
        },
        {
            "id": "nights",
            "tool": "calculate",
            "args": {"expression": "ceil(${size} / ${per_night})"},
        },
    ],
    "answer": "${nights} nights",
}


def nights_task(server: McpServerSpec, plan: dict[str, object] = NIGHTS_PLAN) -> Task:
    return Task(goal="nights to copy photos", mcp_servers=[server], plan=StepGraph(**plan))


def mcp_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-")]


def test_a_plan_runs_with_a_servers_tools_and_answers_with_units(example_server, tmp_path):
    """The server's '450 Mbit/s' and '2.5 TB' become quantities: 3 nights, verified."""
    result = Engine().run(nights_task(example_server), journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.VERIFIED, result.failed
    assert result.answer == "3 nights"
    assert f"{result.values['per_night'].to('GB'):.1f~P}" == "1093.5 GB"
    assert mcp_threads() == []  # the server stopped with the run


def test_run_start_fingerprints_the_servers_tools_with_the_servers_identity(
    example_server, tmp_path
):
    Engine().run(nights_task(example_server), journal=tmp_path / "j.jsonl")
    start = read_journal(tmp_path / "j.jsonl").of_kind("run.start")[0]
    assert {"link_speed", "dataset_size", "reserve_window"} <= set(start.tools)
    recorded = start.mcp_tools["link_speed"]
    assert recorded["server"]["name"] == "units"
    assert recorded["input_schema"]["required"] == ["link"]


def test_trusted_hints_map_to_side_effects_and_idempotence(example_server):
    prepared = Engine(mcp_servers=[example_server]).prepare(Task(goal="g"))
    with prepared.resources:
        lookup, reserve = prepared.tools.get("link_speed"), prepared.tools.get("reserve_window")
    assert (lookup.side_effects, lookup.idempotent) == (False, True)
    assert (reserve.side_effects, reserve.idempotent) == (True, False)


def test_hints_of_an_untrusted_server_are_ignored(tmp_path):
    """readOnlyHint from a server not marked trusted counts for nothing: it may change the world."""
    server = McpServerSpec(command=sys.executable, args=[str(EXAMPLE_SERVER)])
    prepared = Engine(mcp_servers=[server]).prepare(Task(goal="g"))
    with prepared.resources:
        lookup = prepared.tools.get("link_speed")
    assert (lookup.side_effects, lookup.idempotent) == (True, False)
    with pytest.raises(ApprovalError, match="link_speed"):
        Engine().run(
            nights_task(server), journal=tmp_path / "j.jsonl", approval=ApprovalPolicy.READONLY
        )


def test_a_plan_is_validated_against_the_servers_input_schema(example_server):
    """Unknown, missing and mistyped arguments are refused before anything runs."""
    bad = {
        "steps": [
            {"id": "a", "tool": "link_speed", "args": {"speed": "office-uplink"}},
            {"id": "b", "tool": "reserve_window", "args": {"link": "office-uplink", "hours": "x"}},
        ]
    }
    with pytest.raises(PlanValidationError) as caught:
        Engine().validate(nights_task(example_server, bad))
    message = str(caught.value)
    assert "unknown argument 'speed' for tool 'link_speed' (allowed: link)" in message
    assert "missing required argument 'link' of tool 'link_speed'" in message
    assert "argument 'hours': 'x' is not of type 'number'" in message


def test_an_error_the_tool_reports_is_the_steps_error(example_server, tmp_path):
    plan = {"steps": [{"id": "a", "tool": "link_speed", "args": {"link": "moon"}}]}
    result = Engine().run(nights_task(example_server, plan), journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.STEP_FAILED
    assert "unknown link 'moon'" in result.failed["a"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_crashes_mid_run_is_a_step_error(transport, tmp_path):
    plan = {
        "steps": [
            {"id": "ok", "tool": "echo", "args": {"text": "fine"}},
            {"id": "boom", "tool": "crash", "args": {}, "depends_on": ["ok"]},
            {"id": "after", "tool": "echo", "args": {"text": "${boom}"}},
        ]
    }
    with faulty_over(transport) as server:
        started = time.monotonic()
        result = Engine().run(nights_task(server, plan), journal=tmp_path / "j.jsonl")
    assert time.monotonic() - started < 20  # no hang
    assert result.status is RunStatus.STEP_FAILED
    assert result.unverified_values["ok"] == "fine"
    assert "MCP server 'faulty' is no longer running" in result.failed["boom"]
    if transport == "stdio":
        assert "about to crash" in result.failed["boom"]  # the server's last words
    assert "after" in result.skipped
    assert mcp_threads() == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_call_past_the_servers_timeout_is_a_step_error(transport, tmp_path):
    plan = {"steps": [{"id": "slow", "tool": "stall", "args": {"seconds": 30}}]}
    with faulty_over(transport, timeout=0.5) as server:
        started = time.monotonic()
        result = Engine().run(nights_task(server, plan), journal=tmp_path / "j.jsonl")
        assert time.monotonic() - started < 15
    assert result.status is RunStatus.STEP_FAILED
    assert "no answer from tool 'stall' within 0.5 s" in result.failed["slow"]


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        (McpServerSpec(name="ghost", command="no-such-mcp-server"), "command not found"),
        (faulty("--exit-at-start"), "refusing to start"),
        (McpServerSpec(name="closed", url="http://127.0.0.1:9/mcp"), "failed to start"),
    ],
    ids=["missing-command", "exits-at-start", "nothing-listening"],
)
def test_a_server_that_fails_to_start_is_a_clear_error(server, reason, tmp_path):
    with pytest.raises(McpServerError, match=reason) as caught:
        Engine().run(nights_task(server), journal=tmp_path / "j.jsonl")
    assert f"MCP server '{server.label}'" in str(caught.value)
    assert mcp_threads() == []
    assert not (tmp_path / "j.jsonl").exists()  # nothing ran


def test_a_server_that_never_answers_at_start_times_out(tmp_path):
    silent = McpServerSpec(
        name="silent",
        command=sys.executable,
        args=["-c", "import time; time.sleep(60)"],
        startup_timeout=0.5,
    )
    with pytest.raises(McpServerError, match="did not start and list its tools within 0.5 s"):
        Engine().run(nights_task(silent), journal=tmp_path / "j.jsonl")


def test_a_tool_name_taken_by_another_server_is_refused_and_both_stop(example_server):
    with pytest.raises(Exception, match="a tool named 'link_speed' is already registered"):
        Engine(mcp_servers=[example_server, example_server]).prepare(Task(goal="g"))
    assert mcp_threads() == []


def test_replay_does_not_contact_the_server_and_live_replay_reports_a_changed_tool(tmp_path):
    server_file = tmp_path / "server.py"
    shutil.copy(EXAMPLE_SERVER, server_file)
    spec = McpServerSpec(name="units", command=sys.executable, args=[str(server_file)])
    journal = tmp_path / "run.jsonl"
    Engine().run(nights_task(spec), journal=journal, approval=ApprovalPolicy.AUTO)

    server_file.unlink()  # the server is gone: a replay must not need it
    report = replay(journal, out=tmp_path / "replay.jsonl")
    assert report.identical, (report.error, report.divergences)

    text = EXAMPLE_SERVER.read_text(encoding="utf-8")
    server_file.write_text(text.replace("def link_speed(link: str)", "def link_speed(link: int)"))
    live = replay(journal, live=True, out=tmp_path / "live.jsonl", trust_plugins=True)
    changed = [d for d in live.divergences if d.event == "tool"]
    assert [d.recorded.split()[0] for d in changed] == ["link_speed"]


def test_engine_servers_given_as_a_command_line_or_url(http_url, tmp_path):
    for server in (f"{sys.executable} {EXAMPLE_SERVER}", http_url):
        engine = Engine(mcp_servers=[server])
        task = Task(goal="g", plan=StepGraph(**NIGHTS_PLAN), approval=ApprovalPolicy.AUTO)
        result = engine.run(task, journal=tmp_path / f"{len(list(tmp_path.iterdir()))}.jsonl")
        assert result.answer == "3 nights"


def test_the_example_task_runs_from_the_command_line_and_lists_the_servers_tools(tmp_path):
    """examples/mcp_task.yaml starts examples/mcp_server.py itself ('python' is ours)."""
    ran = invoke("run", EXAMPLES / "mcp_task.yaml", "--journal", tmp_path / "j.jsonl", "--json")
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["answer"] == "3 nights (1,093.5 GB per night)"
    listed = invoke("tools", EXAMPLES / "mcp_task.yaml", "--json", "--trust-plugins")
    schemas = {schema["name"]: schema for schema in json.loads(listed.output)}
    assert schemas["link_speed"]["side_effects"] is False
    assert schemas["link_speed"]["server"].endswith("mcp_server.py")
    assert mcp_threads() == []


def cut_after_action(journal: Path, step: str) -> None:
    """The journal as a crash would leave it: the step started, nothing after."""
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(
        i
        for i, line in enumerate(lines)
        if json.loads(line)["event"] == "action" and json.loads(line).get("step") == step
    )
    journal.write_text("".join(lines[: end + 1]), encoding="utf-8")


@pytest.mark.parametrize("trusted", [True, False])
def test_resume_reruns_an_idempotent_tool_in_flight_only_if_its_server_is_trusted(
    trusted, tmp_path
):
    plan = {"steps": [{"id": "note", "tool": "remember", "args": {"text": "3 nights"}}]}
    journal = tmp_path / "j.jsonl"
    task = nights_task(faulty(trusted=trusted), plan)
    Engine().run(task, journal=journal, approval=ApprovalPolicy.AUTO)
    cut_after_action(journal, "note")
    if trusted:
        result = resume(journal)
        assert {**result.values, **result.unverified_values} == {"note": "stored 3 nights"}
    else:
        with pytest.raises(ApprovalError, match="--rerun-side-effects"):
            resume(journal)
    assert mcp_threads() == []


def test_a_model_sees_the_servers_tools_and_its_bad_arguments_go_back_for_repair(
    example_server, tmp_path
):
    """A planned step with a wrong argument name is refused by the server's schema, repaired."""
    wrong = json.loads(json.dumps(NIGHTS_PLAN))
    wrong["steps"][0]["args"] = {"name": "office-uplink"}
    model = ScriptedLLM([json.dumps(wrong), json.dumps(NIGHTS_PLAN)])
    goal = "Nights to copy the photos over the office uplink, 6 h a night at 90% utilisation?"
    task = Task(goal=goal, mcp_servers=[example_server])
    result = Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    assert result.answer == "3 nights"
    system = model.requests[0][0]["content"]
    assert "link_speed" in system and "The nominal speed of a named network link" in system
    feedback = model.requests[1][-1]["content"]
    assert "unknown argument 'name' for tool 'link_speed' (allowed: link)" in feedback
