"""The planner's prompt: package data in parts, rendered with explicit variables."""

from __future__ import annotations

import importlib.resources
import json
import re
from functools import cache
from typing import Any

import yaml

from stepgraph.model import StepGraph
from stepgraph.tools import ToolRegistry

MAX_PLAN_STEPS = 200


@cache
def template(name: str) -> str:
    """The text of one prompt part from ``planner/prompts/``."""
    return (importlib.resources.files(__package__) / "prompts" / name).read_text(encoding="utf-8")


def render(name: str, **variables: str) -> str:
    """Fill ``{{name}}`` placeholders; a missing or unused variable is a bug, so it raises."""
    text = template(name)
    wanted = set(re.findall(r"\{\{(\w+)\}\}", text))
    if wanted != set(variables):
        raise KeyError(f"prompt {name} wants {sorted(wanted)}, got {sorted(variables)}")
    for key, value in variables.items():
        text = text.replace("{{" + key + "}}", value)
    return text.strip()


def plan_schema() -> dict[str, Any]:
    """The `StepGraph` JSON schema: the output contract, and the response_format sent."""
    return StepGraph.model_json_schema()


def tool_guide(tools: ToolRegistry) -> str:
    """One entry per tool: name, what it is for and not for, side effects, arguments."""
    entries = []
    for item in tools:
        arguments = json.dumps(item.parameters, separators=(",", ":"))
        effects = "changes the world; use only when asked" if item.side_effects else "none"
        entries.append(
            f"## {item.name}\n{item.description}\nSide effects: {effects}\nArguments: {arguments}"
        )
    return render("tool_guide.md", tools="\n\n".join(entries))


def compact_plan(plan: dict[str, Any]) -> str:
    """A plan as JSON with one step per line: readable, and fewer tokens than indenting."""
    lines = []
    for key, value in plan.items():
        if key == "steps":
            steps = ",\n  ".join(json.dumps(step) for step in value)
            lines.append(f' "steps": [\n  {steps}]')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def few_shot() -> str:
    """The worked examples, each a goal, its inputs (often none) and the plan."""
    examples = yaml.safe_load(template("examples.yaml"))
    parts = []
    for number, example in enumerate(examples, start=1):
        plan = compact_plan(example["plan"])
        inputs = json.dumps(example["inputs"]) if example["inputs"] else "none"
        parts.append(f"Example {number}\nGoal: {example['goal']}\nInputs: {inputs}\nPlan:\n{plan}")
    return "\n\n".join(parts)


def system_prompt(tools: ToolRegistry) -> str:
    """Role, rules, tool guide, output contract with limits, and the worked examples."""
    return "\n\n".join(
        [
            template("role.md").strip(),
            template("rules.md").strip(),
            tool_guide(tools),
            render("output.md", max_steps=str(MAX_PLAN_STEPS)),
            few_shot(),
        ]
    )


def lines_examples() -> str:
    """The worked examples for plans in lines: goal, inputs as the engine lists them, lines."""
    examples = yaml.safe_load(template("examples_lines.yaml"))
    parts = []
    for number, example in enumerate(examples, start=1):
        shown = {
            name: f'{value}  ("{quote}")' for name, (value, quote) in example["inputs"].items()
        }
        parts.append(
            f"Example {number}\n{goal_message(example['goal'], shown, syntax='lines')}\n"
            f"Plan:\n{example['lines']}"
        )
    return "\n\n".join(parts)


def lines_system_prompt(tools: ToolRegistry) -> str:
    """The system prompt for plans in lines: rules, the tool guide and the worked examples."""
    return "\n\n".join([template("lines.md").strip(), tool_guide(tools), lines_examples()])


FORMS = {
    "json": "one JSON object",
    "lines": 'plan lines (name = expression, one per line, then answer = f"...")',
}


def goal_message(goal: str, inputs: dict[str, str], *, syntax: str = "json") -> str:
    """The user's turn: the goal and the named inputs the plan may reference."""
    prefix = "${inputs.%s}" if syntax == "json" else "%s"
    listed = "\n".join(f"- {prefix % name} = {value}" for name, value in inputs.items())
    if not listed:
        return f"Goal: {goal}\nInputs: none (write the goal's numbers, with units, in the steps)"
    return f"Goal: {goal}\nInputs:\n{listed}"
