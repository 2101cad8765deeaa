"""Commands for runs decided and watched elsewhere: `approve`, `runs`, `serve`."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stepgraph.cli._errors import STATUS_EXIT, ExitCode, fail, handle_errors
from stepgraph.cli._hosts import AllowHostOpt, listen, shown_host
from stepgraph.cli._model_options import MODEL_DEFAULTS, ModelOptions, with_model_options
from stepgraph.exceptions import TaskFileError
from stepgraph.guards import is_loopback

# The commands import the stages they use when they run: `stepgraph --help` stays fast.

RunsOpt = Annotated[
    Path,
    typer.Option(
        "--runs", envvar="STEPGRAPH_RUNS", show_envvar=True, help="The runs folder (journals)."
    ),
]


def journal_of(runs: Path, run_id: str) -> Path:
    """The journal of a run id (through the index), or of a journal path given as is."""
    from stepgraph.journal import RunIndex

    as_path = Path(run_id)
    if as_path.suffix == ".jsonl" and as_path.is_file():
        return as_path
    row = RunIndex(runs).get(run_id)
    if row is None:
        raise TaskFileError(f"no run '{run_id}' in {runs} (`stepgraph runs` lists them)")
    return Path(row.path)


@handle_errors
@with_model_options
def approve_command(
    target: Annotated[
        str,
        typer.Argument(
            help="The id of a parked run (or its journal), or a plan file from "
            "`stepgraph plan --out`.",
            show_default=False,
        ),
    ],
    by: Annotated[str | None, typer.Option(help="Who decides (default: the current user).")] = None,
    reject: Annotated[
        bool, typer.Option("--reject", help="Reject the plan: the run ends.")
    ] = False,
    edit: Annotated[
        Path | None, typer.Option(help="Replace the plan with this one (JSON); it parks again.")
    ] = None,
    revise: Annotated[
        str | None, typer.Option(help="Ask the planner to revise the plan; it parks again.")
    ] = None,
    runs: RunsOpt = Path("runs"),
    model_options: ModelOptions = MODEL_DEFAULTS,
) -> None:
    """Decide about a parked run (approve, --reject, --edit, --revise), or approve a plan file."""
    from stepgraph.cli.render import _progress as _display
    from stepgraph.cli.render._review import show_plan_view
    from stepgraph.engine import Decision, decide, parked
    from stepgraph.model import StepGraph

    who = by or getpass.getuser()
    console = Console()
    if Path(target).is_file() and Path(target).suffix != ".jsonl":  # not a journal: a plan file
        _approve_plan_file(console, Path(target), who)
        return
    if sum((reject, edit is not None, revise is not None)) > 1:
        fail("give at most one of --reject, --edit and --revise", ExitCode.USAGE)
    journal = journal_of(runs, target)
    state = parked(journal)
    if state is not None:
        show_plan_view(console, state.view())
    if reject:
        decision = Decision("reject", who=who, how="cli")
    elif edit is not None:
        try:
            plan = StepGraph.model_validate_json(edit.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise TaskFileError(f"not a plan: {e}", path=str(edit)) from e
        decision = Decision("edit", plan=plan, who=who, how="cli")
    elif revise is not None:
        decision = Decision("revise", comment=revise, who=who, how="cli")
    else:
        decision = Decision("approve", who=who, how="cli")
    planner = model_options.planner()
    with _display.LiveProgress(console) as progress:
        result = decide(journal, decision, planner=planner, listeners=[progress])
    _display.show_result(console, result)
    raise typer.Exit(int(STATUS_EXIT[result.status]))


def _approve_plan_file(console: Console, path: Path, who: str) -> None:
    from stepgraph.cli.render._review import show_plan_view
    from stepgraph.engine import Engine, PlanFile, plan_view

    plan_file = PlanFile.load(path)
    plan_file.check_unchanged()
    prepared = Engine().prepare(plan_file.task, base_dir=plan_file.folder)
    with prepared.resources:  # MCP servers: their tools' hints are read, then they stop
        view = plan_view(plan_file.plan, prepared)
    show_plan_view(console, view)
    assert view.subject is not None  # plan_view always binds one
    plan_file.approve(who, view.subject)  # the plan with these inputs and these tools
    plan_file.save(path)
    record = plan_file.approval
    assert record is not None and record.approval_hash is not None
    console.print(
        f"approved by {record.by} at {record.at} (plan {record.plan_hash[:12]}, "
        f"with its inputs and tools {record.approval_hash[:12]})"
    )


@handle_errors
def runs_command(
    status: Annotated[
        str | None,
        typer.Option(help="Only runs of this status: awaiting_approval, running, verified, ..."),
    ] = None,
    runs: RunsOpt = Path("runs"),
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Rebuild the index from the journals first.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 50,
) -> None:
    """List the runs in the runs folder (from its index, kept current from the journals)."""
    from stepgraph.journal import RunIndex

    index = RunIndex(runs)
    if rebuild:
        index.rebuild()
    rows = index.runs(status=status, limit=limit)
    # The terminal's own width: the run id stays whole (it is what other commands take),
    # the free text folds, and the parent and replay-of columns show only when a run has one.
    columns = ["run", "task", "status", "started", "duration", "answer"]
    if any(row.parent for row in rows):
        columns.append("parent")
    if any(row.replay_of for row in rows):
        columns.append("replay of")
    table = Table(title=f"Runs in {runs}", title_justify="left")
    for column in columns:
        whole = column in ("run", "parent", "replay of")
        table.add_column(
            column,
            no_wrap=whole,
            overflow="fold",
            min_width=12 if whole else None,
        )
    for row in rows:
        duration = "" if row.duration_ms is None else f"{row.duration_ms / 1000:.2f} s"
        cells: list[str | Text] = [
            row.run_id,
            Text(row.task),
            row.status,
            _started(row.started),
            duration,
            Text(row.answer or ""),
        ]
        if "parent" in columns:
            cells.append(row.parent or "")
        if "replay of" in columns:
            cells.append(row.replay_of or "")
        table.add_row(*cells)
    Console().print(table)
    if index.in_memory:  # a read-only runs folder lists all the same
        Console(stderr=True).print(f"note: {index.in_memory}", highlight=False)


def _started(started: str) -> str:
    """An index timestamp to the second, with a space where it may wrap: 2026-12-02 07:52:10Z."""
    day, _, clock = started.partition("T")
    return f"{day} {clock.split('.')[0].removesuffix('Z')}Z" if clock else started


@handle_errors
@with_model_options
def serve_command(
    runs: RunsOpt = Path("runs"),
    host: Annotated[
        str, typer.Option(help="Address to bind; elsewhere than 127.0.0.1 needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8750,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="STEPGRAPH_SERVE_TOKEN",
            show_envvar=True,
            help="Required of every request (header or cookie); needed to bind beyond loopback.",
        ),
    ] = None,
    workspace: Annotated[
        Path | None, typer.Option(help="Where task files may be started from (default: cwd).")
    ] = None,
    allow_host: AllowHostOpt = None,
    model_options: ModelOptions = MODEL_DEFAULTS,
) -> None:
    """Serve the run list, run pages, approval pages and the HTTP API (OpenAPI at /docs)."""
    try:
        import uvicorn

        from stepgraph.serve import create_app
    except ImportError as e:
        fail(
            f"the web server needs the serve extra: pip install 'stepgraph[serve]' ({e})",
            ExitCode.USAGE,
        )
    if not is_loopback(host) and not token:
        fail(
            f"binding {host} exposes runs to the network: give --token (or STEPGRAPH_SERVE_TOKEN)",
            ExitCode.USAGE,
        )
    planner = model_options.planner()
    listening = listen(host, port)
    port = int(listening.getsockname()[1])
    app = create_app(
        runs,
        workspace=workspace or Path(os.getcwd()),
        token=token,
        planner=planner,
        host=host,
        port=port,
        allow_hosts=allow_host or (),
    )
    shown = shown_host(host)
    Console(stderr=True).print(f"stepgraph serve: http://{shown}:{port}/ (runs in {runs})")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])


def register(app: typer.Typer) -> None:
    """Add the commands to the `stepgraph` command."""
    app.command("approve")(approve_command)
    app.command("runs")(runs_command)
    app.command("serve")(serve_command)
