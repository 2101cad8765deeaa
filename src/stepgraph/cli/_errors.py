"""What every `stepgraph` command shares: exit codes and turning errors into messages."""

from __future__ import annotations

import os
from enum import IntEnum
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

from stepgraph.exceptions import (
    ApprovalError,
    JournalError,
    LLMError,
    PlanningError,
    PlanValidationError,
    StepgraphError,
    TaskFileError,
)
from stepgraph.model import RunStatus


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
    DIVERGED = 8
    INTERRUPTED = 130


STATUS_EXIT = {
    RunStatus.VERIFIED: ExitCode.OK,
    RunStatus.STEP_FAILED: ExitCode.STEP_FAILED,
    RunStatus.UNVERIFIED: ExitCode.UNVERIFIED,
    RunStatus.NOT_RUN: ExitCode.NOT_RUN,
}


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print an error to stderr and exit with `code`."""
    Console(stderr=True).print(Text.assemble(("error: ", "bold red"), message), highlight=False)
    raise typer.Exit(int(code))


def guard(error: BaseException) -> NoReturn:
    """Map an exception to a clear message and a documented exit code, never a traceback."""
    if isinstance(error, typer.Exit):
        raise error
    if isinstance(error, KeyboardInterrupt):
        fail("interrupted; what was observed is in the journal", ExitCode.INTERRUPTED)
    if isinstance(error, PlanValidationError | TaskFileError | PlanningError | JournalError):
        fail(str(error), ExitCode.INVALID)
    if isinstance(error, ApprovalError):
        fail(str(error), ExitCode.NOT_RUN)
    if isinstance(error, LLMError):
        fail(str(error), ExitCode.MODEL_FAILED)
    if isinstance(error, StepgraphError):
        fail(str(error), ExitCode.INVALID)
    if os.environ.get("STEPGRAPH_DEBUG"):
        raise error
    fail(
        f"internal error: {type(error).__name__}: {error} (set STEPGRAPH_DEBUG=1 for a traceback)",
        ExitCode.INTERNAL,
    )
