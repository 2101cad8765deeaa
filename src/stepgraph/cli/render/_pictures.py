"""Pictures of runs: what a picture shows (`Picture`), and the graph as Mermaid and DOT text.

The PNG/SVG drawing is `_draw.py`, the timeline `_gantt.py`; all colour steps alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from stepgraph.cli.render._palette import SWATCHES
from stepgraph.cli.render._states import journal_step_states
from stepgraph.engine import PlanFile
from stepgraph.exceptions import JournalError, TaskFileError
from stepgraph.executor import build_graph, natural_key
from stepgraph.journal import Journal, read_journal
from stepgraph.model import StepGraph
from stepgraph.task import load_task

COLOURS = {state: swatch.fill for state, swatch in SWATCHES.items()}


@dataclass
class Picture:
    """A plan and, when drawn from a journal, the outcome of each step."""

    plan: StepGraph
    outcomes: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    status: str | None = None  # how the run ended (verified, unverified, ...); None: not ended

    @property
    def graph(self) -> nx.DiGraph:
        """The plan's dependency graph."""
        return build_graph(self.plan.steps)

    def outcome(self, step: str) -> str:
        """verified, unchecked, check_failed, failed, skipped, or planned (not run)."""
        return self.outcomes.get(step, "planned")


def load_picture(path: Path) -> Picture:
    """Read a task file, a plan file (or bare plan JSON), or a journal."""
    if path.suffix == ".jsonl":
        return _from_journal(read_journal(path))
    if path.suffix in (".yaml", ".yml"):
        task = load_task(path)
        if task.plan is None:
            raise TaskFileError("the task has no plan to draw", path=str(path))
        return Picture(task.plan)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TaskFileError(f"cannot read a plan from it: {e}", path=str(path)) from e
    if "plan_hash" in data:
        return Picture(PlanFile.model_validate(data).plan)
    return Picture(StepGraph.model_validate(data))


def _from_journal(journal: Journal) -> Picture:
    plans = [e for e in journal.events if e.event in ("plan.proposed", "plan.edited")]
    if not plans:
        raise JournalError("the journal holds no plan", path=str(journal.path))
    plan = StepGraph.model_validate(plans[-1].model_dump()["plan"])
    outcomes = journal_step_states(journal)
    ends = [e for e in journal.events if e.event == "run.end"]
    status = str(ends[-1].model_dump()["status"]) if ends else None
    run_id = journal.events[0].run_id if journal.events else None
    return Picture(plan, outcomes, run_id=run_id, status=status)


def to_mermaid(picture: Picture) -> str:
    """A Mermaid flowchart, with a class per outcome."""
    lines = ["flowchart LR"]
    for step in sorted(picture.plan.steps, key=lambda s: natural_key(s.id)):
        lines.append(f'    {step.id}["{step.id}<br/>{step.tool}"]:::{picture.outcome(step.id)}')
    lines += [f"    {a} --> {b}" for a, b in picture.graph.edges]
    lines += [f"    classDef {name} fill:{colour}" for name, colour in COLOURS.items()]
    return "\n".join(lines) + "\n"


def to_dot(picture: Picture) -> str:
    """A Graphviz DOT digraph, filled by outcome."""
    lines = ["digraph plan {", "    rankdir=LR;", "    node [shape=box, style=filled];"]
    for step in picture.plan.steps:
        colour = COLOURS[picture.outcome(step.id)]
        lines.append(f'    "{step.id}" [label="{step.id}\\n{step.tool}", fillcolor="{colour}"];')
    lines += [f'    "{a}" -> "{b}";' for a, b in picture.graph.edges]
    return "\n".join(lines + ["}"]) + "\n"
