"""The plan's JSON schema as the response format: the step graph, and each tool's own arguments.

A server that constrains output to a schema (llama.cpp's grammar, OpenAI's structured
outputs) can hold a plan to more than the `StepGraph` shape: with the tools known, a step is
one of the tools, by name, with exactly that tool's arguments (`tool_schemas`). A model
then cannot call a tool that does not exist or pass an argument it does not take. Where an
argument wants a number or a record, a `${reference}` to an earlier step is allowed as well,
since that is how outputs flow. The static checks still validate every plan: the schema
only narrows what can be written.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from stepgraph.model import StepGraph
from stepgraph.tools import ToolRegistry

# A whole argument that is one reference: an earlier step's output or a task input.
_REFERENCE = {
    "type": "string",
    "pattern": r"^\$\{[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*\}$",
    "description": "An earlier step's output or a task input, e.g. '${rate}'.",
}


def plan_schema(tools: ToolRegistry | None = None) -> dict[str, Any]:
    """The `StepGraph` JSON schema; with `tools`, each step is one of them with its arguments."""
    schema = StepGraph.model_json_schema()
    if tools is None or not list(tools):
        return schema
    definitions = schema["$defs"]
    step = definitions.pop("Step")
    variants = []
    for item in tools:
        parameters = _hoisted(item.name, item.parameters, definitions)
        variant = copy.deepcopy(step)
        variant["title"] = f"Step calling {item.name}"
        variant["properties"]["tool"] = {"const": item.name, "type": "string"}
        variant["properties"]["args"] = {**_referable(parameters), "title": "Args"}
        variant["required"] = sorted({*step.get("required", ()), "tool", "args"})
        variants.append(variant)
    definitions["Step"] = {"anyOf": variants, "description": step.get("description", "")}
    return schema


def _hoisted(name: str, parameters: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema with its own definitions moved to the root, under its name.

    A reference inside it is resolved from the root of the schema it now sits in; an MCP
    server's schema may keep them as draft-07 `definitions` instead of `$defs`.
    """
    text = json.dumps(parameters)
    for section in ("$defs", "definitions"):
        for key in parameters.get(section, {}):
            text = text.replace(f'"#/{section}/{key}"', f'"#/$defs/{name}__{key}"')
    moved: dict[str, Any] = json.loads(text)
    for section in ("$defs", "definitions"):
        for key, value in moved.pop(section, {}).items():
            definitions[f"{name}__{key}"] = value
    return moved


def _referable(parameters: dict[str, Any]) -> dict[str, Any]:
    """Each argument that takes no string as it is also takes a whole `${reference}`."""
    properties = parameters.get("properties")
    if not isinstance(properties, dict):  # a tool taking anything: nothing to narrow
        return {"type": "object", "additionalProperties": True}
    widened = {
        key: value if _takes_strings(value) else {"anyOf": [value, _REFERENCE]}
        for key, value in properties.items()
    }
    return {**parameters, "properties": widened}


def _takes_strings(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        return "enum" not in schema and "const" not in schema and "pattern" not in schema
    return any(_takes_strings(option) for option in schema.get("anyOf", ()))
