"""What `stepgraph run` shows: the plan, live progress, observations, verdicts, the answer.

The journal listener (`ProgressBoard.record`) only records; a painter thread of ours draws
at most `refresh_per_second` frames a second, each a summary (counts by state, elapsed
time, critical-path progress) and the first running steps, never one row per step. A
frame prints the events that arrived since the last one, up to `lines_per_frame` routine
lines (failures and model exchanges always print), so a 20,000-step run stays readable and
costs the scheduler nothing; everything is in the journal (`stepgraph show`).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from stepgraph.cli.render._board import ProgressBoard, Snapshot, routine
from stepgraph.cli.render._budget import budget_table, has_limits
from stepgraph.cli.render._lines import render_event, source_marks
from stepgraph.executor import dependencies
from stepgraph.journal import JournalEvent, PlanProposed
from stepgraph.model import RunResult, RunStatus, StepGraph
from stepgraph.references import find_references

_STYLES = {
    "waiting": "dim",
    "running": "yellow",
    "ok": "green",
    "reused": "cyan",
    "failed": "red",
    "skipped": "magenta",
}
# A plan or verification table longer than this shows its head and says how much is left.
TABLE_ROWS = 40


def plan_table(plan: StepGraph, limit: int = TABLE_ROWS, total: int | None = None) -> Table:
    """The plan as a table: id, tool, arguments with the thought, what each step waits for.

    `total`: the plan's size when `plan` holds only its first steps.
    """
    table = Table(title=Text(plan.thought.strip() or "Plan"), title_justify="left", expand=True)
    table.add_column("step", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("arguments and thought", overflow="fold", ratio=4)
    table.add_column("depends on", overflow="fold", ratio=1)
    for step in plan.steps[:limit]:
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in step.args.items())
        if step.expect_unit:
            args += f"  -> {step.expect_unit}"
        detail = Text(args)
        if step.thought:
            detail.append("\n" + step.thought, style="dim italic")
        table.add_row(Text(step.id), Text(step.tool), detail, Text(", ".join(dependencies(step))))
    shown = min(limit, len(plan.steps))
    hidden = (len(plan.steps) if total is None else total) - shown
    if hidden > 0:
        more = f"... {hidden:,} more steps (`stepgraph plan` prints them all)"
        table.add_row("", "", Text(more, style="dim"), "")
    return table


def _may_refer(args: Any) -> bool:
    """Whether a step's arguments may hold a reference (a ``${`` anywhere in their JSON)."""
    if not args:
        return False
    try:
        return b"${" in orjson.dumps(args)
    except TypeError:  # not plain JSON (a plan built in Python): look properly
        return True


def _levels(steps: list[dict[str, Any]]) -> dict[str, int]:
    """Each step's place on its longest chain of dependencies (0 for steps that wait for none).

    Read from the plan's JSON: typing 20,000 steps again would cost the run (the GIL).
    Counted on plain dicts (Kahn's order, level by level) rather than a networkx graph:
    building one cost 8 us a step, a third of what the display adds to a 20k-step run.
    """
    ids = {step["id"] for step in steps}
    waiting: dict[str, int] = dict.fromkeys(ids, 0)
    freed: dict[str, list[str]] = {}
    for step in steps:
        args, named = step.get("args"), step.get("depends_on")
        # Most steps refer to nothing: one C-speed look for "${" instead of a walk.
        found = [ref.step for ref in find_references(args)] if _may_refer(args) else []
        if not found and not named:
            continue
        upstream = {dep for dep in (*found, *(named or ())) if dep in ids}
        waiting[step["id"]] = len(upstream)
        for dep in upstream:
            freed.setdefault(dep, []).append(step["id"])
    levels: dict[str, int] = {}
    level, ready = 0, [step_id for step_id, count in waiting.items() if count == 0]
    while ready:
        later = []
        for step_id in ready:
            levels[step_id] = level
            for successor in freed.get(step_id, ()):
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    later.append(successor)
        level, ready = level + 1, later
    return levels if len(levels) == len(waiting) else {}  # a cycle: nothing to show


