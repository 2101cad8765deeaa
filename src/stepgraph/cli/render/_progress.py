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

from stepgraph.executor import dependencies
from stepgraph.journal import JournalEvent
from stepgraph.model import RunResult, StepGraph
from stepgraph.units import decode_value, format_value

_STYLES = {
    "waiting": "dim",
    "running": "yellow",
    "ok": "green",
    "reused": "cyan",
    "failed": "red",
    "skipped": "magenta",
}
_SETTLED = ("ok", "reused", "failed", "skipped")


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

    def __call__(self, typed: JournalEvent) -> None:
        event = typed.model_dump()
        kind, step = event.get("event"), event.get("step")
        if kind == "plan.proposed":
            plan = StepGraph.model_validate(event["plan"])
            self.console.print(plan_table(plan))
            self.states = {s.id: "waiting" for s in plan.steps}
        elif kind in ("llm.request", "plan.invalid", "plan.repair"):
            self._planner_event(kind, event)
        elif kind == "step.reused" and step:
            self.states[step] = "reused"
            value = format_value(decode_value(event["value"]))
            self.console.print(Text.assemble(("  kept ", "cyan"), f"{step} = {value} (ran before)"))
        elif kind == "action" and step:
            self.states[step] = "running"
            self.notes[step] = f"attempt {event['attempt']}" if event["attempt"] > 1 else ""
        elif kind == "observation" and step:
            self._observation(step, event)
        elif kind == "step.skipped" and step:
            self.states[step] = "skipped"
            self.console.print(Text(f"  skip {step}: {event['reason']}", style="magenta"))
        self.live.update(self._render())

    def _planner_event(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "llm.request":
            line = f"asking the model ({event['purpose']}, attempt {event['attempt']})"
            self.console.print(Text(line, style="dim"))
        elif kind == "plan.invalid":
            problems = "; ".join(event["problems"])
            self.console.print(Text(f"  plan rejected: {problems}", style="yellow"))
        else:
            diff = event["diff"]
            changed = ", ".join([*diff["added"], *diff["changed"]]) or "checks or answer only"
            line = f"repair round {event['round']}: changed {changed}"
            self.console.print(Text(line, style="bold yellow"))

    def _observation(self, step: str, event: dict[str, Any]) -> None:
        took = f"{event['duration_ms']:.1f} ms"
        if event["ok"]:
            self.states[step] = "ok"
            value = format_value(decode_value(event["value"]))
            self.console.print(Text.assemble(("  ok   ", "green"), f"{step} = {value}  ({took})"))
        else:
            self.states[step] = "failed" if event["final"] else "running"
            again = "" if event["final"] else ", retrying"
            line = f"{step}: {event['error']}  ({took}, attempt {event['attempt']}{again})"
            self.console.print(Text.assemble(("  fail ", "red"), line))

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
    if result.journal:
        console.print(Text.assemble(("Journal: ", "bold"), result.journal))
