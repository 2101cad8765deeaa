"""The planner's prompt: package data in parts, rendered with explicit variables."""

from __future__ import annotations

import importlib.resources
import json
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

import yaml

from stepgraph.model import StepGraph, WorkedExample
from stepgraph.planner._lines_shown import plan_lines
from stepgraph.planner._nearest import nearest
from stepgraph.tools import ToolRegistry

MAX_PLAN_STEPS = 200
# Worked examples a plan-lines prompt shows: each costs prompt time on a CPU server.
SHOWN_EXAMPLES = 3


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


@cache
def worked_examples(name: str) -> tuple[dict[str, Any], ...]:
    """A prompt's worked examples, parsed once: each plan request shows some of them."""
    return tuple(yaml.safe_load(template(name)))


def few_shot(remembered: Sequence[WorkedExample] = ()) -> str:
    """The worked examples, each a goal, its inputs (often none) and the plan.

    Remembered plans (`remembered`) come first and take the places of the fixed ones.
    """
    examples = worked_examples("examples.yaml")
    parts = [_remembered(example, "json") for example in remembered]
    for example in examples[: max(0, len(examples) - len(parts))]:
        plan = compact_plan(example["plan"])
        inputs = json.dumps(example["inputs"]) if example["inputs"] else "none"
        parts.append(f"Goal: {example['goal']}\nInputs: {inputs}\nPlan:\n{plan}")
    return _numbered(parts)


def system_prompt(tools: ToolRegistry, remembered: Sequence[WorkedExample] = ()) -> str:
    """Role, rules, tool guide, output contract with limits, and the worked examples."""
    return "\n\n".join(
        [
            template("role.md").strip(),
            template("rules.md").strip(),
            tool_guide(tools),
            render("output.md", max_steps=str(MAX_PLAN_STEPS)),
            few_shot(remembered),
        ]
    )


def lines_examples(remembered: Sequence[WorkedExample] = (), goal: str | None = None) -> str:
    """The worked examples for plans in lines: goal, inputs as the engine lists them, lines.

    Remembered plans (`remembered`) come first and take the places of the fixed ones. With
    a `goal`, the fixed ones shown are those nearest it (`_nearest`), else the first ones.
    """
    examples = worked_examples("examples_lines.yaml")
    parts = [_remembered(example, "lines") for example in remembered]
    places = max(0, SHOWN_EXAMPLES - len(parts))
    chosen = nearest(goal, examples, places) if goal is not None else examples[:places]
    for example in chosen:
        shown = {
            name: f'{value}  ("{quote}")' for name, (value, quote) in example["inputs"].items()
        }
        parts.append(
            f"{goal_message(example['goal'], shown, syntax='lines')}\nPlan:\n{example['lines']}"
        )
    return _numbered(parts)


def lines_system_prompt(
    tools: ToolRegistry, remembered: Sequence[WorkedExample] = (), goal: str | None = None
) -> str:
    """The system prompt for plans in lines: rules, the tool guide and the worked examples.

    `goal`: the examples shown are the ones nearest it, not the first ones.
    """
    return "\n\n".join(
        [template("lines.md").strip(), tool_guide(tools), lines_examples(remembered, goal)]
    )


def _numbered(parts: list[str]) -> str:
    return "\n\n".join(f"Example {number}\n{part}" for number, part in enumerate(parts, 1))


def _remembered(example: WorkedExample, syntax: str) -> str:
    """A remembered goal and its verified plan, shown as the fixed examples are."""
    plan = StepGraph.model_validate(example.plan).model_dump(mode="json", exclude_defaults=True)
    inputs = plan.pop("inputs", {})
    shown = {name: f'{item["value"]}  ("{item["quote"]}")' for name, item in inputs.items()}
    body = plan_lines(plan) if syntax == "lines" else compact_plan(plan)
    return f"{goal_message(example.goal, shown, syntax=syntax)}\nPlan:\n{body}"


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
