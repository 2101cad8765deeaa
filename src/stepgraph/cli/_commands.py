"""The `stepgraph` command line; its exit statuses follow, generated from `ExitCode`."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

import stepgraph.cli._budget_options as bo
from stepgraph.cli._errors import (
    STATUS_EXIT,
    ExitCode,
    exit_status_table,
    handle_errors,
    package_version,
)
from stepgraph.cli._eval_command import register as register_eval
from stepgraph.cli._journal_commands import register
from stepgraph.cli._mcp_command import register as register_mcp
from stepgraph.cli._memory_command import register as register_memory
from stepgraph.cli._model_options import (
    MODEL_DEFAULTS,
    CrossCheckOpt,
    ModelOptions,
    with_model_options,
)
from stepgraph.cli._otel_command import OtelOpt, tracing
from stepgraph.cli._serve_commands import RunsOpt
from stepgraph.cli._serve_commands import register as register_serve
from stepgraph.exceptions import ApprovalMismatchError, TaskFileError
from stepgraph.model import ApprovalPolicy, StepGraph, Task

# Each command imports the stages it uses when it runs: `stepgraph --help` and
# `stepgraph validate` must not wait for the planner's HTTP client or the pictures.
if TYPE_CHECKING:
    from stepgraph.cli.render._progress import LiveProgress
    from stepgraph.cli.render._review import ConsoleApprover
    from stepgraph.executor import DaskCluster
    from stepgraph.task import PreparedTask

__doc__ = f"{__doc__}\n\n{exit_status_table()}\n"

app = typer.Typer(
    help="stepgraph: the model plans, code executes, and every number is checked.",
    epilog=escape(exit_status_table()),  # plain text: rich would read [...] as markup
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"stepgraph {package_version()}\n")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,  # before a command is looked for: `stepgraph --version` alone
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    pass


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
RepairOpt = Annotated[
    int, typer.Option(min=0, max=10, help="Times a failed run goes back to the planner.")
]
JournalOpt = Annotated[
    Path | None, typer.Option(help="Journal file (default: runs/<utc-time>-<task>.jsonl).")
]
TrustPluginsOpt = Annotated[
    bool,
    typer.Option(
        "--trust-plugins",
        help="Import the task file's plugins and start its MCP servers, as a run does: both "
        "run code on this machine. Without it, a task that declares either is refused "
        "(exit 2) and nothing of it is imported or started.",
    ),
]


def _target(target: str, tools: str | None) -> Task | Path:
    """A task file if the target names one, else a goal-only task."""
    path = Path(target)
    looks_like_path = path.suffix in (".yaml", ".yml", ".json") or (
        "/" in target and " " not in target
    )
    exists = _names_a_file(path)
    if looks_like_path and not exists:  # a mistyped path must not become a goal
        raise TaskFileError("no such task file", path=target)
    if looks_like_path or exists:
        if tools:
            raise click.UsageError("--tools is for goals; a task file lists its own 'tools:'")
        return path
    allowed = [name.strip() for name in (tools or "").split(",") if name.strip()]
    return Task(name="goal", goal=target, tools=allowed)


def _overrides(pairs: list[str] | None) -> dict[str, str]:
    """The --set values by name; a pair without `=` is a usage error (exit 2), not a task's."""
    from stepgraph.task import parse_assignments

    try:
        return parse_assignments(pairs or [])
    except TaskFileError as e:
        raise click.UsageError(str(e)) from e


