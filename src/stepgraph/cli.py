"""The `stepgraph` command line.

Exit status:
    0   the answer is verified (or, for validate and plan, the plan is valid)
    1   an unexpected internal error
    2   wrong command-line usage
    3   an invalid task file or plan, or no valid plan from the planner (nothing ran)
    4   a step failed (its dependents were skipped)
    5   every step ran but a verification failed
    6   the plan was not run (approval policy)
    7   the model endpoint failed (HTTP error, unreadable answer, timeout)
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

from stepgraph import _display
from stepgraph.engine import Engine
from stepgraph.exceptions import (
    ApprovalError,
    LLMError,
    PlanningError,
    PlanValidationError,
    StepgraphError,
    TaskFileError,
)
from stepgraph.model import ApprovalPolicy, RunStatus, Task
from stepgraph.planner import LLMSettings, OpenAIClient, Planner, system_prompt
from stepgraph.task import parse_assignments
from stepgraph.testing import ScriptedLLM


class ExitCode(IntEnum):
    """Documented exit statuses of the `stepgraph` command."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    INVALID = 3
    STEP_FAILED = 4
    UNVERIFIED = 5
    NOT_RUN = 6
    MODEL_FAILED = 7
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
    "5 verification failed, 6 not run (approval), 7 model endpoint failed, 1 internal error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

TargetArg = Annotated[
    str, typer.Argument(help="A task file (YAML), or a goal in plain language.", show_default=False)
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override an input: --set data=10TiB (repeatable)."),
]
ToolsOpt = Annotated[
    str | None, typer.Option("--tools", help="For a goal: the tools it may use, comma-separated.")
]
ScriptedOpt = Annotated[
    Path | None,
    typer.Option(help="Answer as the model from a scripted responses file (offline, no API key)."),
]
BaseUrlOpt = Annotated[
    str | None, typer.Option(help="OpenAI-compatible endpoint [env: OPENAI_BASE_URL].")
]
ModelOpt = Annotated[str | None, typer.Option(help="Model name [env: STEPGRAPH_MODEL].")]
PlanRetriesOpt = Annotated[
    int, typer.Option(min=0, max=10, help="Times a rejected plan is sent back to the model.")
]
RepairOpt = Annotated[
    int, typer.Option(min=0, max=10, help="Times a failed run goes back to the planner.")
]
JournalOpt = Annotated[
    Path | None, typer.Option(help="Journal file (default: runs/<utc-time>-<task>.jsonl).")
]


def _fail(console: Console, message: str, code: ExitCode) -> NoReturn:
    console.print(Text.assemble(("error: ", "bold red"), message), highlight=False)
    raise typer.Exit(int(code))


def _guard(error: BaseException) -> NoReturn:
    """Map an exception to a clear message and a documented exit code, never a traceback."""
    console = Console(stderr=True)
    if isinstance(error, KeyboardInterrupt):
        _fail(console, "interrupted; what was observed is in the journal", ExitCode.INTERRUPTED)
    if isinstance(error, PlanValidationError | TaskFileError | PlanningError):
        _fail(console, str(error), ExitCode.INVALID)
    if isinstance(error, ApprovalError):
        _fail(console, str(error), ExitCode.NOT_RUN)
    if isinstance(error, LLMError):
        _fail(console, str(error), ExitCode.MODEL_FAILED)
    if isinstance(error, StepgraphError):
        _fail(console, str(error), ExitCode.INVALID)
    if os.environ.get("STEPGRAPH_DEBUG"):
        raise error
    _fail(
        console,
        f"internal error: {type(error).__name__}: {error} (set STEPGRAPH_DEBUG=1 for a traceback)",
        ExitCode.INTERNAL,
    )


def _planner(
    scripted: Path | None, base_url: str | None, model: str | None, plan_retries: int
) -> Planner | None:
    if scripted is not None:
        return Planner(ScriptedLLM.from_file(scripted), plan_retries=plan_retries)
    given = {key: value for key, value in {"base_url": base_url, "model": model}.items() if value}
    settings = LLMSettings(**given)  # type: ignore[arg-type]  # the rest comes from the environment
    if not settings.configured:
        return None
    return Planner(OpenAIClient(settings), plan_retries=plan_retries)


