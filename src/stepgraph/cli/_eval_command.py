"""`stepgraph eval`: run a suite of goals against a model and report what it got right."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import click
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stepgraph.cli._errors import KIND_EXIT, STATUS_EXIT, handle_errors
from stepgraph.cli._model_options import (
    MODEL_DEFAULTS,
    CrossCheckOpt,
    ModelOptions,
    with_model_options,
)
from stepgraph.model import RunResult

# The datasets `evaluation` reads, spelled here so --help does not import it (a test keeps
# the two equal).
DatasetOpt = Literal["gsm8k", "svamp"]

if TYPE_CHECKING:  # the command imports the engine when it runs (see `_commands`)
    from stepgraph.evaluation import GoalOutcome, Totals


def _exit_code(subject: RunResult | BaseException) -> int:
    from stepgraph.evaluation import error_kind

    if isinstance(subject, RunResult):
        return int(STATUS_EXIT[subject.status])
    return int(KIND_EXIT[error_kind(subject)])


@handle_errors
@with_model_options
def eval_command(
    suite_path: Annotated[
        Path,
        typer.Argument(
            help="A suite file (YAML), or a GSM8K or SVAMP JSONL file.", show_default=False
        ),
    ],
    runs: Annotated[int, typer.Option(min=1, max=100, help="Runs of each goal.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    goal: Annotated[
        list[str] | None, typer.Option("--goal", help="Only this goal id (repeatable).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N goals (after --goal).")
    ] = None,
    journal_dir: Annotated[
        Path | None, typer.Option(help="Where the journals go (default: runs/eval-<utc-time>/).")
    ] = None,
    dataset: Annotated[
        DatasetOpt | None,
        typer.Option(help="Read the file as this dataset (default: told by its first line)."),
    ] = None,
    size: Annotated[
        int | None,
        typer.Option(
            min=1, help="Dataset files: this many items, drawn with --seed (default all)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Dataset files: the seed that draws --size items.")] = 0,
    model_options: ModelOptions = MODEL_DEFAULTS,
    repair_rounds: Annotated[int, typer.Option(min=0, max=10, help="As for run.")] = 2,
    cross_check: CrossCheckOpt = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="Plan memory of the journal folder: a goal of the same shape as one verified "
            "there (earlier in the suite, or a run of yours) is recalled; others get its "
            "nearest verified plans as examples. Off: the planner alone is measured.",
        ),
    ] = False,
) -> None:
    """Run each goal of a suite, compare with the expected answers, report per goal and in total.

    A GSM8K or SVAMP JSONL file is read as a suite: one goal per line, --size of them drawn
    with --seed. Exits 0 when the suite ran, whatever the goals did (the report says); 3 for a
    bad suite.
    """
    from stepgraph.engine import Engine
    from stepgraph.evaluation import detect_dataset, load_dataset, load_suite, report_document
    from stepgraph.evaluation import run_suite as run_goals

    name = dataset or detect_dataset(suite_path)
    if name is not None or suite_path.suffix == ".jsonl":
        suite = load_dataset(suite_path, dataset=name, seed=seed, size=size)
    elif size is not None:
        raise click.UsageError(
            f"{suite_path}: --size and --seed draw items from a dataset file (GSM8K or SVAMP "
            "JSONL); for a suite, choose goals with --goal or --limit"
        )
    else:
        suite = load_suite(suite_path)
    chosen = [g for g in suite.goals if not goal or g.id in goal]
    if goal and len({g.id for g in chosen}) < len(set(goal)):
        unknown = sorted(set(goal) - {g.id for g in chosen})
        raise click.UsageError(f"{suite_path}: no goal with id: {', '.join(unknown)}")
    chosen = chosen[:limit] if limit else chosen
    planner = model_options.planner()
    if planner is None:
        raise click.UsageError(
            "eval needs a model: --base-url (or OPENAI_BASE_URL) and --model, or --scripted FILE"
        )
    cross_checked = model_options.cross_checks(cross_check)
    started = datetime.now(UTC)
    folder = journal_dir or Path("runs") / f"eval-{started.strftime('%Y%m%dT%H%M%SZ')}"
    console = Console(stderr=True)
    outcomes = run_goals(
        suite,
        Engine(
            planner=planner,
            repair_rounds=repair_rounds,
            cross_check=cross_checked,
            journal_dir=folder,
            memory=memory,
        ),
        base_dir=suite_path.resolve().parent,
        journal_dir=folder,
        runs=runs,
        goals=chosen,
        exit_code_of=_exit_code,
        on_outcome=lambda outcome: console.print(_progress_line(outcome), highlight=False),
    )
    header = {
        "suite": suite.name,
        "suite_file": str(suite_path),
        **({"dataset": name, "seed": seed, "size": size} if name is not None else {}),
        "started": started.isoformat(timespec="seconds"),
        "model": "scripted" if model_options.scripted else planner.client.model,
        "base_url": None if model_options.scripted else model_options.base_url,
        "runs_per_goal": runs,
        "plan_retries": model_options.plan_retries,
        "repair_rounds": repair_rounds,
        "cross_check": cross_checked,
        "memory": memory,
        "journal_dir": str(folder),
    }
    document = report_document(outcomes, header=header)
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        _show(Console(), outcomes, document)


def _progress_line(outcome: GoalOutcome) -> Text:
    mark = "verified" if outcome.verified else (outcome.error_kind or outcome.status)
    right = "correct" if outcome.correct else "wrong"
    return Text(
        f"{outcome.goal} #{outcome.run}: {mark}, {right} "
        f"({outcome.model_calls} calls, {outcome.wall_s:.1f} s)",
        style="dim",
    )


def _mark(flag: bool) -> str:
    return "[green]yes[/]" if flag else "[red]no[/]"


def _plan(outcome: GoalOutcome) -> str:
    if outcome.first_plan_valid:
        return "[green]1st[/]"
    return "[yellow]retry[/]" if outcome.valid else "[red]none[/]"


def _got(outcome: GoalOutcome) -> str:
    if outcome.error:
        return f"{outcome.error_kind}: {' '.join(outcome.error.split())[:160]}"
    return outcome.matched or (outcome.answer or "")[:100]


def _wide_table(suite: str, outcomes: list[GoalOutcome], t: Totals) -> Table:
    table = Table(title=f"Suite {suite}")
    for name in ("goal", "run", "plan", "verified", "correct", "expected"):
        table.add_column(name, no_wrap=True)
    for name in ("calls", "tokens in/out", "s", "exit"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("got (or error)", overflow="fold", min_width=30)
    for o in outcomes:
        correct = "[bold red]WRONG[/]" if o.verified_wrong else _mark(o.correct)
        table.add_row(
            o.goal,
            str(o.run),
            _plan(o),
            _mark(o.verified),
            correct,
            o.expected,
            str(o.model_calls),
            f"{o.prompt_tokens}/{o.completion_tokens}",
            f"{o.wall_s:.1f}",
            "" if o.exit_code is None else str(o.exit_code),
            Text(_got(o)),
        )
    table.add_section()
    table.add_row(
        "total",
        str(t.runs),
        f"{t.first_plan_valid}/{t.valid}",
        str(t.verified),
        str(t.correct),
        "",
        str(t.model_calls),
        f"{t.prompt_tokens}/{t.completion_tokens}",
        f"{t.wall_s:.1f}",
        "",
        _errors(t),
    )
    return table


def _narrow_table(suite: str, outcomes: list[GoalOutcome], t: Totals) -> Table:
    """Plan, verified and correct stacked in one cell, the costs in another."""
    table = Table(title=f"Suite {suite}")
    table.add_column("goal", overflow="fold")
    table.add_column("run", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("expected", overflow="fold")
    table.add_column("got (or error)", overflow="fold", min_width=16, ratio=2)
    table.add_column("cost", justify="right", no_wrap=True)
    for o in outcomes:
        plan = (
            _plan(o)
            .replace("]1st", "]1st plan")
            .replace("]retry", "]retried")
            .replace("]none", "]no plan")
        )
        verified = "[green]verified[/]" if o.verified else "[red]unverified[/]"
        correct = "[bold red]WRONG[/]" if o.verified_wrong else _right(o.correct)
        exit_ = "" if o.exit_code is None else f"\nexit {o.exit_code}"
        table.add_row(
            o.goal,
            str(o.run),
            f"{plan}\n{verified}\n{correct}",
            o.expected,
            Text(_got(o)),
            f"{o.model_calls} calls\n{o.prompt_tokens}/{o.completion_tokens} tok\n"
            f"{o.wall_s:.1f} s{exit_}",
        )
    table.add_section()
    table.add_row(
        "total",
        str(t.runs),
        f"{t.first_plan_valid}/{t.valid} 1st\n{t.verified} verified\n{t.correct} correct",
        "",
        _errors(t),
        f"{t.model_calls} calls\n{t.prompt_tokens}/{t.completion_tokens} tok\n{t.wall_s:.1f} s",
    )
    return table


def _right(flag: bool) -> str:
    return "[green]correct[/]" if flag else "[red]wrong[/]"


def _errors(t: Totals) -> str:
    return ", ".join(f"{kind}: {n}" for kind, n in t.errors.items())


def _show(console: Console, outcomes: list[GoalOutcome], document: dict[str, Any]) -> None:
    from rich.measure import Measurement

    from stepgraph.evaluation import totals

    t = totals(outcomes)
    table = _wide_table(document["suite"], outcomes, t)
    # One column a measure reads best, but needs ~130 columns; a narrower terminal gets the
    # same facts stacked in fewer columns, so "got" keeps room to be read.
    unbounded = console.options.update_width(10_000)  # measured at the width it asks for
    if Measurement.get(console, unbounded, table).minimum > console.width:
        table = _narrow_table(document["suite"], outcomes, t)
    console.print(table)
    style = "bold green" if t.verified_wrong == 0 else "bold red"
    console.print(f"[{style}]wrong answers reported as verified: {t.verified_wrong}[/] (must be 0)")
    console.print(
        f"[bold]verified-correct rate: {t.verified_correct_rate:.1%}[/] "
        f"({t.verified_correct} of {t.runs}); plan column: valid at the 1st attempt / "
        f"after retries; journals in {document['journal_dir']}"
    )


def register(app: typer.Typer) -> None:
    """Add `stepgraph eval` to the app."""
    app.command("eval")(eval_command)