def _names_a_file(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a long goal is no file name (ENAMETOOLONG), nor one with a NUL
        return False
    except ValueError:
        return False


def _start_dask(stack: ExitStack, scheduler: str | None) -> DaskCluster:
    """Connect to Dask, saying so on stderr: a local cluster takes seconds to start."""
    from stepgraph.executor import dask_backend

    notes = Console(stderr=True, highlight=False, soft_wrap=True)  # never in --json's stdout
    if scheduler is None:
        notes.print("starting a local Dask cluster (2 worker processes) ...")
    else:
        notes.print(f"connecting to the Dask scheduler at {scheduler} ...")
    cluster = stack.enter_context(dask_backend(scheduler))
    link = cluster.dashboard_link
    if link is None:
        notes.print("Dask is up; its scheduler serves no dashboard")
    else:
        import importlib.util

        # Without bokeh the dashboard's port answers with a page that asks for it.
        missing = "" if importlib.util.find_spec("bokeh") else " (its pages need bokeh)"
        notes.print(f"Dask dashboard: {link}{missing}")
    return cluster


def approver_for(
    console: Console, prepared: PreparedTask, progress: LiveProgress
) -> ConsoleApprover | None:
    """A terminal approver when a person is there to answer, else None (never wait)."""
    if not sys.stdin.isatty():
        return None
    from stepgraph.cli.render._review import ConsoleApprover
    from stepgraph.engine import check_given_plan

    def check(plan: StepGraph) -> None:
        check_given_plan(plan, prepared)

    return ConsoleApprover(console, check, pause=progress.reviewing)


@app.command()
@handle_errors
@with_model_options
def run(
    target: Annotated[
        str | None,
        typer.Argument(
            help="A task file (YAML) or a goal; optional with --plan.", show_default=False
        ),
    ] = None,
    set_: SetOpt = None,
    plan_path: Annotated[
        Path | None, typer.Option("--plan", help="Run an approved plan file (stepgraph approve).")
    ] = None,
    journal: JournalOpt = None,
    replace_journal: Annotated[
        bool, typer.Option("--replace-journal", help="Overwrite an existing --journal file.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the RunResult as JSON.")] = False,
    approve: Annotated[
        ApprovalPolicy | None,
        typer.Option(
            help="Approval policy; default: ask at a terminal for side effects, else auto."
        ),
    ] = None,
    max_workers: Annotated[
        int | None, typer.Option(min=1, help="Steps that may run at the same time.")
    ] = None,
    tools: ToolsOpt = None,
    model_options: ModelOptions = MODEL_DEFAULTS,
    repair_rounds: RepairOpt = 2,
    cross_check: CrossCheckOpt = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Stream the plan and start read-only steps as the model writes them.",
        ),
    ] = False,
    backend: Annotated[
        Literal["thread", "dask"],
        typer.Option(help="Where tool calls run: threads here, or a Dask cluster."),
    ] = "thread",
    scheduler: Annotated[
        str | None,
        typer.Option(help="With --backend dask: a scheduler address; default: a local cluster."),
    ] = None,
    max_model_calls: bo.MaxModelCallsOpt = None,
    max_prompt_tokens: bo.MaxPromptTokensOpt = None,
    max_completion_tokens: bo.MaxCompletionTokensOpt = None,
    max_tool_calls: bo.MaxToolCallsOpt = None,
    max_wall_time: bo.MaxWallTimeOpt = None,
    max_cost: bo.MaxCostOpt = None,
    price_per_mtok: bo.PriceOpt = None,
    otel: OtelOpt = False,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory/--no-memory",
            help="For a typed goal: take the verified plan of a goal of the same shape from "
            "the runs folder (no model call), else show the planner the nearest as examples.",
        ),
    ] = True,
    runs: RunsOpt = Path("runs"),
) -> None:
    """Run a task file or a goal: plan if needed, approve, run, verify every number, answer.

    Running a task file trusts it: its plugins are imported and its MCP servers started
    (code on this machine). To look at a task file from someone else first, use
    `validate`, `tools` or `plan --show-prompt`, which refuse to without --trust-plugins.
    """
    from stepgraph.cli.render import _progress as _display
    from stepgraph.engine import Engine, PlanFile, RunOptions, check_journal_free

    budget = bo.budget_from_options(
        model_calls=max_model_calls,
        prompt_tokens=max_prompt_tokens,
        completion_tokens=max_completion_tokens,
        tool_calls=max_tool_calls,
        wall_time=max_wall_time,
        cost=max_cost,
        price=price_per_mtok,
    )
    console = Console(stderr=as_json, quiet=as_json)
    planner = model_options.planner()
    with ExitStack() as stack:
        traces = tracing(stack, otel)  # spans flushed when the stack closes
        factory = _start_dask(stack, scheduler) if backend == "dask" else None
        engine = Engine(
            max_workers=max_workers,
            planner=planner,
            repair_rounds=repair_rounds,
            cross_check=model_options.cross_checks(cross_check),
            stream=stream or None,  # unset: the task file's `stream` key decides
            backend=factory,
            journal_dir=runs,
            memory=memory,
        )
        if journal is not None:  # before the task is loaded: nothing may run first
            check_journal_free(journal, replace=replace_journal)
        plan_file = PlanFile.load(plan_path) if plan_path else None
        if plan_file is not None and set_:
            # The file's approval binds its inputs: changed ones need a new approval.
            raise ApprovalMismatchError(
                "--set cannot change the inputs of an approved plan file (the approval "
                "covers them); write and approve a new one: `stepgraph plan TASK --set ... "
                "--out FILE`, then `stepgraph approve FILE`"
            )
        if target is None and plan_file is None:
            raise click.UsageError(
                "give a task file or a goal, or --plan with an approved plan file"
            )
        source: Task | Path = _target(target, tools) if target else plan_file.task  # type: ignore[union-attr]
        prepared = engine.prepare(
            source,
            overrides=_overrides(set_),
            base_dir=plan_file.folder if plan_file is not None else None,
        )
        console.print(Text.assemble(("Goal: ", "bold"), prepared.task.goal.strip()))
        with _display.LiveProgress(console) as progress:
            result = engine.run(
                prepared,
                journal=journal,
                replace_journal=replace_journal,
                approval=approve,
                plan_file=plan_file,
                approver=approver_for(console, prepared, progress),
                listeners=([] if as_json else [progress]) + traces,
                options=RunOptions(budget=budget),
            )
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    else:
        _display.show_result(console, result)
    raise typer.Exit(int(STATUS_EXIT[result.status]))


