import asyncio

import pytest
from pydantic import BaseModel

from stepgraph import StepGraph, ToolArgumentError, ToolDefinitionError, UnitError, tool
from stepgraph.tools import ToolRegistry, default_registry, load_plugin, unit_convert
from stepgraph.units import quantity


def test_schema_comes_from_type_hints_and_docstring():
    @tool(side_effects=True)
    def send_mail(to: str, copies: int = 1) -> str:
        """Send a message.

        Use it only when the user asked
        for mail to go out.

        Args:
            to: Recipient address.
            copies: How many copies to send.
        """
        return to

    schema = send_mail.schema()
    assert schema["name"] == "send_mail"
    assert (
        schema["description"]
        == "Send a message.\n\nUse it only when the user asked for mail to go out."
    )
    assert schema["side_effects"] is True
    assert schema["parameters"]["required"] == ["to"]
    assert schema["parameters"]["properties"]["copies"] == {
        "default": 1,
        "description": "How many copies to send.",
        "type": "integer",
    }


def test_what_a_tool_returns_is_told_to_the_planner_with_its_fields():
    """A record's fields, documented under Returns:, are what a plan refers to by path."""
    from stepgraph.planner._prompt import tool_guide

    @tool
    def find_company(name: str) -> dict:
        """Look up a company by name.

        Args:
            name: The registered name.

        Returns:
            A record with id and
            country.
        """
        return {"id": 1, "country": "DE"}

    assert find_company.description == (
        "Look up a company by name.\n\nReturns: A record with id and country."
    )
    registry = ToolRegistry([find_company])
    assert "Returns: A record with id and country." in tool_guide(registry)


def test_arguments_are_validated_before_the_call():
    calls = []

    @tool
    def double(n: int) -> int:
        """Double a number."""
        calls.append(n)
        return n * 2

    with pytest.raises(ToolArgumentError, match="'n': Input should be a valid integer"):
        double.validate_args({"n": "many"})
    with pytest.raises(ToolArgumentError, match="'extra'"):
        double.validate_args({"n": 1, "extra": 2})
    assert double.validate_args({"n": "4"}) == {"n": 4}
    assert calls == []


def test_a_record_given_where_one_of_its_fields_is_wanted_says_which_fields_it_has():
    """A real small model wrote ``list_shareholders(company)`` for the company's id."""

    @tool
    def list_shareholders(company_id: int) -> list[str]:
        """The holders of a company."""
        return []

    company = {"key": 42, "name": "Acme Data Systems", "country": "DE"}
    with pytest.raises(ToolArgumentError) as refused:
        list_shareholders.validate_args({"company_id": company})
    assert "got a record with key, name, country" in str(refused.value)
    assert "${step.key}" in str(refused.value)
    with pytest.raises(ToolArgumentError) as plain:
        list_shareholders.validate_args({"company_id": "many"})
    assert "record" not in str(plain.value)  # only where a record was given

    class Window(BaseModel):
        start: str
        end: str

    @tool
    def book(window: Window) -> str:
        """Book a window."""
        return "booked"

    with pytest.raises(ToolArgumentError) as missing:
        book.validate_args({"window": {"start": "22:00"}})
    assert "Field required" in str(missing.value) and "record" not in str(missing.value)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        # `list_shareholders(company)` for find_company's record (the suite's acme-holders:
        # the step failed, and the fresh plan made the same call again)
        ({"id": 42, "name": "Acme Data Systems", "country": "DE"}, 42),
        ({"company_id": 17, "name": "Northwind Robotics"}, 17),  # the argument's own name
    ],
)
def test_a_record_with_the_field_an_argument_names_gives_that_field(record, expected):
    @tool
    def list_shareholders(company_id: int) -> list[str]:
        """The holders of a company."""
        return []

    assert list_shareholders.validate_args({"company_id": record}) == {"company_id": expected}


def test_a_tool_with_side_effects_gets_no_field_picked_for_it():
    @tool(side_effects=True)
    def delete_company(company_id: int) -> str:
        """Delete a company."""
        return "deleted"

    with pytest.raises(ToolArgumentError, match="got a record with id"):
        delete_company.validate_args({"company_id": {"id": 42, "name": "Acme"}})


def test_a_record_whose_field_is_itself_no_plain_value_stays_refused():
    @tool
    def list_shareholders(company_id: int) -> list[str]:
        """The holders of a company."""
        return []

    with pytest.raises(ToolArgumentError, match="got a record with id"):
        list_shareholders.validate_args({"company_id": {"id": {"value": 42}}})
    with pytest.raises(ToolArgumentError, match="got a record with id"):
        list_shareholders.validate_args({"company_id": {"id": "forty-two"}})


def test_async_functions_become_async_tools():
    @tool
    async def wait(seconds: float) -> float:
        """Wait a while."""
        await asyncio.sleep(0)
        return seconds

    assert wait.is_async


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x: int) -> int:\n    return x", "needs a docstring"),
        ("def f(x) -> int:\n    '''Doc.'''\n    return x", "needs a type hint"),
        ("def f(*xs: int) -> int:\n    '''Doc.'''\n    return 1", "not allowed"),
    ],
)
def test_functions_that_cannot_be_tools_are_refused(source, message):
    namespace = {}
    exec(source, namespace)  # noqa: S102  # test-local function definitions
    with pytest.raises(ToolDefinitionError, match=message):
        tool(namespace["f"])


def test_two_tools_with_one_name_are_refused():
    @tool(name="unit_convert")
    def other(x: int) -> int:
        """Not the real one."""
        return x

    registry = default_registry()
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.register(other)


def test_unit_convert_takes_a_quantity_or_a_number_with_from_unit():
    assert unit_convert.func(value=quantity(2.5, "TB"), to_unit="GB").magnitude == pytest.approx(
        2500
    )
    assert unit_convert.func(value=450, from_unit="Mbps", to_unit="MB/s").magnitude == 56.25
    args = unit_convert.validate_args({"value": "2.5 TB", "to_unit": "GB"})
    assert unit_convert.func(**args).magnitude == pytest.approx(2500)


def test_a_plugin_that_fails_to_import_is_reported(tmp_path):
    plugin = tmp_path / "broken.py"
    plugin.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ToolDefinitionError, match="failed to import: RuntimeError: boom"):
        load_plugin(plugin)


def test_restricted_registry_keeps_only_allowed_tools():
    registry = default_registry().restricted(["calculate"])
    assert registry.names() == ["calculate"]
    assert isinstance(registry, ToolRegistry)


def test_unit_convert_names_an_unknown_unit():
    with pytest.raises(UnitError, match="unknown unit 'parsecs_per_byte'"):
        unit_convert.func(value=1, from_unit="parsecs_per_byte", to_unit="GB")


def test_every_field_of_the_plan_schema_is_described():
    """The StepGraph schema is what a planner is shown: no field may be left unexplained."""
    schema = StepGraph.model_json_schema()
    models = [schema, *schema["$defs"].values()]
    for model in models:
        for name, prop in model["properties"].items():
            assert prop.get("description"), f"{model.get('title')}.{name} has no description"


def test_unit_convert_refuses_a_result_no_float_holds():
    """1e300 TB in bits overflowed to inf; the reverse check then failed on 'inf bit'."""
    with pytest.raises(UnitError, match="no finite number"):
        unit_convert.func(value=quantity(1e300, "TB"), to_unit="bit")
