"""What a run is given: the engine's shared `RunConfig` and one run's `RunOptions`.

`RunOptions` is how replay, resume and park enter `Engine.run`; it is read by the session,
never written to by a stage (`Engine.run` works on a copy of the caller's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepgraph.exceptions import PlannerNotConfiguredError

if TYPE_CHECKING:
    from stepgraph.engine._approval import Approver, Decision, PlanFile
    from stepgraph.engine._cancel import Cancellation
    from stepgraph.engine._memory import PlanMemory
    from stepgraph.engine._recall import Recalled
    from stepgraph.executor import Backend
    from stepgraph.journal import Prior, RunLink, RunResume
    from stepgraph.model import ApprovalPolicy, Budget, StepGraph, WorkedExample
    from stepgraph.planner import Planner
    from stepgraph.task import PreparedTask

NO_PLANNER = (
    "task '{name}' has no plan and no planner is configured. Three ways forward:\n"
    "- point stepgraph at a model: set OPENAI_BASE_URL and/or OPENAI_API_KEY "
    "(and STEPGRAPH_MODEL), or pass --base-url/--model;\n"
    "- add a 'plan:' to the task file;\n"
    "- pass a scripted responses file: --scripted FILE."
)


def require_planner(planner: Planner | None, task: PreparedTask) -> Planner:
    """The planner, or an error naming the three ways to get a plan."""
    if planner is None:
        raise PlannerNotConfiguredError(NO_PLANNER.format(name=task.task.name))
    return planner


@dataclass(frozen=True)
class RunConfig:
    """What every run of one engine shares: the planner, the repair bound, the workers."""

    planner: Planner | None
    repair_rounds: int
    max_workers: int | None
    backend: Callable[[], Backend]
    cross_check: bool = False  # a verified run must be reproduced by a second plan
    stream: bool | None = None  # start read-only steps while the plan streams in; None: task
    memory: PlanMemory | None = None  # verified plans recalled for typed goals of their shape
    # `gc.freeze()` for the run (collections skip what existed before it); off for a host
    # that manages the collector itself. A heap the host froze is never unfrozen either way.
    freeze_heap: bool = True


@dataclass
class RunOptions:
    """How a run is approved and where it starts from."""

    policy: ApprovalPolicy | None = None
    approver: Approver | None = None
    plan_file: PlanFile | None = None
    prior: Prior | None = None
    resumed: RunResume | None = None  # the `run.resume` a resumed run starts with
    run_id: str | None = None  # a resumed or continued run keeps its id; None: a new one
    start_seq: int = 0  # a resumed run appends after the events already in its journal
    replay_of: RunLink | None = None  # the run this one replays, for `run.start`
    parent: RunLink | None = None  # ... or forks
    budget: Budget | None = None  # limits over the task's (and a resumed run's recorded ones)
    awaiting: StepGraph | None = None  # a parked run continues with the plan it parked on
    awaiting_round: int = 0  # ... in the repair round it parked in
    reuse: dict[str, tuple[Any, dict[str, Any]]] = field(default_factory=dict)  # by signature
    # Read-only steps started while the plan streams in: None, when the policy allows; a
    # replay says what its record did (its gate asks the record, not a policy).
    early_start: bool | None = None
    # A decision already in the journal (recorded under the run's lock before the decider
    # was answered): the approver hands it over to be carried out, not journaled twice.
    recorded: Decision | None = None
    # The plans a person wrote at an approval before this process (`plan.edited`, by hash):
    # a resumed or continued run judges them as the person's, as the run that took the edit.
    edited: frozenset[str] = frozenset()
    # A replay takes what memory gave the recorded run from its record, not from memory now.
    recalled: Recalled | None = None
    cancel: Cancellation | None = None  # set from another thread: stop before the next call
    examples: list[WorkedExample] | None = None  # None: ask memory (if any) for examples
