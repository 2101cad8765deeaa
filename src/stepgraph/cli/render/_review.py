"""The interactive approval prompt: a person approves, rejects, edits or revises a plan."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError
from rich.console import Console
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from stepgraph.cli.render._lines import grounding_lines
from stepgraph.engine import Decision, PlanView
from stepgraph.exceptions import PlanValidationError
from stepgraph.model import StepGraph

_CHOICES = {"a": "approve", "r": "reject", "e": "edit", "v": "revise"}


def show_plan_view(console: Console, view: PlanView) -> None:
    """The plan as a reviewer needs it: steps, critical path, parallel groups, side effects."""
    table = Table(title=Text(view.plan.thought.strip() or "Plan to approve"), title_justify="left")
    for column in ("step", "tool", "arguments", "depends on", "thought"):
        table.add_column(column, overflow="fold")
    for row in view.rows:
        tool = Text(
            row.tool + (" (side effects)" if row.side_effects else ""),
            style="bold red" if row.side_effects else "",
        )
        table.add_row(
            Text(row.id), tool, Text(row.args), Text(", ".join(row.depends_on)), Text(row.thought)
        )
    console.print(table)
    if view.origin:  # not the planner's: the approver is told whose plan this was
        console.print(Text(f"This plan was {view.origin}", style="bold cyan"))
    if view.inputs:
        console.print(Text("Inputs as the plan uses them", style="italic"))
        inputs = Table()
        inputs.add_column("input")
        inputs.add_column("value", overflow="fold")
        for name, value in view.inputs.items():
            inputs.add_row(Text(name), Text(value))
        console.print(inputs)
    for line in grounding_lines(view.plan.model_dump(mode="json")):
        console.print(Text(line))
    groups = "; ".join("[" + ", ".join(group) + "]" for group in view.parallel_groups)
    count = f"{len(view.rows)} step{'s' if len(view.rows) != 1 else ''}"
    console.print(Text(f"{count}. Critical path: {' -> '.join(view.critical_path)}"))
    console.print(Text(f"Can run at the same time: {groups}"))
    effects = ", ".join(view.side_effect_tools) or "none"
    console.print(
        Text(
            f"Tools with side effects: {effects}",
            style="bold red" if view.side_effect_tools else "",
        )
    )
    # What an approval binds: the plan with these inputs, tools and template, and no other.
    console.print(Text(f"Approval hash: {view.approval_hash[:16]}", style="dim"))


class ConsoleApprover:
    """Asks at the terminal; `stream` lets tests drive it."""

    def __init__(
        self,
        console: Console,
        check: Callable[[StepGraph], None],
        *,
        stream: TextIO | None = None,
        who: str | None = None,
        pause: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> None:
        self.console = console
        self.check = check
        self.stream = stream
        self.pause = pause  # e.g. `LiveProgress.reviewing`: the display stops, this shows the plan
        self.who = who or os.environ.get("USER") or "unknown"

    def review(self, view: PlanView) -> Decision:
        """Show the plan and return the person's decision; an edited plan is validated first."""
        with self.pause():
            return self._review(view)

    def _review(self, view: PlanView) -> Decision:
        show_plan_view(self.console, view)
        while True:
            answer = Prompt.ask(
                Text("[a]pprove, [r]eject, [e]dit in $EDITOR, or re[v]ise with a comment"),
                choices=list(_CHOICES),
                console=self.console,
                stream=self.stream,
            )
            action = _CHOICES[answer]
            if action == "edit":
                edited = self._edit(view.plan)
                if edited is not None:
                    return Decision("edit", plan=edited, who=self.who)
                continue
            if action == "revise":
                comment = Prompt.ask(
                    "What should change?", console=self.console, stream=self.stream
                )
                return Decision("revise", comment=comment, who=self.who)
            return Decision(action, who=self.who)  # type: ignore[arg-type]  # approve or reject

    def _edit(self, plan: StepGraph) -> StepGraph | None:
        """Open the plan JSON in $EDITOR; return it if valid, else show the problems."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "plan.json"
            path.write_text(plan.model_dump_json(indent=2, exclude_defaults=True) + "\n")
            editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
            subprocess.run([*shlex.split(editor), str(path)], check=False)
            text = path.read_text()
        try:
            edited = StepGraph.model_validate(json.loads(text))
            self.check(edited)
        except (json.JSONDecodeError, ValidationError) as e:
            self.console.print(Text(f"the edited plan is not valid: {e}", style="red"))
            return None
        except PlanValidationError as e:
            self.console.print(Text(str(e), style="red"))
            return None
        if edited == plan:
            self.console.print(Text("no change", style="yellow"))
            return None
        return edited
