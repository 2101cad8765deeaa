"""stepgraph: the model plans, code executes, and every number is checked."""

from stepgraph.engine import Engine, PreparedTask, run
from stepgraph.exceptions import (
    ApprovalError,
    CalculationError,
    JournalError,
    LLMError,
    NonRetryableError,
    PlannerNotConfiguredError,
    PlanningError,
    PlanProblem,
    PlanValidationError,
    StepExecutionError,
    StepgraphError,
    TaskFileError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolError,
    UnitError,
    VerificationError,
)
from stepgraph.journal import read_journal
from stepgraph.model import (
    ApprovalPolicy,
    Check,
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
from stepgraph.task import load_task
from stepgraph.tools import Tool, ToolRegistry, tool

__version__ = "0.1.0"

__all__ = [
    "ApprovalError",
    "ApprovalPolicy",
    "CalculationError",
    "Check",
    "Engine",
    "JournalError",
    "LLMError",
    "LLMSettings",
    "NonRetryableError",
    "Observation",
    "OpenAIClient",
    "PlanProblem",
    "PlanValidationError",
    "Planner",
    "PlannerNotConfiguredError",
    "PlanningError",
    "PreparedTask",
    "RunResult",
    "RunStatus",
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
    "Verdict",
    "VerdictKind",
    "VerificationError",
    "load_task",
    "read_journal",
    "run",
    "tool",
]
