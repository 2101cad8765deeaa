"""A tool served by an MCP server: its JSON schema checks plans, its hints count only if trusted."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pint
from pydantic import BaseModel, Field

from stepgraph.exceptions import StepgraphError, ToolArgumentError, ToolError
from stepgraph.model import McpServerSpec
from stepgraph.tools._registry import Tool
from stepgraph.units import display_data, parse_quantity

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError

_NUMBER_FIRST = re.compile(r"^\s*[-+]?(\d|\.\d)")

Caller = Callable[[str, dict[str, Any]], Any]


class McpToolDefinition(BaseModel):
    """What a server said about one tool: enough to validate plans and to replay without it."""

    name: str = Field(description="The tool's name on its server.")
    description: str = Field("", description="The server's description of the tool.")
    input_schema: dict[str, Any] = Field(description="JSON schema of the arguments.")
    server: McpServerSpec = Field(description="The server that serves the tool.")
    read_only: bool | None = Field(None, description="The server's readOnlyHint.")
    destructive: bool | None = Field(None, description="The server's destructiveHint.")
    idempotent: bool | None = Field(None, description="The server's idempotentHint.")


def _json_arg(value: Any) -> Any:
    """An argument as JSON: a pure number stays a number, a quantity becomes '450 Mbit/s'."""
    if isinstance(value, pint.Quantity) and value.dimensionless:
        value = value.to("dimensionless").magnitude
    return display_data(value)


def _from_text(value: Any) -> Any:
    """Answers with units ('450 Mbit/s') become quantities; other text and data stay as they are."""
    if isinstance(value, str) and _NUMBER_FIRST.match(value):
        try:
            return parse_quantity(value)
        except StepgraphError:
            return value
    if isinstance(value, list):
        return [_from_text(item) for item in value]
    if isinstance(value, dict):
        return {key: _from_text(item) for key, item in value.items()}
    return value


def result_value(tool: str, structured: Any, texts: list[str], is_error: bool) -> Any:
    """The value of a tool result: structured content if any (unwrapped), else its text."""
    if is_error:
        raise ToolError(f"tool '{tool}' reported an error: {' '.join(texts) or 'no message'}")
    if isinstance(structured, dict) and set(structured) == {"result"}:
        structured = structured["result"]  # how SDK servers wrap a plain return value
    if structured is None:
        structured = "\n".join(texts)
    return _from_text(structured)


def _problem(error: SchemaError) -> str:
    where = ".".join(str(part) for part in error.absolute_path) or "arguments"
    return f"'{where}': {error.message}"


class McpTool(Tool):
    """A tool whose calls go to an MCP server; `call` is how this process reaches it."""

    def __init__(self, definition: McpToolDefinition, call: Caller) -> None:
        # Tool.__init__ reads a Python function's hints; here the server's schema is the truth.
        self.definition = definition
        self._call = call
        self.name = definition.name
        self.func = self._run
        self.is_async = False
        self.infer = None
        self.reverse = None
        self.expression_args = frozenset()
        trusted = definition.server.trusted
        # Untrusted hints are ignored: the tool may change the world and is never re-run blindly.
        self.side_effects = not (trusted and definition.read_only is True)
        self.idempotent = trusted and (
            definition.read_only is True or definition.idempotent is True
        )
        # SDK servers send the docstring as written; the planner reads it as flowing text.
        paragraphs = definition.description.split("\n\n")
        text = "\n\n".join(" ".join(part.split()) for part in paragraphs if part.strip())
        self.description = text or f"tool '{self.name}' of an MCP server"
        from jsonschema import Draft202012Validator  # comes with the `mcp` extra

        self._validator = Draft202012Validator(definition.input_schema)

    @property
    def server(self) -> McpServerSpec:
        """The server this tool comes from."""
        return self.definition.server

    def _run(self, **args: Any) -> Any:
        return self._call(self.name, args)

    @property
    def parameters(self) -> dict[str, Any]:
        """The server's JSON schema of the arguments, without its titles."""
        schema = {k: v for k, v in self.definition.input_schema.items() if k != "title"}
        schema["properties"] = {
            name: {k: v for k, v in prop.items() if k != "title"}
            for name, prop in schema.get("properties", {}).items()
        }
        return schema

    def schema(self) -> dict[str, Any]:
        """As any tool's, plus the server: its fingerprint changes when the server does."""
        return {**super().schema(), "server": self.server.identity}

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as JSON, checked against the server's schema."""
        data = {name: _json_arg(value) for name, value in args.items()}
        problems = [_problem(e) for e in self._validator.iter_errors(data)]
        if problems:
            raise ToolArgumentError(f"tool '{self.name}': {'; '.join(problems)}", tool=self.name)
        return data

    def literal_arg_problems(self, args: dict[str, Any], referenced: Iterable[str]) -> list[str]:
        """Check names, required arguments and the values known before the run."""
        schema = self.definition.input_schema
        properties: dict[str, Any] = schema.get("properties", {})
        referenced = set(referenced)
        allowed = ", ".join(properties) or "none"
        problems = [
            f"unknown argument '{name}' for tool '{self.name}' (allowed: {allowed})"
            for name in args
            if properties and name not in properties
        ]
        problems += [
            f"missing required argument '{name}' of tool '{self.name}'"
            for name in schema.get("required", [])
            if name not in args
        ]
        for name, value in args.items():
            if name in referenced or name not in properties:
                continue
            sub = type(self._validator)({**properties[name], "$defs": schema.get("$defs", {})})
            problems += [
                f"argument '{name}': {e.message}" for e in sub.iter_errors(_json_arg(value))
            ]
        return problems

    def __reduce__(self) -> Any:
        raise TypeError(
            "an MCP tool is called through this process's session with its server; "
            "it cannot run on another machine's worker (use the thread backend)"
        )

    def __repr__(self) -> str:
        return f"McpTool({self.name!r}, server={self.server.label!r})"


def recorded_tools(definitions: dict[str, dict[str, Any]]) -> list[McpTool]:
    """Stand-ins for the MCP tools a journal recorded: they validate plans, never call a server."""

    def offline(name: str, args: dict[str, Any]) -> Any:
        raise ToolError(f"tool '{name}': a replay does not contact MCP servers")

    return [McpTool(McpToolDefinition.model_validate(d), offline) for d in definitions.values()]


def mcp_definitions(tools: Iterable[Tool]) -> dict[str, dict[str, Any]]:
    """The definitions of the MCP tools among `tools`, as the journal keeps them."""
    return {
        item.name: item.definition.model_dump(mode="json")
        for item in tools
        if isinstance(item, McpTool)
    }
