import pytest
import yaml

from stepgraph import StepGraph
from stepgraph.executor import validate_plan
from stepgraph.planner._prompt import render, system_prompt, template, tool_guide
from stepgraph.tools import default_registry
from stepgraph.units import parse_quantity


@pytest.mark.parametrize("index", [0, 1])
def test_the_worked_examples_pass_the_static_checks(index):
    """The few-shot plans teach by example, so they must be plans the engine accepts."""
    example = yaml.safe_load(template("examples.yaml"))[index]
    inputs = {name: parse_quantity(value) for name, value in example["inputs"].items()}
    graph = validate_plan(StepGraph.model_validate(example["plan"]), default_registry(), inputs)
    assert graph.number_of_nodes() == len(example["plan"]["steps"])


def test_one_worked_example_has_independent_branches():
    example = yaml.safe_load(template("examples.yaml"))[1]
    graph = validate_plan(StepGraph.model_validate(example["plan"]), default_registry(), {})
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
        render("feedback.md", problems="x")
