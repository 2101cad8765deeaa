"""Commands over journals: replay, resume, show, graph, gantt."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.text import Text

import stepgraph.cli._budget_options as bo
from stepgraph.cli._errors import STATUS_EXIT, ExitCode, fail, handle_errors
from stepgraph.cli._model_options import MODEL_DEFAULTS, ModelOptions, with_model_options
from stepgraph.cli._otel_command import OtelOpt, otel_command, tracing
from stepgraph.model import RunStatus

# The commands import what they use when they run (see `_commands`).

JournalArg = Annotated[Path, typer.Argument(help="A journal (.jsonl).", show_default=False)]


@handle_errors
def replay_command(
    journal: JournalArg,
    live: Annotated[
        bool, typer.Option(help="Run the tools for real and diff each observation.")
    ] = False,
    from_step: Annotated[
        str | None, typer.Option("--from", help="Fork: this step and its dependents run live.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="The new journal's path.")] = None,
    replace_journal: Annotated[
        bool, typer.Option("--replace-journal", help="Overwrite an existing --out file.")
    ] = False,
    trust_plugins: Annotated[
        bool,
        typer.Option(
            "--trust-plugins",
            help="Import the plugin files the journal's task names (and, with --live or "
            "--from, start the MCP servers it used): that runs their code.",
        ),
    ] = False,
) -> None:
    """Run a recorded run again from its journal and report identical or the first divergence."""
    from stepgraph.cli.render import _progress as _display
    from stepgraph.engine import replay

    console = Console()
    if out is not None and out.resolve() == journal.resolve():
        fail(f"--out {out} is the journal being replayed; choose another path", ExitCode.USAGE)
    report = replay(
        journal,
        live=live,
        from_step=from_step,
        out=out,
        trust_plugins=trust_plugins,
        replace_out=replace_journal,
    )
    for problem in report.problems:  # a cut-off record diverges where it stops: say why
        console.print(Text(f"warning: {journal}: {problem}", style="yellow"))
    if any("truncated last line" in problem for problem in report.problems):
        console.print(
            Text(
                "the recording was cut off (a killed process?); "
                "`stepgraph resume` finishes such a run",
                style="yellow",
            )
        )
    if report.error:
        console.print(Text(f"the replay stopped: {report.error}", style="red"))
    result = report.result
    parked = result is not None and result.status is RunStatus.AWAITING_APPROVAL
    if result is not None and parked and (live or from_step):
        # Tools run for real only under an approval of this very plan and task.
        console.print(
            Text(
                f"the {'fork' if from_step else 'live replay'} runs tools for real and the "
                "record holds no approval of its plan as it would run now: it waits for a "
                f"decision (`stepgraph approve {report.journal} --by NAME`, or --reject)",
                style="yellow",
            )
        )
        raise typer.Exit(int(ExitCode.AWAITING))
    if from_step and report.result is not None:
        _display.show_result(console, report.result)
        console.print(Text(f"forked from {journal} at step '{from_step}'"))
        raise typer.Exit(int(STATUS_EXIT[report.result.status]))
    if report.identical:
        console.print(Text("identical", style="bold green"))
        console.print(Text(f"replay journal: {report.journal}"))
        return
    shown = report.divergences if live else report.divergences[:1]
    for divergence in shown:
        console.print(Text(f"divergence: {divergence}", style="bold red"))
    console.print(Text(f"replay journal: {report.journal}"))
    raise typer.Exit(int(ExitCode.DIVERGED))


@handle_errors
@with_model_options
def resume_command(
    journal: JournalArg,
    rerun_side_effects: Annotated[
        bool, typer.Option(help="Run again steps with side effects that started but never ended.")
    ] = False,
    accept_changed_tools: Annotated[
        bool,
        typer.Option(
            help="Finish the run although a tool's schema or code changed since it started."
        ),
    ] = False,
    model_options: ModelOptions = MODEL_DEFAULTS,
    max_model_calls: bo.MaxModelCallsOpt = None,
    max_prompt_tokens: bo.MaxPromptTokensOpt = None,
    max_completion_tokens: bo.MaxCompletionTokensOpt = None,
    max_tool_calls: bo.MaxToolCallsOpt = None,
    max_wall_time: bo.MaxWallTimeOpt = None,
    max_cost: bo.MaxCostOpt = None,
    price_per_mtok: bo.PriceOpt = None,
    otel: OtelOpt = False,
) -> None:
    """Finish an interrupted run, or one its budget stopped: completed steps are not run again.

    A budget option raises that limit; what the run used before counts against it.
    """
    from stepgraph.cli.render import _progress as _display
    from stepgraph.cli.render._review import ConsoleApprover
    from stepgraph.engine import resume

    console = Console()
    stack = ExitStack()
    budget = bo.budget_from_options(
        model_calls=max_model_calls,
        prompt_tokens=max_prompt_tokens,
        completion_tokens=max_completion_tokens,
        tool_calls=max_tool_calls,
        wall_time=max_wall_time,
        cost=max_cost,
        price=price_per_mtok,
    )
    planner = model_options.planner()
    with stack, _display.LiveProgress(console) as progress:
        traces = tracing(stack, otel)  # spans flushed when the stack closes
        approver = (  # a person at a terminal may approve re-running a side effect
            ConsoleApprover(console, lambda plan: None, pause=progress.reviewing)
            if sys.stdin.isatty()
            else None
        )
        result = resume(
            journal,
            rerun_side_effects=rerun_side_effects,
            approver=approver,
            listeners=[progress, *traces],
            planner=planner,
            budget=budget,
            accept_changed_tools=accept_changed_tools,
        )
    _display.show_result(console, result)
    raise typer.Exit(int(STATUS_EXIT[result.status]))


@handle_errors
def show_command(journal: JournalArg) -> None:
    """The run as a person reads it: thoughts, actions, observations, verdicts, the answer."""
    from stepgraph.cli.render._budget import budget_table, has_limits
    from stepgraph.cli.render._show import show_journal
    from stepgraph.engine import journal_budget
    from stepgraph.journal import read_journal

    events = read_journal(journal)
    console = Console()
    show_journal(console, events)
    report = journal_budget(events.events)
    if has_limits(report):
        console.print(budget_table(report))


@handle_errors
def graph_command(
    source: Annotated[Path, typer.Argument(help="A task file, a plan file, or a journal.")],
    format_: Annotated[
        Literal["mermaid", "dot", "png", "svg"], typer.Option("--format", help="Output format.")
    ] = "mermaid",
    out: Annotated[Path | None, typer.Option(help="Output file (needed for png and svg).")] = None,
) -> None:
    """Draw the step graph; from a journal, coloured by outcome."""
    from stepgraph.cli.render._draw import draw
    from stepgraph.cli.render._pictures import load_picture, to_dot, to_mermaid

    picture = load_picture(source)
    if out is not None and out.is_dir():
        fail(f"--out {out} is a folder; give a file name", ExitCode.USAGE)
    if format_ in ("png", "svg"):
        if out is None:
            fail(f"--format {format_} needs --out FILE", ExitCode.USAGE)
        draw(picture, out, format_)  # the format asked for, whatever the name ends in
    else:
        text = to_mermaid(picture) if format_ == "mermaid" else to_dot(picture)
        if out is None:
            sys.stdout.write(text)
        else:
            out.write_text(text, encoding="utf-8")
    if out is not None:
        Console(stderr=True).print(f"written to {out}", highlight=False, soft_wrap=True)


@handle_errors
def gantt_command(
    journal: JournalArg,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output picture (.png or .svg); default: next to the journal, JOURNAL.gantt.png.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """A timeline of the steps, so parallelism and slow steps show at a glance."""
    from stepgraph.cli.render._gantt import gantt
    from stepgraph.journal import read_journal

    events = read_journal(journal)
    # Beside its journal, not in whatever folder the command ran from.
    out = out if out is not None else journal.with_suffix(".gantt.png")
    if out.is_dir():
        fail(f"--out {out} is a folder; give a file name", ExitCode.USAGE)
    gantt(events, out)
    Console(stderr=True).print(f"written to {out}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the journal commands to the `stepgraph` app."""
    app.command("replay")(replay_command)
    app.command("resume")(resume_command)
    app.command("show")(show_command)
    app.command("graph")(graph_command)
    app.command("gantt")(gantt_command)
    app.command("otel")(otel_command)
