"""`stepgraph mcp` to the MCP spec, as a client sees it: schemas, errors, progress, version."""

from __future__ import annotations

import math
import socket
import subprocess
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, ListToolsResult

import stepgraph
from stepgraph.journal import ObservationEvent, PlanProposed, StepReused, StepSkipped
from stepgraph.mcp_server import as_value
from stepgraph.mcp_server._progress import ProgressNote, StepProgress
from stepgraph.units import quantity
from tests.mcp_server.conftest import call, session
from tests.mcp_server.test_http_security import environment, mcp

TOOLS = ("plan", "replay", "run", "validate")


def listed(server: Any) -> dict[str, Any]:
    tools: ListToolsResult = session(server, lambda client: client.list_tools())
    return {tool.name: tool for tool in tools.tools}


def test_server_info_names_stepgraph_and_its_package_version(server):
    async def scenario(client: Client) -> Any:
        return client.server_info

    info = session(server, scenario)
    assert (info.name, info.version) == ("stepgraph", stepgraph.__version__)


def test_every_tool_publishes_a_typed_output_schema(server):
    """Not `{"type": "object", "additionalProperties": true}`: the fields, described."""
    tools = listed(server)
    assert sorted(tools) == list(TOOLS)
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema["type"] == "object" and schema["properties"], name
        assert all("description" in field for field in schema["properties"].values()), name
    value = tools["run"].output_schema["$defs"]["Value"]["properties"]
    assert sorted(value) == ["display", "unit", "value"]
    assert "steps" in str(tools["plan"].output_schema["properties"]["plan"])


def test_every_parameter_is_described_in_the_schema_not_in_an_args_block(server):
    for name, tool in listed(server).items():
        assert "Args:" not in (tool.description or ""), name
        assert "\n " not in (tool.description or ""), name  # no docstring indentation
        properties = tool.input_schema["properties"]
        assert properties, name
        assert all(field.get("description") for field in properties.values()), name
        assert tool.input_schema["additionalProperties"] is False, name


def test_hints_are_honest(server):
    """run may run side effects (after a person's approval); the others change nothing."""
    hints = {name: tool.annotations for name, tool in listed(server).items()}
    assert hints["run"].read_only_hint is False and hints["run"].destructive_hint is True
    assert hints["run"].idempotent_hint is False
    for name in ("plan", "replay", "validate"):
        assert hints[name].read_only_hint is True, name
    assert hints["validate"].open_world_hint is False and hints["plan"].open_world_hint is True


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("run", {"task_file": "examples/migration.yaml", "approve": "yes"}),
        ("validate", {"task_file": "examples/migration.yaml", "input": {"data": "1 TB"}}),
        ("plan", {"goal": "g", "model": "x"}),
        ("replay", {"journal": "runs/x.jsonl", "live": True}),
    ],
)
def test_an_unknown_argument_is_a_tool_error_naming_it_and_what_the_tool_takes(
    server, root, tool, args
):
    journals = set((root / "runs").glob("*.jsonl")) if (root / "runs").exists() else set()
    result = call(server, tool, args)
    assert result.is_error
    text = result.content[0].text
    [unknown] = set(args) - {"task_file", "goal", "journal"}
    assert f"unknown argument {unknown!r}" in text and f"{tool} takes " in text, text
    after = set((root / "runs").glob("*.jsonl")) if (root / "runs").exists() else set()
    assert after == journals  # refused before anything ran


def test_a_run_reports_each_settled_step_as_progress(server):
    """With a progress token, one notification per step: growing, with the total, naming it."""
    notes: list[tuple[float, float | None, str | None]] = []

    async def scenario(client: Client) -> CallToolResult:
        async def heard(progress: float, total: float | None, message: str | None) -> None:
            notes.append((progress, total, message))

        return await client.call_tool(
            "run", {"task_file": "examples/migration.yaml"}, progress_callback=heard
        )

    result = session(server, scenario)
    assert result.structured_content["status"] == "verified"
    assert [(progress, total) for progress, total, _ in notes] == [(n, 4) for n in (1, 2, 3, 4)]
    assert "step nights = 3" in {message for _, _, message in notes}
    assert "step per_night = 962.28 GB" in {message for _, _, message in notes}


def test_a_run_without_a_progress_token_answers_the_same(server):
    result = call(server, "run", {"task_file": "examples/migration.yaml"})
    assert result.structured_content["answer"].startswith("3 nights")


def test_values_are_data_with_their_units_and_a_display_string():
    assert as_value(quantity(2500.0000000000005, "GB")).model_dump() == {
        "value": 2500.0,
        "unit": "GB",
        "display": "2,500 GB",
    }
    assert as_value(quantity(56.25, "MB/s")).unit == "MB/s"
    assert as_value(quantity(450, "Mbit/s")).model_dump()["unit"] == "Mbit/s"
    assert as_value(3).model_dump() == {"value": 3, "unit": None, "display": "3"}
    assert as_value("booked 6 h").model_dump()["value"] == "booked 6 h"
    nested = as_value({"link": quantity(1, "Gbit/s"), "n": [1, 2]}).value
    assert nested == {"link": {"value": 1, "unit": "Gbit/s"}, "n": [1, 2]}
    assert as_value(math.nan).value == "nan"  # JSON has no NaN; the text says what it was
    assert as_value(10**20_000).unit is None  # past what str() prints: as text, never a crash


def test_progress_grows_over_retries_repairs_and_skips():
    """A retried attempt is no step; a repaired plan adds its steps to what is settled."""
    progress = StepProgress()

    def observed(step: str, *, final: bool = True, ok: bool = True) -> ObservationEvent:
        return ObservationEvent(
            step=step, ok=ok, value=1, error=None if ok else "boom", attempt=1,
            duration_ms=1.0, final=final,
        )  # fmt: skip

    events = [
        PlanProposed(source="task", plan={"steps": [{}, {}, {}]}, plan_hash="h1"),
        observed("a", final=False, ok=False),
        observed("a"),
        observed("b", ok=False),
        StepSkipped(step="c", reason="b failed"),
        PlanProposed(source="planner", plan={"steps": [{}, {}, {}]}, plan_hash="h2"),
        StepReused(step="a", value=1),
        observed("b"),
        observed("c"),
    ]
    notes = [note for event in events if (note := progress.see(event)) is not None]
    assert [(note.progress, note.total) for note in notes] == [
        (1, 3), (2, 3), (3, 3), (4, 6), (5, 6), (6, 6),
    ]  # fmt: skip
    assert notes[1] == ProgressNote(2, 3, "step b failed: boom")
    assert notes[2].message == "step c skipped: b failed"


def test_http_transport_prints_the_port_it_listens_on_and_a_taken_port_is_an_error(tmp_path):
    """--port 0: the printed address is the one the system chose, and it answers."""
    process = subprocess.Popen(
        mcp("--port", "0", "--root", str(tmp_path)), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=environment(),
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline().strip()
        assert line.startswith("stepgraph mcp: http://127.0.0.1:") and line.endswith("/mcp")
        port = int(line.rsplit(":", 1)[1].removesuffix("/mcp"))
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        taken = subprocess.run(
            mcp("--port", str(port), "--root", str(tmp_path)), capture_output=True, text=True,
            env=environment(), check=False, timeout=60,
        )  # fmt: skip
        assert taken.returncode == 2, taken.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in taken.stderr
        assert "Traceback" not in taken.stderr
    finally:
        process.terminate()
        process.communicate(timeout=10)
