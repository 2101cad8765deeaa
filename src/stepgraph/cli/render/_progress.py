"""What `stepgraph run` shows: the plan, live progress, observations, verdicts, the answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from stepgraph.cli.render._budget import budget_table, has_limits
from stepgraph.cli.render._lines import render_event
from stepgraph.executor import dependencies
from stepgraph.journal import (
    Action,
    JournalEvent,
    LLMRequest,
    ObservationEvent,
    PlanInvalid,
    PlanProposed,
    PlanRepair,
    StepReused,
    StepSkipped,
)
from stepgraph.model import RunResult, RunStatus, StepGraph

_STYLES = {
    "waiting": "dim",
    "running": "yellow",
    "ok": "green",
    "reused": "cyan",
    "failed": "red",
    "skipped": "magenta",
}
_SETTLED = ("ok", "reused", "failed", "skipped")
# The events printed while a run is on screen; thoughts, actions and verdicts are left
# to the plan table, the live step table and the verification table after the run.
_PRINTED = (LLMRequest, PlanInvalid, PlanRepair, StepReused, ObservationEvent, StepSkipped)


def plan_table(plan: StepGraph) -> Table:
    """The plan as a table: id, tool, arguments with the thought, what each step waits for."""
    table = Table(title=Text(plan.thought.strip() or "Plan"), title_justify="left", expand=True)
    table.add_column("step", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("arguments and thought", overflow="fold", ratio=4)
    table.add_column("depends on", overflow="fold", ratio=1)
    for step in plan.steps:
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in step.args.items())
        if step.expect_unit:
            args += f"  -> {step.expect_unit}"
        detail = Text(args)
        if step.thought:
            detail.append("\n" + step.thought, style="dim italic")
        table.add_row(Text(step.id), Text(step.tool), detail, Text(", ".join(dependencies(step))))
    return table


class LiveProgress:
    """A journal listener: prints plans, model exchanges and observations, keeps a live table."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.states: dict[str, str] = {}
        self.notes: dict[str, str] = {}
        self.live = Live(self._render(), console=console, transient=True, refresh_per_second=8)

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.live.__exit__(*exc)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop redrawing while a person answers a prompt."""
        self.live.stop()
        try:
            yield
        finally:
            self.live.start()

    def __call__(self, event: JournalEvent) -> None:
        if isinstance(event, PlanProposed):
            plan = StepGraph.model_validate(event.plan)
            self.console.print(plan_table(plan))  # the plan as a table, not as a line
            self.states = {s.id: "waiting" for s in plan.steps}
        elif event.step is not None:
            self._track(event, event.step)
        if isinstance(event, _PRINTED):
            line = render_event(event)
            if line is not None:
                self.console.print(line, highlight=False)
        self.live.update(self._render())

    def _track(self, event: JournalEvent, step: str) -> None:
        """Move the step's state in the live table."""
        if isinstance(event, Action):
            self.states[step] = "running"
            self.notes[step] = f"attempt {event.attempt}" if event.attempt > 1 else ""
        elif isinstance(event, ObservationEvent):
            failed = "failed" if event.final else "running"
            self.states[step] = "ok" if event.ok else failed
        elif isinstance(event, StepReused):
            self.states[step] = "reused"
        elif isinstance(event, StepSkipped):
            self.states[step] = "skipped"

    def _render(self) -> Group:
        running = [step for step, state in self.states.items() if state == "running"]
        done = sum(state in _SETTLED for state in self.states.values())
        header = Text(f"{done}/{len(self.states)} steps done", style="bold")
        if running:
            header.append(f"  running in parallel: {', '.join(running)}", style="yellow")
        table = Table.grid(padding=(0, 2))
        for step, state in self.states.items():
            table.add_row(step, Text(state, style=_STYLES[state]), self.notes.get(step, ""))
        return Group(header, table)


def show_result(console: Console, result: RunResult) -> None:
    """Print the verdicts, the answer, the status and the journal path."""
    table = Table(title="Verification", title_justify="left", expand=True)
    for column in ("", "kind", "step", "what was compared"):
        table.add_column(column, overflow="fold")
    for verdict in result.verdicts:
        mark = Text("pass", style="green") if verdict.passed else Text("FAIL", style="bold red")
        table.add_row(mark, verdict.kind.value, Text(verdict.step or ""), Text(verdict.description))
    if result.verdicts:
        console.print(table)
    if result.answer:
        console.print(Text.assemble(("Answer: ", "bold"), result.answer))
    style = "bold green" if result.verified else "bold red"
    passed = sum(v.passed for v in result.verdicts)
    summary = f"  ({passed}/{len(result.verdicts)} verdicts passed)"
    console.print(Text.assemble(("Status: ", "bold"), (result.status.value, style), summary))
    if result.budget is not None and has_limits(result.budget):
        console.print(budget_table(result.budget))
    if result.journal:
        console.print(Text.assemble(("Journal: ", "bold"), result.journal))
    if result.status is RunStatus.AWAITING_APPROVAL:
        console.print(
            Text(
                f"parked until a person decides: stepgraph approve {result.run_id} --by NAME "
                "(or --reject), or on the page of `stepgraph serve`"
            )
        )
