"""An engine and a task rebuilt from a recording: what replay, resume and park start from.

A recorded run is driven again through `Engine.run`; the engine is set as the recording's
`run.start` says (its repair bound, whether a second plan had to agree), and the task is
prepared again with the inputs the run resolved, not re-read from `--set` or the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from stepgraph.engine._engine import Engine
from stepgraph.journal import Recording
from stepgraph.task import PreparedTask

if TYPE_CHECKING:
    from stepgraph.model import Task
    from stepgraph.planner import Planner
    from stepgraph.tools import Tool


def engine_from(
    recording: Recording,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    planner: Planner | None = None,
    **settings: Any,
) -> Engine:
    """An engine set as the recorded run's was; `settings` are `Engine`'s, and win."""
    config = recording.start.config
    settings.setdefault("repair_rounds", config.repair_rounds)
    settings.setdefault("cross_check", config.cross_check)
    return Engine(tools=tools, planner=planner, **settings)


def prepared_from(recording: Recording, engine: Engine, task: Task | None = None) -> PreparedTask:
    """The recorded task (or `task`, a changed copy of it) prepared with the recorded inputs."""
    loaded = engine.prepare(task or recording.task, base_dir=recording.base_dir)
    return dataclasses.replace(loaded, inputs=recording.inputs)
