"""Pictures of runs: the step graph (Mermaid, DOT, PNG, SVG) and a timeline (Gantt)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import networkx as nx

from stepgraph.cli.render._states import journal_step_states
from stepgraph.engine import PlanFile
from stepgraph.exceptions import JournalError, StepgraphError, TaskFileError
from stepgraph.executor import build_graph
from stepgraph.journal import Journal, read_journal
from stepgraph.model import StepGraph
from stepgraph.task import load_task

COLOURS = {
    "verified": "#2e7d32",  # a verdict checked its value
    "unchecked": "#fff59d",  # it ran; nothing checked it: never green
    "check_failed": "#fb8c00",
    "failed": "#e53935",
    "skipped": "#bdbdbd",
    "planned": "#e0e0e0",
    "ok": "#81c784",  # a bar of the timeline that ended well
}


@dataclass
class Picture:
    """A plan and, when drawn from a journal, the outcome of each step."""

    plan: StepGraph
    outcomes: dict[str, str] = field(default_factory=dict)

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
    return Picture(plan, outcomes)


def to_mermaid(picture: Picture) -> str:
    """A Mermaid flowchart, with a class per outcome."""
    lines = ["flowchart LR"]
    for step in picture.plan.steps:
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


def draw(picture: Picture, out: Path, format_: str | None = None) -> None:
    """Draw the graph to a PNG or SVG file with matplotlib, one column per generation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    graph = picture.graph
    for layer, nodes in enumerate(nx.topological_generations(graph)):
        for node in nodes:
            graph.nodes[node]["layer"] = layer
    positions = nx.multipartite_layout(graph, subset_key="layer")
    width = 2 + 2 * (max((d["layer"] for _, d in graph.nodes(data=True)), default=0) + 1)
    figure, axes = plt.subplots(figsize=(width, 1.5 + 0.6 * len(graph)))
    colours = [COLOURS[picture.outcome(node)] for node in graph]
    nx.draw_networkx(
        graph,
        positions,
        ax=axes,
        node_color=colours,
        node_size=2200,
        node_shape="s",
        font_size=8,
        arrows=True,
    )
    present = dict.fromkeys(picture.outcome(node) for node in graph)
    axes.legend(handles=[Patch(color=COLOURS[name], label=name) for name in present], fontsize=8)
    axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(out, format=format_)
    plt.close(figure)


@dataclass
class Bar:
    """One attempt of one step on the timeline."""

    step: str
    start: datetime
    end: datetime
    ok: bool


def timeline(journal: Journal) -> list[Bar]:
    """Every attempt, from its action to its observation, in the order they ended."""
    starts: dict[tuple[str, int], datetime] = {}
    bars: list[Bar] = []
    for event in journal.events:
        data = event.model_dump()
        if event.event == "action" and event.step:
            starts[(event.step, data["attempt"])] = datetime.fromisoformat(event.ts)
        elif event.event == "observation" and event.step:
            start = starts.get((event.step, data["attempt"]))
            if start is not None:
                bars.append(Bar(event.step, start, datetime.fromisoformat(event.ts), data["ok"]))
    return bars


def gantt(journal: Journal, out: Path) -> None:
    """A timeline picture: one bar per attempt, so overlap and slow steps show at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = timeline(journal)
    if not bars:
        raise StepgraphError("the journal has no completed step to draw")
    origin = min(bar.start for bar in bars)
    order = list(dict.fromkeys(bar.step for bar in bars))
    figure, axes = plt.subplots(figsize=(10, 1 + 0.4 * len(order)))
    for bar in bars:
        left = (bar.start - origin).total_seconds() * 1000
        length = max((bar.end - bar.start).total_seconds() * 1000, 0.5)
        colour = COLOURS["ok" if bar.ok else "failed"]
        axes.barh(order.index(bar.step), length, left=left, color=colour)
    axes.set_yticks(range(len(order)), labels=order)
    axes.invert_yaxis()
    axes.set_xlabel("milliseconds since the first action")
    axes.set_title(f"run {journal.events[0].run_id}")
    figure.tight_layout()
    figure.savefig(out)
    plt.close(figure)