class LiveProgress:
    """The live display: a listener that records, and a painter thread that draws."""

    def __init__(
        self,
        console: Console,
        *,
        refresh_per_second: float = 10.0,
        lines_per_frame: int = 12,  # routine lines: 120 a second still read as a flow
        show_running: int = 8,
    ) -> None:
        self.console = console
        self.board = ProgressBoard(routine_per_frame=lines_per_frame)
        self.frames = 0  # frames drawn: a test compares them with events recorded
        self._interval = 1.0 / refresh_per_second
        self._lines_per_frame = lines_per_frame
        self._show_running = show_running
        self._levels: dict[str, int] = {}
        self._per_level: list[int] = []  # steps on each level
        self._settled_per_level: list[int] = []
        self._elided = 0
        self._held: list[JournalEvent] = []  # a plan table waiting to learn if a review shows it
        self._last = Snapshot(0, Counter(), [], 0, [], [], 0.0)
        self._paint_lock = threading.Lock()  # the painter, `reviewing`, `__exit__` take turns
        self._stop = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self._painter: threading.Thread | None = None
        self.live = Live(console=console, transient=True, auto_refresh=False)

    # The listener: `engine.run(listeners=[progress])` calls this for every event.
    def __call__(self, event: JournalEvent) -> None:
        self.board.record(event)

    @property
    def states(self) -> dict[str, str]:
        """Each step's state as the display last heard it."""
        return self.board.states

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        self._painter = threading.Thread(target=self._paint_loop, name="live-display", daemon=True)
        self._painter.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._resume.set()
        if self._painter is not None:
            self._painter.join()
        self._paint()
        self.live.__exit__(*exc)
        if self._last.total:
            self.console.print(self._summary(self._last), highlight=False)

    @contextmanager
    def reviewing(self) -> Iterator[None]:
        """Stop redrawing while a person reviews a plan at a prompt.

        What arrived so far is printed, but for the table of the plan under review: the
        review shows that plan in full (with its resolved arguments and side effects), and
        two tables of one plan read as two plans.
        """
        self._resume.clear()
        with self._paint_lock:
            self._paint(reviewing=True)
            self.live.stop()
        try:
            yield
        finally:
            self.live.start()
            self._resume.set()

    def _paint_loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._resume.wait()
            if self._stop.is_set():
                return
            with self._paint_lock:
                if self._resume.is_set():  # `reviewing` may have begun while we waited
                    self._paint()

    def _paint(self, *, reviewing: bool = False) -> None:
        """Draw one frame: print what arrived, then redraw the summary below it."""
        frame = self.board.snapshot(self._show_running)
        self._elided += frame.elided
        for event in frame.to_print:
            if isinstance(event, PlanProposed):
                self._adopt(event)
        events = [*self._held, *frame.to_print]
        self._held = []
        proposals = [i for i, event in enumerate(events) if isinstance(event, PlanProposed)]
        if reviewing and proposals:  # the review prints this plan itself
            del events[proposals[-1]]
        elif proposals and proposals[-1] == len(events) - 1 and not self._stop.is_set():
            # Nothing after it yet: the next event says whether a review shows it (drop)
            # or not (print), so a frame drawn just before the prompt cannot print it twice.
            self._held = [events.pop()]
        printed = self._lines(events, self._lines_per_frame)
        for step in frame.newly_settled:
            level = self._levels.get(step)
            if level is not None:
                self._settled_per_level[level] += 1
        self._last = frame
        if printed:
            self.console.print(Group(*printed), highlight=False)
        self.live.update(self._render(frame), refresh=True)
        self.frames += 1

    def _adopt(self, event: PlanProposed) -> None:
        """Count the new plan's steps per level, for the critical-path progress."""
        self._levels = _levels(event.plan.get("steps", []))
        self._per_level = [0] * (max(self._levels.values(), default=-1) + 1)
        for level in self._levels.values():
            self._per_level[level] += 1
        self._settled_per_level = [0] * len(self._per_level)

    def _lines(self, events: list[JournalEvent], budget: int) -> list[RenderableType]:
        """The renderables for a frame; routine lines past the budget are counted, not drawn."""
        out: list[RenderableType] = []
        routine_lines = 0
        for event in events:
            if isinstance(event, PlanProposed):
                steps = event.plan.get("steps", [])
                head = {**event.plan, "steps": steps[:TABLE_ROWS]}  # all a table shows
                out.append(plan_table(StepGraph.model_validate(head), total=len(steps)))
                continue
            if routine(event):
                routine_lines += 1
                if routine_lines > budget:
                    self._elided += 1
                    continue
            line = render_event(event)
            if line is not None:
                out.append(line)
        if self._elided:
            note = f"... {self._elided:,} more lines like these (all in the journal)"
            out.append(Text(note, style="dim"))
            self._elided = 0
        return out

    def _critical_path(self) -> str:
        """Levels of the longest dependency chain whose steps have all settled."""
        done = 0
        for settled, size in zip(self._settled_per_level, self._per_level, strict=True):
            if settled < size:
                break
            done += 1
        return f"critical path {done}/{len(self._per_level)} levels"

    def _summary(self, frame: Snapshot) -> Text:
        done = sum(frame.counts[state] for state in ("ok", "reused", "failed", "skipped"))
        text = Text(f"{done:,}/{frame.total:,} steps done", style="bold")
        for state in ("running", "ok", "reused", "failed", "skipped"):
            if frame.counts[state]:
                text.append(f"  {frame.counts[state]:,} {state}", style=_STYLES[state])
        text.append(f"  {self._critical_path()}  {frame.elapsed_s:.1f} s")
        return text

    def _render(self, frame: Snapshot) -> RenderableType:
        if not frame.total:
            return Text("")
        lines: list[RenderableType] = [self._summary(frame)]
        for step, note in frame.running:
            lines.append(Text.assemble("  ", (step, "yellow"), f"  {note}" if note else ""))
        hidden = frame.running_count - len(frame.running)
        if hidden > 0:
            lines.append(Text(f"  ... and {hidden:,} more running", style="yellow"))
        return Group(*lines)