def _target(target: str, tools: str | None) -> Task | Path:
    """A task file if the target names one, else a goal-only task."""
    path = Path(target)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if tools:
            raise TaskFileError("--tools is for goals; a task file lists its own 'tools:'")
        return path
    allowed = [name.strip() for name in (tools or "").split(",") if name.strip()]
    return Task(name="goal", goal=target, tools=allowed)


@app.command()
def run(
    target: TargetArg,
    set_: SetOpt = None,
    journal: JournalOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the RunResult as JSON.")] = False,
    approve: Annotated[
        ApprovalPolicy | None, typer.Option(help="Approval policy; overrides the task file's.")
    ] = None,
    max_workers: Annotated[
        int | None, typer.Option(min=1, help="Steps that may run at the same time.")
    ] = None,
    tools: ToolsOpt = None,
    scripted: ScriptedOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    plan_retries: PlanRetriesOpt = 2,
    repair_rounds: RepairOpt = 2,
) -> None:
    """Run a task file or a goal: plan if needed, run, verify every number, print the answer."""
    console = Console(stderr=as_json, quiet=as_json)
    try:
        planner = _planner(scripted, base_url, model, plan_retries)
        engine = Engine(max_workers=max_workers, planner=planner, repair_rounds=repair_rounds)
        prepared = engine.prepare(_target(target, tools), overrides=parse_assignments(set_ or []))
        console.print(Text.assemble(("Goal: ", "bold"), prepared.task.goal.strip()))
        with _display.LiveProgress(console) as progress:
            result = engine.run(
                prepared, journal=journal, approval=approve, listeners=[] if as_json else [progress]
            )
    except (StepgraphError, KeyboardInterrupt, Exception) as error:  # noqa: BLE001
        _guard(error)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    else:
        _display.show_result(console, result)
    raise typer.Exit(int(_STATUS_EXIT[result.status]))


@app.command()
def plan(
    target: TargetArg,
    set_: SetOpt = None,
    out: Annotated[Path | None, typer.Option(help="Write the plan JSON to this file.")] = None,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the system prompt and stop.")
    ] = False,
    journal: JournalOpt = None,
    tools: ToolsOpt = None,
    scripted: ScriptedOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    plan_retries: PlanRetriesOpt = 2,
) -> None:
    """Ask the planner for a step graph and print it (nothing runs)."""
    try:
        engine = Engine(planner=_planner(scripted, base_url, model, plan_retries))
        prepared = engine.prepare(_target(target, tools), overrides=parse_assignments(set_ or []))
        if show_prompt:
            sys.stdout.write(system_prompt(prepared.tools) + "\n")
            return
        graph = engine.plan(prepared, journal=journal)
    except (StepgraphError, KeyboardInterrupt, Exception) as error:  # noqa: BLE001
        _guard(error)
    text = graph.model_dump_json(indent=2, exclude_defaults=True)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
        Console(stderr=True).print(f"plan written to {out}", highlight=False)
    else:
        sys.stdout.write(text + "\n")


@app.command()
def validate(target: TargetArg, set_: SetOpt = None) -> None:
    """Run only the static checks of a task's plan; nothing is executed."""
    try:
        graph = Engine().validate(Path(target), overrides=parse_assignments(set_ or []))
    except (StepgraphError, Exception) as error:  # noqa: BLE001
        _guard(error)
    edges = graph.number_of_edges()
    Console().print(f"[green]valid:[/] {graph.number_of_nodes()} steps, {edges} dependencies")


@app.command("tools")
def list_tools(
    task: Annotated[
        Path | None, typer.Argument(help="Also list the custom tools of this task file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the schemas as JSON.")] = False,
) -> None:
    """List the tools with their argument schemas."""
    try:
        registry = Engine().prepare(task).tools if task else Engine().tools
    except (StepgraphError, Exception) as error:  # noqa: BLE001
        _guard(error)
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
        effects = "yes" if schema["side_effects"] else "no"
        table.add_row(schema["name"], Text(schema["description"]), Text(args), effects)
    Console().print(table)


__all__ = ["ExitCode", "app"]
