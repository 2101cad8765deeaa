"""The response format's schema: each step one of the tools, with that tool's own arguments."""

import json

import jsonschema
import pytest
from pydantic import BaseModel

from stepgraph import Planner, tool
from stepgraph.planner import plan_schema
from stepgraph.tools import ToolRegistry, default_registry
from tests.planner.conftest import INPUTS, migration_plan, prepared
from tests.planner.test_http import ChatServer, client


class Window(BaseModel):
    start: str
    hours: float


@tool
def book_window(window: Window, copies: int = 1) -> str:
    """Book a transfer window.

    Args:
        window: When the window opens and how long it lasts.
        copies: How many bookings.
    """
    return window.start


def tools_with_records() -> ToolRegistry:
    registry = default_registry()
    registry.register(book_window)
    return registry


def fits(plan: dict, schema: dict) -> bool:
    try:
        jsonschema.validate(plan, schema, cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError:
        return False
    return True


def step(tool_name: str, **args) -> dict:
    return {"thought": "t", "steps": [{"id": "s", "tool": tool_name, "args": args}]}


def test_the_canonical_plan_fits_the_tools_schema():
    assert fits(json.loads(migration_plan()), plan_schema(default_registry()))


def test_a_tool_that_does_not_exist_or_an_argument_it_does_not_take_is_outside_it():
    schema = plan_schema(default_registry())
    assert fits(step("calculate", expression="2 * 3"), schema)
    assert not fits(step("convert_units", value="2 TB", to_unit="GB"), schema)
    assert not fits(step("unit_convert", value="2 TB", to_unit="GB", units="GB"), schema)
    assert not fits(step("unit_convert", value="2 TB"), schema)  # to_unit is required
    assert not fits(step("calculate", value="2 TB"), schema)  # another tool's argument
    # the plain step graph schema lets all of these through, to the static checks
    plain = plan_schema()
    assert fits(step("convert_units", value="2 TB", to_unit="GB"), plain)


def test_a_number_argument_takes_a_whole_reference_but_no_other_text():
    schema = plan_schema(tools_with_records())
    window = {"start": "00:00", "hours": 6}
    assert fits(step("book_window", window=window, copies=2), schema)
    assert fits(step("book_window", window=window, copies="${count}"), schema)
    assert fits(step("book_window", window="${inputs.window}"), schema)
    assert not fits(step("book_window", window=window, copies="two"), schema)
    assert not fits(step("book_window", window=window, copies="${a} + 1"), schema)


def test_a_tools_own_definitions_are_found_from_the_root():
    schema = plan_schema(tools_with_records())
    assert "book_window__Window" in schema["$defs"]
    assert not fits(step("book_window", window={"start": "00:00", "hours": "six"}), schema)
    assert not fits(step("book_window", window={"start": "00:00"}), schema)


@pytest.mark.parametrize("tool_schemas", [True, False])
def test_the_request_carries_the_tools_schema_unless_turned_off(httpserver, tool_schemas):
    server = ChatServer(httpserver, [(200, migration_plan())])
    planner = Planner(client(server.url), tool_schemas=tool_schemas)
    plan = planner.plan(prepared("nights", INPUTS))
    assert len(plan.steps) == 4
    sent = server.requests[0]["body"]["response_format"]["json_schema"]["schema"]
    named = [v["properties"]["tool"].get("const") for v in sent["$defs"]["Step"].get("anyOf", [])]
    if tool_schemas:
        assert sorted(named) == sorted(default_registry().names())
    else:
        assert named == [] and sent == plan_schema()


def test_plans_in_lines_send_no_schema(httpserver):
    lines = 'rate: "MB/s" = link\nanswer = f"{rate}"'
    server = ChatServer(httpserver, [(200, lines)])
    Planner(client(server.url), syntax="lines").plan(prepared("nights", INPUTS))
    assert "response_format" not in server.requests[0]["body"]


def test_an_mcp_servers_draft_07_definitions_are_found_from_the_root_too():
    from stepgraph.tools import recorded_tools

    link = {"type": "object", "properties": {"mbps": {"type": "number"}}, "required": ["mbps"]}
    schema_of_args = {
        "type": "object",
        "properties": {"link": {"$ref": "#/definitions/Link"}},
        "required": ["link"],
        "definitions": {"Link": link},
    }
    [lookup] = recorded_tools(
        {
            "probe": {
                "name": "probe",
                "input_schema": schema_of_args,
                "server": {"name": "s", "command": "python"},
            }
        }
    )
    registry = ToolRegistry([lookup])
    schema = plan_schema(registry)
    assert fits(step(lookup.name, link={"mbps": 450}), schema)
    assert not fits(step(lookup.name, link={"mbps": "fast"}), schema)
