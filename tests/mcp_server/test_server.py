"""`stepgraph mcp`: the SDK's own client talks to stepgraph over stdio and streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult

from stepgraph.engine import Decision, decide
from stepgraph.journal import read_journal
from stepgraph.mcp_server import StepgraphMcp
from stepgraph.model import RunStatus
from tests.conftest import EXAMPLES
from tests.mcp_server.conftest import ONE_STEP, call, session, stdio
from tests.planner.test_http import ChatServer


def test_the_four_tools_are_listed_with_honest_hints(server):
    listed = session(server, lambda client: client.list_tools())
    tools = {item.name: item for item in listed.tools}
    assert sorted(tools) == ["plan", "replay", "run", "validate"]
    assert tools["validate"].annotations.read_only_hint is True
    assert tools["run"].annotations.read_only_hint is False
    assert tools["run"].annotations.destructive_hint is True  # it may run side effects
    assert "task_file" in tools["run"].input_schema["properties"]


def test_running_the_migration_task_gives_a_verified_journaled_answer(server, root):
    result = call(server, "run", {"task_file": "examples/migration.yaml"})
    assert not result.is_error, result.content
    outcome = result.structured_content
    assert outcome["status"] == "verified"
    assert outcome["answer"].startswith("3 nights")
    assert outcome["values"]["nights"] == {"value": 3, "unit": None, "display": "3"}
    assert outcome["values"]["per_night"] == {
        "value": 962.28,
        "unit": "GB",
        "display": "962.28 GB",
    }
    assert all(verdict["passed"] for verdict in outcome["verdicts"])
    journal = read_journal(Path(outcome["journal"]))
    assert Path(outcome["journal"]).is_relative_to(root)
    assert journal.of_kind("run.end")[0].status == "verified"


def test_validating_a_bad_plan_names_the_step_and_what_is_wrong(server):
    task = {
        "goal": "g",
        "plan": {
            "steps": [
                {"id": "a", "tool": "unit_convert", "args": {"value": "2 TB", "to_unit": "m"}},
                {"id": "b", "tool": "calculate", "args": {"expression": "${c} + 1"}},
            ]
        },
    }
    outcome = call(server, "validate", {"task": task}).structured_content
    assert outcome["valid"] is False
    by_step = {problem["step"]: problem["problem"] for problem in outcome["problems"]}
    assert "${c} refers to no step" in by_step["b"]
    assert "TB" in by_step["a"] and "m" in by_step["a"]


def test_a_good_plan_validates_with_its_order(server):
    outcome = call(server, "validate", {"task_file": "examples/migration.yaml"}).structured_content
    assert outcome == {
        "valid": True,
        "problems": [],
        "runs_in_order": [["rate", "total"], ["per_night"], ["nights"]],
        "message": None,
    }


def booked(root: Path) -> list[str]:
    """The side effects that happened: one line per window booked."""
    log = root / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_plan_with_side_effects_parks_and_the_client_cannot_approve_it(server, root):
    """The client gets the parked run to show its user; echoing its plan or hash runs nothing."""
    before = len(booked(root))

    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any], CallToolResult]:
        first = (await client.call_tool("run", {"task_file": "booking.yaml"})).structured_content
        echo = {"task_file": "booking.yaml", "plan": first["plan"]}
        second = (await client.call_tool("run", echo)).structured_content
        approving = await client.call_tool("run", {**echo, "approve": first["approval_hash"]})
        return first, second, approving

    first, second, approving = session(server, scenario)
    assert first["status"] == second["status"] == "awaiting_approval"
    # `approve` is no argument of run: refused by name, not dropped (which would run it).
    assert approving.is_error and "unknown argument 'approve'" in approving.content[0].text
    assert first["side_effect_tools"] == ["book_window"]
    assert first["run_id"] in first["how_to_approve"]
    assert {"id": "booking", "tool": "book_window"}.items() <= first["steps"][1].items()
    assert first["steps"][1]["args"] == {"hours": "${hours}"}  # data, inputs resolved
    assert len(booked(root)) == before  # the client approving itself approved nothing
    for result in (first, second):
        events = read_journal(Path(result["journal"]))
        assert events.of_kind("plan.approved") == [] and events.of_kind("action") == []
    # A person decides out of band: then, and only then, the window is booked.
    done = decide(Path(first["journal"]), Decision("approve", who="alice", how="cli"))
    assert done.status is RunStatus.UNCHECKED and done.answer == "booked 6 h"
    assert len(booked(root)) == before + 1
    [approved] = read_journal(Path(first["journal"])).of_kind("plan.approved")
    assert (approved.who, approved.approval_hash) == ("alice", first["approval_hash"])


def test_a_client_plan_in_a_task_with_approval_auto_still_parks(server, root):
    """`approval: auto` is the task author's word for the task's plan, not for a client's."""
    before = len(booked(root))
    plan = {
        "steps": [
            {"id": "hours", "tool": "calculate", "args": {"expression": "99 * 1"}},
            {"id": "booking", "tool": "book_window", "args": {"hours": "${hours}"}},
        ]
    }
    given = call(server, "run", {"task_file": "booking-auto.yaml", "plan": plan})
    assert given.structured_content["status"] == "awaiting_approval"
    assert len(booked(root)) == before
    own = call(server, "run", {"task_file": "booking-auto.yaml"}).structured_content
    assert own["status"] == "unchecked" and booked(root)[before:] == ["6"]


