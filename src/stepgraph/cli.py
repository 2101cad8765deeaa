"""The `stepgraph` command line.

Exit status:
    0   the answer is verified (or, for validate, the plan is valid)
    1   an unexpected internal error
    2   wrong command-line usage
    3   an invalid task file or plan (nothing ran)
    4   a step failed (its dependents were skipped)
    5   every step ran but a verification failed
    6   the plan was not run (approval policy)
    130 interrupted
"""

from __future__ import annotations

import json
import os
import sys
from enum import IntEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stepgraph.engine import Engine
from stepgraph.exceptions import ApprovalError, PlanValidationError, StepgraphError, TaskFileError
from stepgraph.executor import dependencies
from stepgraph.model import ApprovalPolicy, RunStatus
from stepgraph.task import parse_assignments


class ExitCode(IntEnum):
    """Documented exit statuses of the `stepgraph` command."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    INVALID = 3
    STEP_FAILED = 4
    UNVERIFIED = 5
    NOT_RUN = 6
    INTERRUPTED = 130


_STATUS_EXIT = {
    RunStatus.VERIFIED: ExitCode.OK,
    RunStatus.STEP_FAILED: ExitCode.STEP_FAILED,
    RunStatus.UNVERIFIED: ExitCode.UNVERIFIED,
    RunStatus.NOT_RUN: ExitCode.NOT_RUN,
}

app = typer.Typer(
    help="stepgraph: the model plans, code executes, and every number is checked.",
    epilog="Exit status: 0 verified, 3 invalid task or plan, 4 a step failed, "
    "5 verification failed, 6 not run (approval), 1 internal error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

TaskArg = Annotated[Path, typer.Argument(help="A task file (YAML).", show_default=False)]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override an input: --set data=10TiB (repeatable)."),
]


def _fail(console: Console, message: str, code: ExitCode) -> NoReturn:
    console.print(Text.assemble(("error: ", "bold red"), message), highlight=False)
    raise typer.Exit(int(code))


def _guard(console: Console, error: BaseException) -> NoReturn:
    """Map an exception to a clear message and a documented exit code, never a traceback."""
    if isinstance(error, KeyboardInterrupt):
        _fail(console, "interrupted; what was observed is in the journal", ExitCode.INTERRUPTED)
    if isinstance(error, PlanValidationError | TaskFileError):
        _fail(console, str(error), ExitCode.INVALID)
    if isinstance(error, ApprovalError):
        _fail(console, str(error), ExitCode.NOT_RUN)
    if isinstance(error, StepgraphError):
        _fail(console, str(error), ExitCode.INVALID)
    if os.environ.get("STEPGRAPH_DEBUG"):
        raise error
    _fail(
        console,
        f"internal error: {type(error).__name__}: {error} (set STEPGRAPH_DEBUG=1 for a traceback)",
        ExitCode.INTERNAL,
    )


@app.command()
def run(
    task: TaskArg,
    set_: SetOpt = None,
    journal: Annotated[
        Path | None, typer.Option(help="Journal file (default: runs/<utc-time>-<task>.jsonl).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the RunResult as JSON.")] = False,
    approve: Annotated[
        ApprovalPolicy | None, typer.Option(help="Approval policy; overrides the task file's.")
    ] = None,
    max_workers: Annotated[
        int | None, typer.Option(min=1, help="Steps that may run at the same time.")
    ] = None,
) -> None:
    """Run a task file: show the plan, run it, verify every number, print the answer."""
    console = Console(stderr=as_json, quiet=as_json)
    errors = Console(stderr=True)
    try:
        engine = Engine(max_workers=max_workers)
        overrides = parse_assignments(set_ or [])
        prepared = engine.prepare(task, overrides=overrides)
        deps = {step.id: dependencies(step) for step in prepared.plan.steps}
        console.print(f"[bold]Goal:[/] {prepared.task.goal.strip()}", highlight=False)
        console.print(_display.plan_table(prepared.plan, deps))
        with _display.LiveProgress(console, prepared.plan) as progress:
            result = engine.run(
                prepared,
                journal=journal,
                approval=approve,
                listeners=[] if as_json else [progress],
            )
    except (StepgraphError, KeyboardInterrupt, Exception) as error:  # noqa: BLE001
        _guard(errors, error)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    else:
        _display.show_result(console, result)
    raise typer.Exit(int(_STATUS_EXIT[result.status]))


@app.command()
def validate(task: TaskArg, set_: SetOpt = None) -> None:
    """Run only the static checks of a task's plan; nothing is executed."""
    console = Console()
    try:
        graph = Engine().validate(task, overrides=parse_assignments(set_ or []))
    except (StepgraphError, Exception) as error:  # noqa: BLE001
        _guard(Console(stderr=True), error)
    console.print(
        f"[green]valid:[/] {graph.number_of_nodes()} steps, {graph.number_of_edges()} dependencies"
    )


@app.command()
def tools(
    task: Annotated[
        Path | None, typer.Argument(help="Also list the custom tools of this task file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the schemas as JSON.")] = False,
) -> None:
    """List the tools with their argument schemas."""
    try:
        registry = Engine().prepare(task).tools if task else Engine().tools
    except (StepgraphError, Exception) as error:  # noqa: BLE001
        _guard(Console(stderr=True), error)
    schemas = [item.schema() for item in registry]
    if as_json:
        sys.stdout.write(json.dumps(schemas, indent=2) + "\n")
        return
    table = Table(title="Tools")
    for column in ("name", "description", "arguments", "side effects"):
        table.add_column(column, overflow="fold")
    for schema in schemas:
        props = schema["parameters"].get("properties", {})
        required = set(schema["parameters"].get("required", []))
        args = "\n".join(
            f"{name}{'' if name in required else '?'}: {prop.get('description', '')}"
            for name, prop in props.items()
        )
        table.add_row(
            schema["name"], schema["description"], args, "yes" if schema["side_effects"] else "no"
        )
    Console().print(table)


from stepgraph import _display  # noqa: E402  # after the app, to keep the import graph flat

__all__ = ["ExitCode", "app"]
