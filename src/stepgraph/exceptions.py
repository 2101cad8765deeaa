"""Every error stepgraph raises, under one base.

The tree::

    StepgraphError
    ├── TaskFileError            a task file that cannot be read or does not match the schema
    │   └── UntrustedTaskError   a task that would run code (plugins, MCP servers) unbidden
    ├── UnitError                an unknown unit, or two units of different dimensions
    ├── ToolError
    │   ├── ToolDefinitionError  a Python function that cannot become a tool
    │   ├── ToolArgumentError    arguments that fail a tool's schema
    │   ├── McpServerError       an MCP server that failed to start, crashed or timed out
    │   └── CalculationError     an expression `calculate` refuses or cannot evaluate
    │       └── UnitsDoNotCancelError  ceil, floor or round of a quantity that still has units
    ├── PlanValidationError      a step graph rejected before anything runs (build time)
    ├── PlanningError            the planner gave no valid plan within its retries
    │   └── PlannerNotConfiguredError  no plan in the task and no model to ask
    ├── LLMError                 the model endpoint failed (HTTP error, bad body, timeout)
    ├── StepExecutionError       a step that failed while running (run time)
    │   └── NonRetryableError    a step failure that retrying cannot fix
    ├── VerificationError        a run whose results did not pass re-verification
    ├── ApprovalError            a plan the approval policy (or a person) does not let run
    │   ├── SideEffectsInFlightError  a resume refused: side effects started, none observed
    │   ├── ApprovalMismatchError     an approval of something else than what would run now
    │   └── DecisionConflictError     a decision too late: decided, ended or being decided
    ├── RunStoppedError          a run stopped before its next model or tool call
    │   ├── BudgetExceededError  that call would pass a budget limit
    │   └── RunCancelledError    someone cancelled the run
    └── JournalError             a journal that cannot be read
        └── JournalWriteError    a journal that cannot be written (a full disk)

Build-time problems (`PlanValidationError`) are kept apart from run-time ones
(`StepExecutionError`, `VerificationError`), as pydantic_graph does: the first means
"change the plan", the others "the plan ran and something went wrong".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class StepgraphError(Exception):
    """Base of every error stepgraph raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only context fields break Exception's default pickling, and errors
        # travel back from Dask workers pickled.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[StepgraphError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class TaskFileError(StepgraphError):
    """A task file that is missing, not YAML, or does not match the task schema."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class UntrustedTaskError(TaskFileError):
    """A task that loads plugins or starts MCP servers, prepared without trusting its code.

    Raised by `Engine.prepare(..., trust_code=False)` before anything is imported or
    started: a task file from someone else is code only where the user says so.
    """

    def __init__(
        self, task: str, *, plugins: list[str], servers: list[str], urls: list[str]
    ) -> None:
        what = []
        if plugins:
            what.append(f"loads plugins ({', '.join(plugins)})")
        if servers:
            what.append(f"starts MCP servers ({', '.join(servers)})")
        if urls:
            what.append(f"connects to MCP servers ({', '.join(urls)})")
        # A URL server runs nothing here, but a validation would still send it requests.
        why = "runs code on this machine" if plugins or servers else "reaches other machines"
        super().__init__(f"task '{task}' {' and '.join(what)}: that {why}")
        self.task = task
        self.plugins = plugins
        self.servers = servers  # each stdio server's command line, as it would start
        self.urls = urls


class UnitError(StepgraphError):
    """An unknown unit, or a conversion between units of different dimensions."""


class ToolError(StepgraphError):
    """Base of the errors about tools and their arguments."""


class ToolDefinitionError(ToolError):
    """A Python function that cannot be turned into a tool."""


class ToolArgumentError(ToolError):
    """Arguments that do not match a tool's schema."""

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class McpServerError(ToolError):
    """An MCP server that failed to start, crashed, or gave no answer in time."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(f"MCP server '{server}': {message}")
        self.server = server


class CalculationError(ToolError):
    """An expression that `calculate` refuses or cannot evaluate."""


class UnitsDoNotCancelError(CalculationError):
    """``ceil``, ``floor`` or ``round`` of a quantity that still has units.

    ``ceil(2500 GB / (356.4 Mbps))`` is 8 GB/Mbps, and another unit would round to
    another count. The fields let a caller that knows the step's ``expect_unit`` suggest
    dividing by it (`stepgraph.tools.expression.units_do_not_cancel`).
    """

    def __init__(
        self,
        message: str,
        *,
        function: str,
        argument: str,
        shown: str,
        unit: str,
        dimension: str,
        rest: str,
    ) -> None:
        super().__init__(message)
        self.function = function  # ceil, floor or round
        self.argument = argument  # the argument as written, references by name
        self.shown = shown  # its value as people read it: 7.01459 GB/Mbps
        self.unit = unit  # its unit: GB/Mbps
        self.dimension = dimension  # its dimension: [time]
        self.rest = rest  # further arguments as written (round's digits), or ""


@dataclass(frozen=True)
class PlanProblem:
    """One thing wrong with a plan: which step, and what to change."""

    step: str | None
    message: str

    def __str__(self) -> str:
        return f"step '{self.step}': {self.message}" if self.step else self.message


class PlanValidationError(StepgraphError):
    """A step graph rejected by the static checks; nothing has run."""

    def __init__(self, problems: list[PlanProblem]) -> None:
        lines = "\n".join(f"- {problem}" for problem in problems)
        super().__init__(f"the plan has {len(problems)} problem(s):\n{lines}")
        self.problems = problems


class PlanningError(StepgraphError):
    """The planner gave no valid plan within its retries; every attempt is in the journal."""

    def __init__(self, message: str, *, problems: list[PlanProblem] | None = None) -> None:
        lines = "".join(f"\n- {problem}" for problem in problems or [])
        super().__init__(message + lines)
        self.problems = list(problems or [])


class PlannerNotConfiguredError(PlanningError):
    """A plan is needed but there is no model endpoint and no scripted planner."""


class LLMError(StepgraphError):
    """The model endpoint failed after its retries: HTTP error, unreadable body, timeout."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StepExecutionError(StepgraphError):
    """A step that raised, timed out, or returned a value of the wrong unit."""

    def __init__(self, message: str, *, step: str, run_id: str | None = None) -> None:
        super().__init__(f"step '{step}': {message}")
        self.step = step
        self.run_id = run_id


