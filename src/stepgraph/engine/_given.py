"""Plans the planner did not make: from a task file, a plan file or a person's edit."""

from __future__ import annotations

import networkx as nx

from stepgraph.exceptions import PlanValidationError
from stepgraph.executor import check_plan
from stepgraph.model import StepGraph
from stepgraph.task import PreparedTask
from stepgraph.verifiers import grounding_problems


def check_given_plan(plan: StepGraph, task: PreparedTask) -> nx.DiGraph:
    """The static checks, with the plan's own inputs, and grounding where the task opts in.

    A person's plan for a task that names its inputs is not held to the goal's words
    unless the task says ``grounded: true``; the planner's plans always are (for a goal
    typed with its numbers).
    """
    problems = grounding_problems(plan, task) if task.task.grounded else []
    try:
        graph = check_plan(plan, task.for_plan(plan))
    except PlanValidationError as e:
        raise PlanValidationError([*e.problems, *problems]) from None
    if problems:
        raise PlanValidationError(problems)
    return graph