def test_a_journal_replays_without_tools(server, root):
    async def scenario(client: Client) -> dict[str, Any]:
        ran = (
            await client.call_tool("run", {"task_file": "examples/migration.yaml"})
        ).structured_content
        replayed = await client.call_tool("replay", {"journal": ran["journal"]})
        return replayed.structured_content

    replayed = session(server, scenario)
    assert replayed["identical"] is True
    assert replayed["answer"].startswith("3 nights")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"task_file": "../outside.yaml"}, "outside the server's root"),
        ({"task_file": "examples/migration.yaml\x00"}, "contains a NUL character"),
        ({"task_file": "missing.yaml"}, "no such task file"),
        ({"task": {"goal": "g", "plugins": ["booking.py"]}}, "may not load plugins"),
        ({"task": {"goal": "g", "mcp_servers": [{"command": "sh"}]}}, "or start MCP servers"),
        ({"goal": "g", "task_file": "booking.yaml"}, "exactly one of task_file, task or goal"),
        ({"task": {"goal": "g", "colour": "red"}}, "not a valid task"),
        ({"task_file": "broken.yaml"}, "not valid YAML"),
        ({"task_file": "broken.yaml", "plan": ONE_STEP}, "not valid YAML"),
        ({"task_file": "booking.yaml", "plan": {"steps": "none"}}, "not a valid plan"),
    ],
)
def test_what_a_client_may_not_name_is_a_clear_tool_error(server, args, message):
    result = call(server, "run", args)
    assert result.is_error
    assert message in result.content[0].text


def test_a_nul_in_a_task_file_or_journal_name_is_a_clear_tool_error(server):
    """Not the SDK's "unexpected error": a tool error naming the NUL, for every tool."""
    for tool, args in [
        ("validate", {"task_file": "a\x00.yaml"}),
        ("plan", {"task_file": "a\x00.yaml"}),
        ("replay", {"journal": "runs/a\x00.jsonl"}),
    ]:
        result = call(server, tool, args)
        assert result.is_error and "contains a NUL character" in result.content[0].text, tool


def test_planning_without_a_model_says_how_to_get_one(server):
    result = call(server, "plan", {"task_file": "examples/planned/migration.yaml"})
    assert result.is_error
    assert "no planner is configured" in result.content[0].text


def test_a_scripted_model_plans_and_the_run_repairs_to_three_nights(root):
    script = str(root / "examples" / "planned" / "migration.script.yaml")
    task = {"task_file": "examples/planned/migration.yaml"}

    async def scenario(client: Client) -> tuple[CallToolResult, CallToolResult]:
        return await client.call_tool("plan", task), await client.call_tool("run", task)

    planned, ran = session(stdio(root, "--scripted", script), scenario)
    assert not planned.is_error, planned.content
    steps = {step["id"] for step in planned.structured_content["plan"]["steps"]}
    assert {"per_night", "nights"} <= steps
    assert ran.structured_content["answer"].startswith("3 nights")
    assert ran.structured_content["status"] == "verified"


def test_a_model_behind_an_openai_compatible_endpoint_plans_a_goal(root, httpserver):
    from tests.planner.conftest import migration_plan

    chat = ChatServer(httpserver, [(200, json.dumps(migration_plan()))])
    server = stdio(root, "--base-url", chat.url, "--api-key", "sk-local", "--model", "m")
    goal = "Nights to move 2.5 TB over 450 Mbps, 00:00-06:00, 90% utilisation, 0.88 retry factor"
    task = {
        "goal": goal,
        "inputs": {"data": "2.5 TB", "link": "450 Mbps"},
        "tools": ["unit_convert", "calculate"],
    }
    planned = call(server, "plan", {"task": task})
    assert not planned.is_error, planned.content
    assert planned.structured_content["plan"]["steps"][-1]["id"] == "nights"
    assert len(chat.requests) == 1