class NonRetryableError(StepExecutionError):
    """A step failure that retrying cannot fix: bad arguments, a wrong unit, a recorded failure.

    Its text is the observation's error as is, without the step prefix.
    """

    def __init__(self, message: str, *, step: str = "") -> None:
        StepgraphError.__init__(self, message)
        self.step = step
        self.run_id = None


class VerificationError(StepgraphError):
    """A run whose results did not pass re-verification."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class ApprovalError(StepgraphError):
    """A plan that the approval policy does not allow to run, or that a person did not approve."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class SideEffectsInFlightError(ApprovalError):
    """A resume refused: steps whose tools have side effects started and have no observation.

    They may have changed the world already; running them again needs a decision
    (``--rerun-side-effects``, or a person approving the re-run).
    """

    def __init__(self, message: str, *, steps: list[str], run_id: str | None = None) -> None:
        super().__init__(message, run_id=run_id)
        self.steps = steps


class ApprovalMismatchError(ApprovalError):
    """An approval that does not cover what would run now.

    Another plan, other inputs or tool code than were approved, an approval this
    machine's key did not sign, or a decision about another plan than the one waiting.
    """


class DecisionConflictError(ApprovalError):
    """A decision that came too late: the run was decided or ended, or is being decided now."""


class RunStoppedError(StepgraphError):
    """A run stopped cleanly before its next model or tool call: nothing new starts after it.

    Calls running when it stopped finish and are journaled; the scheduler starts no more.
    """


class RunCancelledError(RunStoppedError):
    """Someone cancelled the run (``POST /api/runs/ID/cancel``); it stopped before `before`."""

    def __init__(self, message: str, *, who: str, before: str) -> None:
        super().__init__(message)
        self.who = who  # who cancelled it, as they said
        self.before = before  # the call that was not made: "model" or "tool"


class BudgetExceededError(RunStoppedError):
    """A run stopped before a call that would pass one of its budget limits; it can be resumed."""

    def __init__(
        self,
        message: str,
        *,
        limit: str,
        allowed: float,
        before: str,
        usage: dict[str, Any],
        journal: str | None = None,
    ) -> None:
        super().__init__(message)
        self.limit = limit  # the limit's name, as in `Budget`: model_calls, cost, ...
        self.allowed = allowed
        self.before = before  # the call that was not made: "model" or "tool"
        self.usage = usage  # everything used so far, as in `BudgetUsage`
        self.journal = journal


class JournalError(StepgraphError):
    """A journal file that cannot be read at all."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class JournalWriteError(JournalError):
    """A journal that cannot be written: a full disk, a lost device, a file that cannot open.

    `tools_started` says whether a tool call had begun by then (its action was on disk):
    then the run did things its journal does not fully record.
    """

    def __init__(
        self, message: str, *, path: str | None = None, tools_started: bool = False
    ) -> None:
        super().__init__(message, path=path)
        self.tools_started = tools_started


__all__ = [
    "ApprovalError",
    "ApprovalMismatchError",
    "BudgetExceededError",
    "CalculationError",
    "DecisionConflictError",
    "JournalError",
    "JournalWriteError",
    "LLMError",
    "McpServerError",
    "NonRetryableError",
    "PlanProblem",
    "PlanValidationError",
    "PlannerNotConfiguredError",
    "PlanningError",
    "RunCancelledError",
    "RunStoppedError",
    "SideEffectsInFlightError",
    "StepExecutionError",
    "StepgraphError",
    "TaskFileError",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolError",
    "UnitError",
    "UntrustedTaskError",
    "VerificationError",
]


def failure_kind(error: BaseException) -> str:
    """The documented outcome an error stands for, one word: the CLI maps it to an exit status.

    ``invalid`` (a task, plan or journal that cannot be used, nothing ran; exit 3),
    ``not_run`` (the policy or a person did not approve; 6), ``model_failed`` (the
    endpoint; 7), ``budget`` (a budget limit; 9), ``side_effects_in_flight`` (a resume
    refused; 12), ``approval_mismatch`` (approved was something else; 13),
    ``decision_conflict`` (decided elsewhere first; 14), ``journal_incomplete`` (tools ran,
    the journal could not be written; 15), ``error`` (any other stepgraph error; 3),
    ``internal`` (a bug; 1).
    """
    if isinstance(error, BudgetExceededError):
        return "budget"
    if isinstance(error, JournalWriteError) and error.tools_started:
        return "journal_incomplete"
    if isinstance(error, PlanValidationError | PlanningError | TaskFileError | JournalError):
        return "invalid"
    if isinstance(error, SideEffectsInFlightError):
        return "side_effects_in_flight"
    if isinstance(error, ApprovalMismatchError):
        return "approval_mismatch"
    if isinstance(error, DecisionConflictError):
        return "decision_conflict"
    if isinstance(error, ApprovalError):
        return "not_run"
    if isinstance(error, LLMError):
        return "model_failed"
    return "error" if isinstance(error, StepgraphError) else "internal"
