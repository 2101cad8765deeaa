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

import contextvars
import threading
from collections.abc import Callable, Mapping
from typing import Any

import networkx as nx

from stepgraph.engine._approval import effective_policy
from stepgraph.executor import Backend, Execution, Scheduler, dependencies
from stepgraph.journal import JournalWriter
from stepgraph.model import ApprovalPolicy, Step, StepGraph
from stepgraph.planner import PlanStream, StreamingClient
from stepgraph.tools import ToolRegistry


def streaming_applies(
    *,
    wanted: bool,
    client: object | None,
    plans: bool,
    policy: ApprovalPolicy | None,
    approver: bool,
) -> bool:
    """Whether a run's first plan is streamed into execution.

    It is when streaming is `wanted` (the engine's option, else the task's key), the run
    `plans` (asks a planner for its first plan: no plan of its own, no plan file, not
    resumed), the planner's `client` can stream (a `StreamingClient`), and the `policy`
    runs a read-only plan without a person (`approver`: one is there to ask). The run's
    `run.start` records the outcome, and a replay streams exactly when it says.
    """
    if not wanted or not plans or not isinstance(client, StreamingClient):
        return False
    return effective_policy(policy, False, approver) in (
        ApprovalPolicy.AUTO,
        ApprovalPolicy.READONLY,
    )  # else a person decides


class EarlyStart:
    """Feeds the steps of a plan being streamed to a running scheduler (a `PlanWatcher`)."""

    def __init__(
        self,
        tools: ToolRegistry,
        inputs: Mapping[str, Any],
        journal: JournalWriter,
        *,
        max_workers: int,
        backend: Callable[[], Backend],
    ) -> None:
        self._tools = tools
        self._inputs = inputs
        self._journal = journal
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
        self._stream = PlanStream(self._tools, self._inputs)

    def feed(self, text: str) -> bool:
        """Start what the answer so far allows; False (stop reading) once a step is invalid."""
        if self._stream is None:
            self.begin()
        assert self._stream is not None
        self._held.extend(self._stream.feed(text))
        self._start_ready()
        return not self._stream.problems

    def _start_ready(self) -> None:
        tools = self._tools
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
            scheduler = Scheduler(
                nx.DiGraph(),
                self._tools,
                self._inputs,
                self._journal,
                max_workers=self._max_workers,
                backend=self._backend(),
            )
            scheduler.open()
            self._scheduler = scheduler
            # In the run's context: a run that leaves the heap alone does so here too.
            context = contextvars.copy_context()
            self._thread = threading.Thread(
                target=context.run,
                args=(self._run, scheduler),
                name="stepgraph-early",
                daemon=True,
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