@app.command()
@handle_errors
@with_model_options
def plan(
    target: TargetArg,
    set_: SetOpt = None,
    out: Annotated[
        Path | None, typer.Option(help="Write a plan file (task, plan, hash) for `approve`.")
    ] = None,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the system prompt and stop.")
    ] = False,
    trust_plugins: Annotated[
        bool,
        typer.Option(
            "--trust-plugins",
            help="With --show-prompt: import the task file's plugins and start its MCP "
            "servers (code on this machine) to list their tools; without it such a task is "
            "refused (exit 2). Planning itself loads them, as the model is sent their tools.",
        ),
    ] = False,
    journal: JournalOpt = None,
    tools: ToolsOpt = None,
    model_options: ModelOptions = MODEL_DEFAULTS,
) -> None:
    """Ask the planner for a step graph (or take the task's own) and print it; no step runs.

    Planning imports the task's plugins and starts its MCP servers, whose tools the model
    is shown; `--show-prompt` does so only with --trust-plugins.
    """
    from stepgraph.engine import Engine, PlanFile
    from stepgraph.planner import system_prompt

    engine = Engine(planner=model_options.planner())
    prepared = engine.prepare(
        _target(target, tools),
        overrides=_overrides(set_),
        # Printing the prompt is a look at the task, not a decision to use it.
        trust_code=trust_plugins or not show_prompt,
    )
    if show_prompt:
        prepared.resources.close()
        sys.stdout.write(system_prompt(prepared.tools) + "\n")
        return
    if prepared.plan is not None:
        engine.validate(prepared)
        graph = prepared.plan
    else:
        graph = engine.plan(prepared, journal=journal)
    if out is not None:
        task = prepared.task.model_copy(update={"plan": None})
        plan_file = PlanFile(
            task=task, plan=graph, plan_hash=graph.plan_hash(), base_dir=str(prepared.base_dir)
        )
        plan_file.save(out)
        Console(stderr=True).print(
            f"plan {graph.plan_hash()[:12]} written to {out}", highlight=False
        )
    else:
        sys.stdout.write(graph.model_dump_json(indent=2, exclude_defaults=True) + "\n")


@app.command()
@handle_errors
def validate(
    target: TargetArg, set_: SetOpt = None, trust_plugins: TrustPluginsOpt = False
) -> None:
    """Run only the static checks of a task's plan; nothing is executed.

    A task file with plugins or MCP servers is refused unless --trust-plugins is given:
    checking its plan needs their tools, and importing or starting them runs code.
    """
    from stepgraph.cli._startup import frozen_imports, import_pint_for

    with frozen_imports():  # no collection while importing; what they built is frozen after
        # first: without numpy and Dask when no plugin runs
        import_pint_for(Path(target), plugins_allowed=trust_plugins)
        from stepgraph.engine import Engine

    graph = Engine().validate(Path(target), overrides=_overrides(set_), trust_code=trust_plugins)
    edges = graph.number_of_edges()
    Console().print(f"[green]valid:[/] {graph.number_of_nodes()} steps, {edges} dependencies")


@app.command("tools")
@handle_errors
def list_tools(
    task: Annotated[
        Path | None, typer.Argument(help="Also list the custom tools of this task file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the schemas as JSON.")] = False,
    trust_plugins: TrustPluginsOpt = False,
) -> None:
    """List the tools with their argument schemas.

    A task file's plugins and MCP servers are listed only with --trust-plugins: their
    schemas are read by importing and starting them.
    """
    from rich.table import Table

    from stepgraph.engine import Engine

    registry = Engine().tools
    if task:
        prepared = Engine().prepare(task, trust_code=trust_plugins)
        prepared.resources.close()  # MCP servers: their schemas are read, they may stop
        registry = prepared.tools
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


register(app)
register_eval(app)
register_serve(app)
register_mcp(app)
register_memory(app)

__all__ = ["app"]
