"""`stepgraph memory`: the verified plans a runs folder remembers, shown and forgotten."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stepgraph.cli._errors import ExitCode, fail, handle_errors
from stepgraph.cli._serve_commands import RunsOpt

memory_app = typer.Typer(
    help="The verified plans remembered in the runs folder: a typed goal of the same shape "
    "gets one again with no model call (`run --no-memory` to plan afresh).",
    no_args_is_help=True,
)
RunIdArg = Annotated[str, typer.Argument(help="A run id (`stepgraph memory list`).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@memory_app.command("list")
@handle_errors
def list_command(
    runs: RunsOpt = Path("runs"),
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 50,
) -> None:
    """List the remembered runs, newest first: run id, when, steps, goal."""
    from stepgraph.engine import PlanMemory

    memory = PlanMemory(runs)
    entries = memory.entries(limit=limit)
    if as_json:
        rows = [{k: v for k, v in e.as_dict().items() if k != "plan"} for e in entries]
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return
    table = Table(title=f"Remembered plans in {runs}", title_justify="left")
    for column in ("run", "started", "steps", "goal"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        steps = str(len(entry.plan.get("steps", [])))
        table.add_row(entry.run_id, entry.started, steps, Text(entry.goal))
    console = Console()
    console.print(table)
    if not entries:
        console.print("nothing remembered yet: a verified run of a typed goal is remembered")
    if memory.unsealed:
        # Said, not hidden: a user who copied runs from elsewhere should know why they are absent.
        console.print(
            f"{len(memory.unsealed)} verified run(s) not sealed by this machine's key are not "
            "remembered (journals from elsewhere, edited, or older than plan sealing)"
        )


@memory_app.command("show")
@handle_errors
def show_command(run_id: RunIdArg, runs: RunsOpt = Path("runs"), as_json: JsonOpt = False) -> None:
    """Show one remembered run: its goal, journal and the plan that verified it."""
    from stepgraph.cli.render._lines import grounding_lines
    from stepgraph.engine import PlanMemory
    from stepgraph.planner import plan_lines

    entry = PlanMemory(runs).get(run_id)
    if entry is None:
        fail(f"memory holds no run '{run_id}' (`stepgraph memory list`)", ExitCode.USAGE)
    if as_json:
        sys.stdout.write(json.dumps(entry.as_dict(), indent=1) + "\n")
        return
    console = Console(highlight=False)
    console.print(Text.assemble(("Goal: ", "bold"), entry.goal))
    console.print(f"run {entry.run_id}, verified, started {entry.started}; journal {entry.path}")
    for line in grounding_lines(entry.plan):
        console.print(Text("  " + line))
    console.print(Text(plan_lines(entry.plan)))


@memory_app.command("forget")
@handle_errors
def forget_command(run_id: RunIdArg, runs: RunsOpt = Path("runs")) -> None:
    """Never recall this run's plan again (its journal stays; the word is kept in the folder)."""
    from stepgraph.engine import PlanMemory

    if not PlanMemory(runs).forget(run_id):
        fail(f"memory holds no run '{run_id}' (`stepgraph memory list`)", ExitCode.USAGE)
    Console(stderr=True).print(f"forgotten: {run_id} (it will not be recalled)")


def register(app: typer.Typer) -> None:
    """Add `memory` to the `stepgraph` command."""
    app.add_typer(memory_app, name="memory")