def show_result(console: Console, result: RunResult, limit: int = TABLE_ROWS) -> None:
    """Print the verdicts (every failure, the first passes), the answer, the status, the journal."""
    table = Table(title="Verification", title_justify="left", expand=True)
    for column in ("", "kind", "step", "what was compared"):
        table.add_column(column, overflow="fold")
    failed = [verdict for verdict in result.verdicts if not verdict.passed]
    shown = (
        failed + [verdict for verdict in result.verdicts if verdict.passed][: limit - len(failed)]
    )
    ids = {id(verdict) for verdict in shown}
    for verdict in result.verdicts:
        if id(verdict) not in ids:
            continue
        mark = Text("pass", style="green") if verdict.passed else Text("FAIL", style="bold red")
        table.add_row(mark, verdict.kind.value, Text(verdict.step or ""), Text(verdict.description))
    if len(shown) < len(result.verdicts):
        more = f"... {len(result.verdicts) - len(shown):,} more passed"
        table.add_row("", "", "", Text(more, style="dim"))
    if result.verdicts:
        console.print(table)
    if result.answer:
        console.print(Text.assemble(("Answer: ", "bold"), result.answer))
    if result.answer_sources:
        marks = source_marks(result.answer_sources)
        console.print(Text(f"  where each number comes from: {marks}", style="dim"))
    style = "bold green" if result.verified else "bold red"
    if result.status is RunStatus.UNCHECKED:
        style = "bold yellow"
    passed = sum(v.passed for v in result.verdicts)
    summary = f"  ({passed}/{len(result.verdicts)} verdicts passed)"
    console.print(Text.assemble(("Status: ", "bold"), (result.status.value, style), summary))
    if result.recalled_from:
        line = (
            f"  plan recalled from verified run {result.recalled_from} (no model call planned it)"
        )
        console.print(Text(line, style="cyan"))
    unchecked = [step for step, state in result.step_states.items() if state == "unchecked"]
    if unchecked:  # green only where something was checked
        more = f" and {len(unchecked) - 8:,} more" if len(unchecked) > 8 else ""
        console.print(
            Text(
                f"  unchecked (no verdict looked at their values): {', '.join(unchecked[:8])}"
                f"{more}",
                style="yellow",
            )
        )
    if result.status is RunStatus.UNCHECKED:
        console.print(
            Text(
                "  nothing checked the answer's value: give its tool a reverse check "
                "(@tool(reverse=...)) or declare a check that names it (checks: in the plan "
                "or task)",
                style="yellow",
            )
        )
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
