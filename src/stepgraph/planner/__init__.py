"""The planner: turns a goal into a `StepGraph` through an LLM (not built yet).

Today plans come from task files. The planner will emit the very same `StepGraph`
JSON, validated by `stepgraph.executor.validate_plan`.
"""

__all__: list[str] = []
