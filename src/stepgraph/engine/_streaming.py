"""Plans streamed into execution: read-only steps start while the model is still writing.

LLMCompiler's idea, with the static checks kept. The planner streams each answer to an
`EarlyStart`; every step whose JSON object is complete and valid on its own starts on a
scheduler that keeps running for more steps, as soon as the steps it refers to have
started too. Only steps whose tools have no side effects start early, and only when the
approval policy would let a read-only plan run unasked; everything else waits for the
finished plan, its whole-plan checks and its approval, as without streaming.

What the journal holds stays replayable: the early steps' `thought`, `action` and
`observation` events are the ones the scheduler always writes (before `plan.proposed`
instead of after it), the final plan is journaled as always, and which steps start
early depends only on the text of the answer, so a replay that streams the recorded
text starts the same steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import networkx as nx

from stepgraph.engine._approval import effective_policy
from stepgraph.executor import Backend, Execution, Scheduler, dependencies
from stepgraph.model import ApprovalPolicy, Step, StepGraph
from stepgraph.planner import PlanStream, streams

if TYPE_CHECKING:
    from stepgraph.engine._session import RunSession


def streaming_applies(session: RunSession) -> bool:
    """Whether the session's first plan is streamed into execution.

    It is when streaming is asked for (the engine's option, else the task's key), the
    planner's client can stream, and the policy runs a read-only plan without a person.
    The run's `run.start` records the outcome, and a replay streams exactly when it says.
    """
    config, prepared, options = session.config, session.prepared, session.options
    if options.early_start is not None:  # a replay streams exactly when its record did
        return options.early_start
    wanted = prepared.task.stream if config.stream is None else config.stream
    planner = config.planner
    if not wanted or planner is None or options.prior is not None:
        return False
    if prepared.plan is not None or options.plan_file is not None or not streams(planner.client):
        return False
    policy = effective_policy(options.policy, False, options.approver is not None)
    return policy in (ApprovalPolicy.AUTO, ApprovalPolicy.READONLY)  # else a person decides


def early_start(session: RunSession) -> EarlyStart | None:
    """An `EarlyStart` for the session's first plan, or None when streaming does not apply."""
    if not streaming_applies(session):
        return None
    config = session.config
    workers = config.max_workers or session.prepared.task.max_workers
    return EarlyStart(session, workers, config.backend)


class EarlyStart:
    """Feeds the steps of a plan being streamed to a running scheduler (a `PlanWatcher`)."""

    def __init__(
        self, session: RunSession, max_workers: int, backend: Callable[[], Backend]
    ) -> None:
        self._session = session
        self._max_workers = max_workers
        self._backend = backend
        self._stream: PlanStream | None = None
        self._scheduler: Scheduler | None = None
        self._thread: threading.Thread | None = None
        self._outcome: Execution | BaseException | None = None
        self._started: dict[str, Step] = {}  # given to the scheduler, in that order
        self._held: list[Step] = []  # complete and valid, waiting for the plan or a dependency

    @property
    def started(self) -> list[str]:
        """Ids of the steps started early, in the order they were started."""
        return list(self._started)

    def begin(self) -> None:
        """A new answer: what the last one started finishes, and counts for nothing."""
        self.abandon()
        prepared = self._session.prepared
        self._stream = PlanStream(prepared.tools, prepared.inputs)

    def feed(self, text: str) -> bool:
        """Start what the answer so far allows; False (stop reading) once a step is invalid."""
        if self._stream is None:
            self.begin()
        assert self._stream is not None
        self._held.extend(self._stream.feed(text))
        self._start_ready()
        return not self._stream.problems

    def _start_ready(self) -> None:
        tools = self._session.prepared.tools
        ready: list[Step] = []
        progress = True
        while progress:  # a step may free one held before it (a forward reference)
            progress = False
            for step in list(self._held):
                if tools.get(step.tool).side_effects:
                    continue  # waits for the approved plan
                if all(dep in self._started for dep in dependencies(step)):
                    self._held.remove(step)
                    self._started[step.id] = step
                    ready.append(step)
                    progress = True
        if ready:
            self._running().add(ready)

    def _running(self) -> Scheduler:
        if self._scheduler is None:
            prepared = self._session.prepared
            scheduler = Scheduler(
                nx.DiGraph(),
                prepared.tools,
                prepared.inputs,
                self._session.journal,
                max_workers=self._max_workers,
                backend=self._backend(),
            )
            scheduler.open()
            self._scheduler = scheduler
            self._thread = threading.Thread(
                target=self._run, args=(scheduler,), name="stepgraph-early", daemon=True
            )
            self._thread.start()
        return self._scheduler

    def _run(self, scheduler: Scheduler) -> None:
        try:
            self._outcome = scheduler.run()
        except BaseException as e:  # handed to the session's thread in `finish`
            self._outcome = e

    def finish(self, plan: StepGraph, graph: nx.DiGraph) -> Execution | None:
        """Run the rest of the approved plan on the same scheduler; return the whole execution.

        None when nothing started early, or the approved plan is not the one streamed
        (a person edited it): then the plan runs as without streaming.
        """
        if self._scheduler is None or self._thread is None:
            return None
        steps = {step.id: step for step in plan.steps}
        if any(steps.get(sid) != step for sid, step in self._started.items()):
            self.abandon()
            return None
        scheduler, thread = self._scheduler, self._thread
        scheduler.add([step for step in plan.steps if step.id not in self._started])
        scheduler.close()
        thread.join()
        outcome = self._outcome
        self._scheduler = self._thread = None
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        records = outcome.records  # the plan's order, as a run not streamed gives it
        outcome.records = {node: records[node] for node in graph if node in records}
        return outcome

    def abandon(self) -> None:
        """Stop taking steps; wait for the started ones (read-only, journaled) to end."""
        scheduler, thread = self._scheduler, self._thread
        self._scheduler = self._thread = None
        self._started, self._held, self._outcome = {}, [], None
        if scheduler is not None and thread is not None:
            scheduler.close()
            thread.join()
