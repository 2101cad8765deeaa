"""stepgraph: the model plans, code executes, and every number is checked."""

# The names below are imported on first use (PEP 562): `stepgraph --help` must not pay
# for openai, pint and networkx, and importing any submodule imports this package first.
from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from stepgraph.engine import Engine, ReplayReport, replay, resume, run
    from stepgraph.exceptions import (
        ApprovalError,
        ApprovalMismatchError,
        BudgetExceededError,
        CalculationError,
        DecisionConflictError,
        JournalError,
        JournalWriteError,
        LLMError,
        McpServerError,
        NonRetryableError,
        PlannerNotConfiguredError,
        PlanningError,
        PlanProblem,
        PlanValidationError,
        RunCancelledError,
        RunStoppedError,
        SideEffectsInFlightError,
        StepExecutionError,
        StepgraphError,
        TaskFileError,
        ToolArgumentError,
        ToolDefinitionError,
        ToolError,
        UnitError,
        UnitsDoNotCancelError,
        UntrustedTaskError,
        VerificationError,
    )
    from stepgraph.journal import read_journal
    from stepgraph.model import (
        ApprovalPolicy,
        Budget,
        Check,
        McpServerSpec,
        Observation,
        RunResult,
        RunStatus,
        Step,
        StepGraph,
        Task,
        TaskInput,
        Verdict,
        VerdictKind,
    )
    from stepgraph.planner import LLMSettings, OpenAIClient, Planner
    from stepgraph.task import PreparedTask, load_task
    from stepgraph.tools import Tool, ToolRegistry, tool

__version__ = "0.1.0"


__all__ = [
    "ApprovalError",
    "ApprovalMismatchError",
    "ApprovalPolicy",
    "Budget",
    "BudgetExceededError",
    "CalculationError",
    "Check",
    "DecisionConflictError",
    "Engine",
    "JournalError",
    "JournalWriteError",
    "LLMError",
    "LLMSettings",
    "McpServerError",
    "McpServerSpec",
    "NonRetryableError",
    "Observation",
    "OpenAIClient",
    "PlanProblem",
    "PlanValidationError",
    "Planner",
    "PlannerNotConfiguredError",
    "PlanningError",
    "PreparedTask",
    "ReplayReport",
    "RunCancelledError",
    "RunResult",
    "RunStatus",
    "RunStoppedError",
    "SideEffectsInFlightError",
    "Step",
    "StepExecutionError",
    "StepGraph",
    "StepgraphError",
    "Task",
    "TaskFileError",
    "TaskInput",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolRegistry",
    "UnitError",
    "UnitsDoNotCancelError",
    "UntrustedTaskError",
    "Verdict",
    "VerdictKind",
    "VerificationError",
    "load_task",
    "read_journal",
    "replay",
    "resume",
    "run",
    "tool",
]

_MODULES = {
    "Engine": "engine",
    "ReplayReport": "engine",
    "replay": "engine",
    "resume": "engine",
    "run": "engine",
    "read_journal": "journal",
    "LLMSettings": "planner",
    "OpenAIClient": "planner",
    "Planner": "planner",
    "PreparedTask": "task",
    "load_task": "task",
    "Tool": "tools",
    "ToolRegistry": "tools",
    "tool": "tools",
}


def __getattr__(name: str) -> _Any:
    if name not in __all__:
        raise AttributeError(f"module 'stepgraph' has no attribute {name!r}")
    module = _import_module(f"stepgraph.{_MODULES.get(name, 'exceptions')}")
    if not hasattr(module, name):  # the shared vocabulary: StepGraph, Task, RunResult, ...
        module = _import_module("stepgraph.model")
    value = getattr(module, name)
    globals()[name] = value  # once: later lookups never come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
