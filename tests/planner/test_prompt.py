import pytest
import yaml

from stepgraph import PreparedTask, StepGraph, Task
from stepgraph.executor import check_plan
from stepgraph.planner._prompt import render, system_prompt, template, tool_guide
from stepgraph.tools import default_registry
from stepgraph.units import parse_quantity
from stepgraph.verifiers import grounding_problems


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_worked_examples_pass_the_static_checks_and_grounding(index):
    """The few-shot plans teach by example, so they must be plans the engine accepts."""
    example = yaml.safe_load(template("examples.yaml"))[index]
    inputs = {name: parse_quantity(value) for name, value in example["inputs"].items()}
    task = PreparedTask(Task(goal=example["goal"]), default_registry(), inputs)
    plan = StepGraph.model_validate(example["plan"])
    graph = check_plan(plan, task.for_plan(plan))
    assert graph.number_of_nodes() == len(example["plan"]["steps"])
    assert grounding_problems(plan, task) == []


def test_one_worked_example_has_independent_branches():
    example = yaml.safe_load(template("examples.yaml"))[1]
    plan = StepGraph.model_validate(example["plan"])
    task = PreparedTask(Task(goal=example["goal"]), default_registry(), {})
    graph = check_plan(plan, task.for_plan(plan))
    roots = [node for node in graph if graph.in_degree(node) == 0]
    assert len(roots) >= 2


def test_the_tool_guide_is_generated_from_the_registry():
    guide = tool_guide(default_registry())
    assert "## calculate" in guide and "do not compute in your head" in guide
    assert '"to_unit"' in guide and "Side effects: none" in guide


def test_the_system_prompt_includes_the_plan_schema():
    assert '"depends_on"' in system_prompt(default_registry())


def test_rendering_with_a_missing_variable_is_a_bug_not_a_silent_gap():
    with pytest.raises(KeyError, match="wants"):
        render("feedback.md", problems="x", form="y")
