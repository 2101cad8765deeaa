"""What every `stepgraph` command shares: exit codes and turning errors into messages."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from enum import IntEnum
from typing import NoReturn, ParamSpec, TypeVar

import click
import typer
from rich.console import Console
from rich.text import Text

from stepgraph.exceptions import UntrustedTaskError, failure_kind
from stepgraph.model import RunStatus

P = ParamSpec("P")
R = TypeVar("R")


class ExitCode(IntEnum):
    """Documented exit statuses of the `stepgraph` command; help and docs list `meaning`."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    INVALID = 3
    STEP_FAILED = 4
    UNVERIFIED = 5
    NOT_RUN = 6
    MODEL_FAILED = 7
    DIVERGED = 8
    BUDGET = 9
    AWAITING = 10
    UNCHECKED = 11
    SIDE_EFFECTS_IN_FLIGHT = 12
    APPROVAL_MISMATCH = 13
    DECISION_CONFLICT = 14
    JOURNAL_INCOMPLETE = 15
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        """When the command exits with this status."""
        return MEANINGS[self]


MEANINGS = {
    ExitCode.OK: "the answer is verified "
    "(for validate, plan, approve: done; for replay: identical)",
    ExitCode.INTERNAL: "an unexpected internal error",
    ExitCode.USAGE: "wrong command-line usage "
    "(or a task file that runs code, looked at without --trust-plugins)",
    ExitCode.INVALID: "an invalid task file, plan, plan file or journal, "
    "or no valid plan from the planner; nothing ran",
    ExitCode.STEP_FAILED: "a step failed (its dependents were skipped)",
    ExitCode.UNVERIFIED: "every step ran but a verification failed",
    ExitCode.NOT_RUN: "the plan was not run: the approval policy refused it (readonly, "
    "never), or it was rejected or never approved",
    ExitCode.MODEL_FAILED: "the model endpoint failed (HTTP error, unreadable answer, timeout)",
    ExitCode.DIVERGED: "a replay diverged from the record",
    ExitCode.BUDGET: "a budget limit stopped the run (resume it with a higher limit)",
    ExitCode.AWAITING: "the run is parked awaiting a decision (stepgraph approve RUN_ID)",
    ExitCode.UNCHECKED: "every step ran and every verdict passed, but nothing checked the "
    "answer's value (no reverse check or declared check covers it)",
    ExitCode.SIDE_EFFECTS_IN_FLIGHT: "resume refused: a step with side effects started and "
    "has no observation, it may have run (--rerun-side-effects runs it again)",
    ExitCode.APPROVAL_MISMATCH: "not run: the approval covers something else than what "
    "would run now (another plan, inputs or tool code, or not signed on this machine)",
    ExitCode.DECISION_CONFLICT: "the decision came too late: the run was already decided "
    "or ended, or another process is deciding it now",
    ExitCode.JOURNAL_INCOMPLETE: "tools ran but the journal could not be written "
    "(a full disk): the journal does not record all the run did",
    ExitCode.INTERRUPTED: "interrupted",
}


def exit_status_table() -> str:
    """Every exit status with its meaning, one a line, for `--help` and the module docstring."""
    width = max(len(str(int(code))) for code in ExitCode)
    rows = (f"    {int(code):<{width}} {code.meaning}" for code in ExitCode)
    return "\n".join(("Exit status:", *rows))


STATUS_EXIT = {
    RunStatus.VERIFIED: ExitCode.OK,
    RunStatus.STEP_FAILED: ExitCode.STEP_FAILED,
    RunStatus.UNVERIFIED: ExitCode.UNVERIFIED,
    RunStatus.NOT_RUN: ExitCode.NOT_RUN,
    RunStatus.AWAITING_APPROVAL: ExitCode.AWAITING,
    RunStatus.UNCHECKED: ExitCode.UNCHECKED,
}
# An error's kind (`stepgraph.exceptions.failure_kind`) and the status it exits with.
KIND_EXIT = {
    "invalid": ExitCode.INVALID,
    "not_run": ExitCode.NOT_RUN,
    "side_effects_in_flight": ExitCode.SIDE_EFFECTS_IN_FLIGHT,
    "approval_mismatch": ExitCode.APPROVAL_MISMATCH,
    "decision_conflict": ExitCode.DECISION_CONFLICT,
    "journal_incomplete": ExitCode.JOURNAL_INCOMPLETE,
    "model_failed": ExitCode.MODEL_FAILED,
    "budget": ExitCode.BUDGET,
    "error": ExitCode.INVALID,
    "internal": ExitCode.INTERNAL,
}


def package_version() -> str:
    """The installed distribution's version (what `pip show stepgraph` says)."""
    import importlib.metadata  # only for --version: not on every command's start

    try:
        return importlib.metadata.version("stepgraph")
    except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        from stepgraph import __version__

        return __version__


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print an error to stderr and exit with `code`."""
    Console(stderr=True).print(Text.assemble(("error: ", "bold red"), message), highlight=False)
    raise typer.Exit(int(code))


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Give every error of a command a clear message and a documented exit code, never a traceback.

    Apply it under `@app.command()`; `functools.wraps` keeps the signature typer reads.
    """

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except typer.Exit:  # the command chose its exit status
            raise
        except click.UsageError as error:  # an option or argument the command cannot use
            fail(error.format_message(), ExitCode.USAGE)
        except UntrustedTaskError as error:  # the flag is missing, not the task wrong
            fail(f"{error}; pass --trust-plugins if you trust this task file", ExitCode.USAGE)
        except KeyboardInterrupt:
            fail("interrupted; what was observed is in the journal", ExitCode.INTERRUPTED)
        except Exception as error:
            kind = failure_kind(error)
            if kind != "internal":
                fail(str(error), KIND_EXIT[kind])
            if os.environ.get("STEPGRAPH_DEBUG"):  # a bug: the traceback on request
                raise
            fail(
                f"internal error: {type(error).__name__}: {error} "
                "(set STEPGRAPH_DEBUG=1 for a traceback)",
                ExitCode.INTERNAL,
            )

    return wrapper
