"""Ready-set dispatch: a step starts as soon as its own inputs exist.

No level-by-level barriers and no polling: the scheduler thread sleeps on a queue
that finished calls put themselves on, until one arrives or the nearest deadline passes.
All journal events are written from this one thread, so `seq` follows real order.
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import networkx as nx

from stepgraph.exceptions import (
    NonRetryableError,
    RunStoppedError,
    StepgraphError,
    UnitsDoNotCancelError,
)
from stepgraph.executor._ahead import Ahead, AheadBackend
from stepgraph.executor._backend import (
    Backend,
    ThreadBackend,
    ThreadLimited,
    ToolCall,
    resolve_args,
)
from stepgraph.executor._execution import Execution, ObservationLog, StepState
from stepgraph.executor._heap import frozen_heap
from stepgraph.executor._pool import PoolFuture
from stepgraph.executor._validate import dependencies
from stepgraph.journal import (
    Action,
    JournalWriter,
    NullJournal,
    ObservationEvent,
    StepReused,
    StepSkipped,
    Thought,
)
from stepgraph.model import Step
from stepgraph.references import ReferenceError_
from stepgraph.tools import ToolRegistry
from stepgraph.tools.expression import Expression, suggest_unit
from stepgraph.units import convert
from stepgraph.values import check_data

_SETTLED = (StepState.REUSED, StepState.FAILED, StepState.SKIPPED)


# Calls that end within this many milliseconds are queued behind busy threads (see `_may_queue`).
QUICK_CALL_MS = 2.0

# Retries back off: the first waits this long, each next one twice as long, up to the cap.
RETRY_BACKOFF_SECONDS = 0.25
RETRY_BACKOFF_CAP_SECONDS = 8.0


def retry_delay(failed_attempt: int) -> float:
    """Seconds to wait before the attempt after `failed_attempt` (1 for the first)."""
    delay: float = RETRY_BACKOFF_SECONDS * 2.0 ** (failed_attempt - 1)
    return min(delay, RETRY_BACKOFF_CAP_SECONDS)


@dataclass
class _Attempt:
    step: Step
    number: int
    started: float
    deadline: float


@dataclass
class _Abandoned:
    """A timed-out attempt of a side-effecting tool: no retry until it has really ended."""

    attempt: _Attempt
    give_up_at: float


_WAKE: Future[Any] = Future()  # put on the completion queue to wake the loop for arrivals


def _began(future: Future[Any], attempt: _Attempt, waiting: float | None = None) -> float:
    """When the call really started: a pooled call may have waited for a thread.

    `waiting` stands for the start of a call still waiting (its clock has not started).
    """
    if isinstance(future, PoolFuture):
        if future.started is not None:
            return future.started
        if waiting is not None:
            return waiting
    return attempt.started


def _describe(error: BaseException) -> str:
    if isinstance(error, StepgraphError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class Scheduler:
    """Runs a validated graph on a worker pool, journaling every step."""

    def __init__(
        self,
        graph: nx.DiGraph,
        tools: ToolRegistry,
        inputs: Mapping[str, Any],
        journal: JournalWriter | NullJournal,
        *,
        max_workers: int = 8,
        reused: Mapping[str, Any] | None = None,
        refused: Mapping[str, str] | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.graph = graph
        self.tools = tools
        self.journal = journal
        # The step events are built only for a journal that keeps them or tells someone.
        self._heard = journal.heard
        self.max_workers = max_workers
        self.result = Execution()
        self._scope: dict[str, Any] = {"inputs": dict(inputs)}
        # The graph's own dicts: networkx's `in_degree` view is a look-up cost per node, and
        # the view it caches on the graph points back at it (a cycle kept past the run).
        self._waiting = {node: len(upstream) for node, upstream in graph._pred.items()}
        self._ready: deque[str] = deque()
        self._retries: list[tuple[float, Step, int]] = []  # (not before, step, attempt)
        self._abandoned: dict[Future[Any], _Abandoned] = {}
        self._observations = ObservationLog()
        self._running: dict[Future[Any], _Attempt] = {}
        # Finished futures arrive here from their done-callbacks: one cheap blocking get
        # per wake-up instead of `concurrent.futures.wait` re-arming every running future.
        self._completed: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        self._backend = backend or ThreadBackend()
        # A pool that queues calls past its thread limit may be given more calls than it
        # has threads, so a worker that finishes one starts the next at once. Only while
        # calls are quick: there the round trip through this thread is most of a call, and
        # a call queued a moment is still started about when its action says.
        self._may_queue = False
        self._queue_depth = 0  # while the last call that finished was quick
        if isinstance(self._backend, ThreadLimited):
            self._backend.limit_threads(max_workers)
            self._may_queue = True
        # A backend that wires futures together gets steps before their inputs are back.
        self._ahead: Ahead | None = None
        if isinstance(self._backend, AheadBackend):
            self._ahead = Ahead(self._backend, graph, tools, self._scope)
        self._ready_ahead: deque[str] = deque()  # ready, and already on the backend
        self._reused = dict(reused or {})
        self._refused = dict(refused or {})
        self._stopped: RunStoppedError | None = None  # no launches; running calls finish
        # A streamed plan: steps arrive while the scheduler runs (`add`), until `close`.
        self._open = False
        self._arrivals: queue.SimpleQueue[list[Step] | None] = queue.SimpleQueue()

    def open(self) -> None:
        """Keep running when idle, for steps still to come through `add`, until `close`."""
        self._open = True

    def add(self, steps: list[Step]) -> None:
        """Give the running scheduler more steps (from any thread).

        Every step a new one depends on must be given before it or with it.
        """
        self._arrivals.put(list(steps))
        self._completed.put(_WAKE)

    def close(self) -> None:
        """No more steps will come: finish what is given, then return from `run`."""
        self._arrivals.put(None)
        self._completed.put(_WAKE)

    def _take_arrivals(self) -> None:
        """Add the steps given since the last wake-up to the graph; queue those ready."""
        while self._open:
            try:
                steps = self._arrivals.get_nowait()
            except queue.Empty:
                return
            if steps is None:
                self._open = False
                return
            for step in steps:
                self.graph.add_node(step.id, step=step)
            for step in steps:
                self.graph.add_edges_from((dep, step.id) for dep in dependencies(step))
            for step in steps:
                upstream = list(self.graph.predecessors(step.id))
                failed = [u for u in upstream if self._failed_or_skipped(u)]
                self._waiting[step.id] = sum(not self._has_value(u) for u in upstream)
                if failed:
                    reason = f"depends on '{failed[0]}', which failed"
                    record = self.result.record(step.id)
                    record.state, record.error = StepState.SKIPPED, reason
                    self.journal.emit(StepSkipped(step=step.id, reason=reason))
                elif self._waiting[step.id] == 0 and not self._settled(step.id):
                    self._ready.append(step.id)

    def _has_value(self, step_id: str) -> bool:
        record = self.result.records.get(step_id)
        return record is not None and record.state in (StepState.DONE, StepState.REUSED)

    def _failed_or_skipped(self, step_id: str) -> bool:
        record = self.result.records.get(step_id)
        return record is not None and record.state in (StepState.FAILED, StepState.SKIPPED)

    def run(self) -> Execution:
        """Run every step that can run; return values, observations, failures and skips."""
        with frozen_heap():  # the graph and the tools are never garbage during the run
            return self._run()

    def _run(self) -> Execution:
        for step_id, value in self._reused.items():
            self.journal.emit(StepReused(step=step_id, value=value))
            self._complete(step_id, value, StepState.REUSED)
        for step_id, reason in self._refused.items():
            step = self.graph.nodes[step_id]["step"]
            self._record_failure(step, 1, time.monotonic(), NonRetryableError(reason), final=True)
        self._ready.extend(  # roots only: steps freed by a reused step are already queued
            node
            for node in self.graph
            if not self.graph._pred[node] and node not in self._reused and node not in self._refused
        )
        try:
            while self._ready or self._ready_ahead or self._in_flight():
                self._take_arrivals()
                for call, attempt, ahead in self._launches():  # their actions are on disk now
                    future = ahead or self._backend.submit(call)
                    self._running[future] = attempt
                    future.add_done_callback(self._completed.put)
                    if self._ahead is not None and ahead is None:
                        self._ahead.assigned(attempt.step.id, future)
                if self._ahead is not None:
                    self._ahead.submit_more(self._waiting, self._settled)
                if not self._in_flight():
                    continue
                done = self._wait_for_completions()
                with self.journal.batch():
                    for future in sorted(done, key=lambda f: self._running[f].started):
                        self._finish(future)
                    self._expire(time.monotonic())
        finally:
            if self._ahead is not None:
                self._ahead.cancel_all()
            self._backend.shutdown()
        if self._stopped is not None:  # what ran is journaled; `resume` runs the rest
            raise self._stopped
        # Plan order, not completion order: what follows (prompts, results) must not
        # depend on which of two parallel steps happened to finish first.
        result = self.result
        result.observations = self._observations.observations()
        records = result.records
        result.records = {node: records[node] for node in self.graph if node in records}
        return result

    def _in_flight(self) -> bool:
        """Calls still to finish or retry, or a streamed plan whose steps may still come."""
        return bool(self._running or self._retries or self._abandoned or self._open)

    def _wait_for_completions(self) -> list[Future[Any]]:
        """Sleep until a call finishes or the nearest deadline passes; take all that finished."""
        deadlines = [attempt.deadline for attempt in self._running.values()]
        deadlines += [retry[0] for retry in self._retries]
        deadlines += [waiting.give_up_at for waiting in self._abandoned.values()]
        nearest = min(deadlines, default=None)  # None: idle, waiting for `add` or `close`
        wait = None if nearest is None else max(0.0, nearest - time.monotonic())
        try:
            finished = [self._completed.get(timeout=wait)]
        except queue.Empty:
            return []
        with suppress(queue.Empty):
            while True:
                finished.append(self._completed.get_nowait())
        for future in finished:
            waiting = self._abandoned.pop(future, None)
            if waiting is not None:  # the timed-out attempt has ended: a retry is safe now
                self._retry(waiting.attempt)
        return [future for future in finished if future in self._running]  # not timed out

    def _launches(self) -> list[tuple[ToolCall, _Attempt, Future[Any] | None]]:
        """Journal the thoughts and actions of every call that fits, flushed once, then return them.

        Write-ahead: an action is in the file before its tool can start, so after a
        crash `resume` knows which calls may have run. (A step submitted ahead, see
        `_ahead`, has no side effects: it is journaled once its inputs are back here.)
        """
        launches: list[tuple[ToolCall, _Attempt, Future[Any] | None]] = []
        with self.journal.batch():
            while self._ready_ahead:  # on the backend already: no worker slot to wait for
                launch = self._launch(self.graph.nodes[self._ready_ahead.popleft()]["step"], 1)
                if launch is not None:
                    launches.append(launch)
            now = time.monotonic()
            due = sorted((r for r in self._retries if r[0] <= now), key=lambda r: r[0])
            self._retries = [r for r in self._retries if r[0] > now]
            pending = deque((step, number) for _, step, number in due)
            in_flight = len(self._running) + sum(1 for launch in launches if launch[2] is None)
            while (pending or self._ready) and in_flight < self.max_workers + self._queue_depth:
                if pending:
                    step, number = pending[0]
                else:
                    step, number = self.graph.nodes[self._ready[0]]["step"], 1
                if in_flight >= self.max_workers and not self._may_wait_for_a_thread(step):
                    break  # journaled as started: it must not wait behind other calls
                if pending:
                    pending.popleft()
                else:
                    self._ready.popleft()
                try:
                    launch = self._launch(step, number)
                except RunStoppedError as e:  # the journal's guard refused the call
                    self._stopped, launch = e, None
                    self._ready.clear()
                    self._retries.clear()
                    pending.clear()
                if launch is not None:
                    launches.append(launch)
                    in_flight += 1
            self._retries.extend((now, step, number) for step, number in pending)
        return launches

    def _may_wait_for_a_thread(self, step: Step) -> bool:
        """A sync call without side effects may be queued behind the calls running now.

        (A side-effecting call's action must mean it started; an async call would not wait.)
        """
        tool = self.tools.get(step.tool)
        return not tool.side_effects and not tool.is_async

    def _launch(
        self, step: Step, number: int
    ) -> tuple[ToolCall, _Attempt, Future[Any] | None] | None:
        tool = self.tools.get(step.tool)
        ahead = self._ahead.take(step.id) if self._ahead is not None and number == 1 else None
        if number == 1 and self._heard:
            self.journal.emit(Thought(step=step.id, text=step.thought))
        started = time.monotonic()
        try:
            args = resolve_args(tool, step.args, self._scope)
        except ReferenceError_ as e:
            if ahead is not None:
                self._backend.cancel(ahead)
            self._record_failure(step, number, started, NonRetryableError(str(e)), final=True)
            return None
        self.result.record(step.id).args = args
        if self._heard:
            recorded = {k: v.to_data() if isinstance(v, Expression) else v for k, v in args.items()}
            self.journal.emit(Action(step=step.id, tool=tool.name, args=recorded, attempt=number))
        attempt = _Attempt(step, number, started, started + step.timeout)
        return ToolCall(step, number, tool, args), attempt, ahead

    def _finish(self, future: Future[Any]) -> None:
        attempt = self._running.pop(future)
        step = attempt.step
        error = future.exception()
        if isinstance(error, UnitsDoNotCancelError):  # the fix divides by the expected unit
            error = suggest_unit(error, step.expect_unit)
        if error is None:
            value = future.result()
            try:
                check_data(value)  # a socket or a lambda is no value to pass on or journal
            except StepgraphError as e:
                error = NonRetryableError(f"tool '{step.tool}' returned {e}")
            if error is None and step.expect_unit is not None:
                try:
                    value = convert(value, step.expect_unit)
                except StepgraphError as e:
                    error = NonRetryableError(f"expect_unit '{step.expect_unit}': {e}")
        if error is not None:
            retry = not isinstance(error, NonRetryableError) and self._may_retry(attempt)
            self._record_failure(step, attempt.number, attempt.started, error, final=not retry)
            if retry:
                self._retry(attempt)
            return
        elapsed = (time.monotonic() - _began(future, attempt)) * 1000
        if self._may_queue:
            self._queue_depth = self.max_workers if elapsed < QUICK_CALL_MS else 0
        self._observe(step.id, attempt.number, elapsed, final=True, ok=True, value=value)
        self._complete(step.id, value)

    def _complete(self, step_id: str, value: Any, state: StepState = StepState.DONE) -> None:
        record = self.result.record(step_id)
        record.state, record.value = state, value
        self._scope[step_id] = value
        for successor in self.graph.successors(step_id):
            self._waiting[successor] -= 1
            if self._waiting[successor] == 0 and not self._settled(successor):
                if self._ahead is not None and successor in self._ahead:
                    self._ready_ahead.append(successor)
                else:
                    self._ready.append(successor)

    def _settled(self, step_id: str) -> bool:
        """Reused, refused, failed or skipped already: never to be launched."""
        result = self.result
        # Perhaps not recorded yet (the reused complete first, and free their successors),
        # but never to be launched: a refused call ran a third time (held-out GSM8K 1016).
        if step_id in self._reused or step_id in self._refused:
            return True
        record = result.records.get(step_id)
        return record is not None and record.state in _SETTLED

    def _expire(self, now: float) -> None:
        for future, attempt in list(self._running.items()):
            if now < attempt.deadline or future.done():
                continue
            began = _began(future, attempt, waiting=now)
            if now < began + attempt.step.timeout:  # it waited in the queue: its clock is later
                attempt.deadline = began + attempt.step.timeout
                continue
            del self._running[future]
            self._backend.cancel(future)
            step = attempt.step
            error = TimeoutError(f"no result after {step.timeout:g} s (attempt {attempt.number})")
            retry = self._may_retry(attempt)
            self._record_failure(step, attempt.number, attempt.started, error, final=not retry)
            if not retry:
                continue
            if self.tools.get(step.tool).side_effects:  # it may still be changing the world
                self._abandoned[future] = _Abandoned(attempt, now + step.timeout)
            else:
                self._retry(attempt)
        for future, waiting in list(self._abandoned.items()):
            if now >= waiting.give_up_at:
                del self._abandoned[future]
                step = waiting.attempt.step
                message = (
                    f"not retried: attempt {waiting.attempt.number} timed out and may still be "
                    f"running, and tool '{step.tool}' has side effects"
                )
                self._record_failure(
                    step, waiting.attempt.number, now, NonRetryableError(message), final=True
                )

    def _may_retry(self, attempt: _Attempt) -> bool:
        """Retries left, and a tool that may run twice: no side effects, or idempotent."""
        tool = self.tools.get(attempt.step.tool)
        safe = not tool.side_effects or tool.idempotent
        return safe and attempt.number <= attempt.step.retries

    def _retry(self, attempt: _Attempt) -> None:
        not_before = time.monotonic() + retry_delay(attempt.number)
        self._retries.append((not_before, attempt.step, attempt.number + 1))

    def _record_failure(
        self, step: Step, number: int, started: float, error: BaseException, *, final: bool
    ) -> None:
        if self._ahead is not None:
            self._ahead.failed(step.id)  # what went ahead on this attempt is called back
        message = _describe(error)
        elapsed = (time.monotonic() - started) * 1000
        self._observe(step.id, number, elapsed, final=final, ok=False, error=message)
        if not final:
            return
        record = self.result.record(step.id)
        record.state, record.error = StepState.FAILED, message
        for descendant in sorted(nx.descendants(self.graph, step.id)):
            skipped = self.result.record(descendant)
            if skipped.state is not StepState.SKIPPED:
                reason = f"depends on '{step.id}', which failed: {message}"
                skipped.state, skipped.error = StepState.SKIPPED, reason
                self.journal.emit(StepSkipped(step=descendant, reason=reason))

    def _observe(
        self,
        step: str,
        attempt: int,
        duration_ms: float,
        *,
        final: bool,
        ok: bool,
        value: Any = None,
        error: str | None = None,
    ) -> None:
        duration = round(duration_ms, 3)
        self._observations.add(step, ok, duration, value, error, attempt)
        if self._heard:
            self.journal.emit(
                ObservationEvent(
                    step=step,
                    ok=ok,
                    value=value,
                    error=error,
                    attempt=attempt,
                    duration_ms=duration,
                    final=final,
                )
            )


def execute(
    graph: nx.DiGraph,
    tools: ToolRegistry,
    inputs: Mapping[str, Any],
    journal: JournalWriter | NullJournal,
    *,
    max_workers: int = 8,
    reused: Mapping[str, Any] | None = None,
    refused: Mapping[str, str] | None = None,
    backend: Backend | None = None,
) -> Execution:
    """Run a validated graph; `reused` values stand for steps that already ran."""
    return Scheduler(
        graph,
        tools,
        inputs,
        journal,
        max_workers=max_workers,
        reused=reused,
        refused=refused,
        backend=backend,
    ).run()
