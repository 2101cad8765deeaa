"""The executor: graph building and static validation, reference resolution, scheduling, layout."""

# The names are imported on first use (PEP 562): validating a plan needs none of the
# scheduler, the journal it writes or the Dask backend.
from typing import TYPE_CHECKING as _TYPE_CHECKING

from stepgraph._lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from stepgraph.executor._ahead import AheadBackend
    from stepgraph.executor._backend import (
        Backend,
        ThreadBackend,
        ThreadLimited,
        ToolCall,
        resolve_args,
    )
    from stepgraph.executor._dask import DaskBackend, DaskCluster, dask_backend
    from stepgraph.executor._execution import Execution, StepRecord, StepState
    from stepgraph.executor._heap import collector_paused, freeze_imports, frozen_heap
    from stepgraph.executor._layout import GraphLayout, layered_layout, natural_key, route_crossings
    from stepgraph.executor._reuse import plan_diff, step_signatures
    from stepgraph.executor._scheduler import Scheduler, execute
    from stepgraph.executor._validate import (
        build_graph,
        check_plan,
        dependencies,
        static_outputs,
        step_problems,
        validate_plan,
    )

__all__ = [
    "AheadBackend",
    "Backend",
    "DaskBackend",
    "DaskCluster",
    "Execution",
    "GraphLayout",
    "Scheduler",
    "StepRecord",
    "StepState",
    "ThreadBackend",
    "ThreadLimited",
    "ToolCall",
    "build_graph",
    "check_plan",
    "collector_paused",
    "dask_backend",
    "dependencies",
    "execute",
    "freeze_imports",
    "frozen_heap",
    "layered_layout",
    "natural_key",
    "plan_diff",
    "resolve_args",
    "route_crossings",
    "static_outputs",
    "step_problems",
    "step_signatures",
    "validate_plan",
]

_MODULES = {
    "AheadBackend": "stepgraph.executor._ahead",
    "Backend": "stepgraph.executor._backend",
    "DaskBackend": "stepgraph.executor._dask",
    "DaskCluster": "stepgraph.executor._dask",
    "Execution": "stepgraph.executor._execution",
    "GraphLayout": "stepgraph.executor._layout",
    "Scheduler": "stepgraph.executor._scheduler",
    "StepRecord": "stepgraph.executor._execution",
    "StepState": "stepgraph.executor._execution",
    "ThreadBackend": "stepgraph.executor._backend",
    "ThreadLimited": "stepgraph.executor._backend",
    "ToolCall": "stepgraph.executor._backend",
    "build_graph": "stepgraph.executor._validate",
    "check_plan": "stepgraph.executor._validate",
    "collector_paused": "stepgraph.executor._heap",
    "dask_backend": "stepgraph.executor._dask",
    "dependencies": "stepgraph.executor._validate",
    "execute": "stepgraph.executor._scheduler",
    "freeze_imports": "stepgraph.executor._heap",
    "frozen_heap": "stepgraph.executor._heap",
    "layered_layout": "stepgraph.executor._layout",
    "natural_key": "stepgraph.executor._layout",
    "plan_diff": "stepgraph.executor._reuse",
    "resolve_args": "stepgraph.executor._backend",
    "route_crossings": "stepgraph.executor._layout",
    "static_outputs": "stepgraph.executor._validate",
    "step_problems": "stepgraph.executor._validate",
    "step_signatures": "stepgraph.executor._reuse",
    "validate_plan": "stepgraph.executor._validate",
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _MODULES)