def test_the_example_client_gets_three_nights_a_named_problem_and_an_identical_replay(root):
    client = EXAMPLES / "mcp_client.py"
    command = [sys.executable, str(client), "--root", str(root / "examples")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "tools: validate, plan, run, replay"
    assert lines[1] == "run: verified: 3 nights (962.28 GB per night; 2,500 GB in all)"
    assert "${total} refers to no step" in lines[3] and "cannot convert 450 Mbps" in lines[3]
    assert lines[4] == "replay identical: True"


# Importing it leaves a marker beside it: how the tests below see whether a plugin ran.
MARKING_PLUGIN = '''
from pathlib import Path

Path(__file__).with_name(Path(__file__).stem + ".ran").write_text("imported")

from stepgraph import tool


@tool
def double(x: float) -> float:
    """Twice a number.

    Args:
        x: The number.
    """
    return 2 * x
'''


def marking_task(plugin: str, *, servers: str = "") -> str:
    """A task file's text: one step of `double`, from `plugin`, and any `servers` lines."""
    return (
        f"goal: twice two\nplugins: [{plugin}]\ntools: [double, calculate]\n{servers}"
        "plan:\n  steps:\n    - {id: a, tool: double, args: {x: 2}}\n"
    )


@pytest.fixture
def face(tmp_path: Path) -> StepgraphMcp:
    """The server's tools over `tmp_path/root`, called directly (no transport)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "marking.py").write_text(MARKING_PLUGIN, encoding="utf-8")
    return StepgraphMcp(root, Path("runs"))


def test_validate_imports_no_plugin_of_a_task_file_and_says_why(face):
    """MCP validate (read-only) refuses a task file with plugins; the plugin never runs."""
    (face.root / "task.yaml").write_text(marking_task("marking.py"), encoding="utf-8")
    for plan in (None, ONE_STEP):  # a plan in place of the task's own changes nothing
        with pytest.raises(ToolError, match=r"loads plugins \(marking.py\).*imports and starts"):
            face.validate("task.yaml", None, plan)
    assert not (face.root / "marking.ran").exists()


def test_validate_starts_no_mcp_server_of_a_task_file(face):
    """MCP validate refuses a task file with an MCP server; its command never starts."""
    marker = face.root / "server.ran"
    server = f"mcp_servers:\n  - {{command: touch, args: ['{marker}']}}\n"
    text = (
        "goal: g\n"
        + server
        + "plan: {steps: [{id: a, tool: calculate, args: {expression: '1'}}]}\n"
    )
    (face.root / "task.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ToolError, match=r"starts MCP servers \(touch "):
        face.validate("task.yaml", None, None)
    assert not marker.exists()


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_plan_and_run_refuse_a_task_file_s_plugin_outside_the_root(face, tmp_path, where):
    """A task file under the root may not import a plugin from outside it, by any path."""
    outside = tmp_path / "outside.py"
    outside.write_text(MARKING_PLUGIN, encoding="utf-8")
    plugin = str(outside) if where == "absolute" else "../outside.py"
    (face.root / "task.yaml").write_text(marking_task(plugin), encoding="utf-8")
    with pytest.raises(ToolError, match="from outside the server's root"):
        face.run("task.yaml", None, None, None, None)
    with pytest.raises(ToolError, match="from outside the server's root"):
        face.plan("task.yaml", None, None, None)
    with pytest.raises(ToolError, match="from outside the server's root"):
        face.run("task.yaml", None, None, ONE_STEP, None)
    assert not (tmp_path / "outside.ran").exists()


def test_run_still_imports_a_task_file_s_plugin_under_the_root(face):
    """A plugin inside the root is the operator's: MCP run loads it and verifies the answer."""
    folder = face.root / "tasks"
    folder.mkdir()
    (folder / "task.yaml").write_text(marking_task("../marking.py"), encoding="utf-8")
    outcome = face.run("tasks/task.yaml", None, None, None, None)
    assert outcome.unverified_values["a"].value == 4
    assert (face.root / "marking.ran").exists()
