"""The executor: graph building and static validation, reference resolution, scheduling."""

from stepgraph.executor._backend import Backend, ThreadBackend, ToolCall
from stepgraph.executor._dask import DaskBackend, dask_backend
from stepgraph.executor._heap import frozen_heap
from stepgraph.executor._reuse import plan_diff, step_signatures
from stepgraph.executor._scheduler import Execution, Scheduler, StepRecord, StepState, execute
from stepgraph.executor._validate import (
    build_graph,
    check_plan,
    dependencies,
    step_problems,
    validate_plan,
)

__all__ = [
    "Backend",
    "DaskBackend",
    "Execution",
    "Scheduler",
    "StepRecord",
    "StepState",
    "ThreadBackend",
    "ToolCall",
    "build_graph",
    "check_plan",
    "dask_backend",
    "dependencies",
    "execute",
    "frozen_heap",
    "plan_diff",
    "step_problems",
    "step_signatures",
    "validate_plan",
]
