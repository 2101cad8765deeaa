"""Submitting steps ahead of their inputs, to a backend that can wire futures together (Dask).

On threads a step starts once its inputs are back in the scheduler. A cluster can do
better: given the upstream steps' futures as dependencies, its own scheduler starts the
step on a worker the moment they finish, with no round trip through this process. The
scheduler still journals each step's thought and action (resolved here, from the same
values) once its inputs are back, and its observation after that, so the journal reads
as it does on threads.

Only steps that may safely run before their action is on disk go ahead: tools without
side effects (after a crash they may run again), upstream steps without `expect_unit`
(their value is converted here, so the worker would see another one), first attempts.
A step whose upstream attempt fails is called back and waits its turn as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Protocol, runtime_checkable

import networkx as nx

from stepgraph.model import Step
from stepgraph.tools import Tool, ToolRegistry


@runtime_checkable
class AheadBackend(Protocol):
    """A backend that can start a step once the futures it depends on have finished."""

    def submit_ahead(
        self, step: Step, tool: Tool, known: dict[str, Any], upstream: Mapping[str, Future[Any]]
    ) -> Future[Any] | None:
        """Submit `step` to run after `upstream`; `known` holds the values already here.

        None: this call cannot go ahead (the scheduler submits it later, as usual).
        """
        ...

    def flush(self) -> None:
        """Send what `submit_ahead` queued since the last flush (one message for the lot)."""
        ...

    def awaited(self, future: Future[Any]) -> None:
        """A step that is not ahead waits in this process for this call's value."""
        ...

    def cancel(self, future: Future[Any]) -> None:
        """Give up on a call."""
        ...


class Ahead:
    """Which steps are on the backend ahead of their inputs, and each step's current future."""

    def __init__(
        self,
        backend: AheadBackend,
        graph: nx.DiGraph,
        tools: ToolRegistry,
        scope: dict[str, Any],
    ) -> None:
        self._backend = backend
        self._graph = graph
        self._tools = tools
        self._scope = scope  # the scheduler's own: upstream values appear in it as they arrive
        self._futures: dict[str, Future[Any]] = {}  # step -> future of its live attempt
        self._ahead: dict[str, Future[Any]] = {}  # submitted, not launched yet
        self._fresh: list[str] = []  # steps given a future since the last `submit_more`

    def __contains__(self, step_id: str) -> bool:
        return step_id in self._ahead

    def take(self, step_id: str) -> Future[Any] | None:
        """The future of a step submitted ahead, now being launched (None: submit it now)."""
        return self._ahead.pop(step_id, None)

    def assigned(self, step_id: str, future: Future[Any]) -> None:
        """A launched attempt's future: the steps after it may go ahead on it."""
        self._futures[step_id] = future
        self._fresh.append(step_id)

    def failed(self, step_id: str) -> None:
        """An attempt failed: what went ahead on it would fail too; call it back."""
        if self._futures.pop(step_id, None) is None or not self._ahead:
            return
        for descendant in nx.descendants(self._graph, step_id):
            future = self._ahead.pop(descendant, None)
            if future is not None:
                self._futures.pop(descendant, None)
                self._backend.cancel(future)

    def cancel_all(self) -> None:
        """The run is over: nothing submitted ahead is still wanted."""
        for future in self._ahead.values():
            self._backend.cancel(future)
        self._ahead.clear()

    def submit_more(self, waiting: Mapping[str, int], settled: Callable[[str], bool]) -> None:
        """Submit every step whose upstream steps all have a value here or a live future.

        Then each step given a future here is `awaited` if a successor still cannot go
        ahead: that successor waits in this process for its value, which the backend
        then fetches without waiting to batch it with others.
        """
        graph, scope = self._graph, self._scope

        def waits(successor: str) -> bool:  # not on the backend, not ready, not settled
            return not (
                successor in self._futures
                or successor in scope
                or settled(successor)
                or waiting[successor] == 0  # ready: it is launched as usual
            )

        given: list[str] = []
        while self._fresh:
            step_id = self._fresh.pop()
            given.append(step_id)
            if graph.nodes[step_id]["step"].expect_unit is not None:
                continue  # its value is converted here; a worker would see another
            for successor in graph.successors(step_id):
                if waits(successor):
                    self._try(successor)
        for step_id in given:  # after the cascade: a successor may have gone ahead since
            future = self._futures.get(step_id)
            if future is not None and any(map(waits, graph.successors(step_id))):
                self._backend.awaited(future)
        self._backend.flush()

    def _try(self, step_id: str) -> None:
        step: Step = self._graph.nodes[step_id]["step"]
        tool = self._tools.get(step.tool)
        if tool.side_effects:  # its action must be on disk before it can start
            return
        known: dict[str, Any] = {"inputs": self._scope["inputs"]}
        upstream: dict[str, Future[Any]] = {}
        for name in self._graph.predecessors(step_id):
            if name in self._scope:
                known[name] = self._scope[name]
                continue
            future = self._futures.get(name)
            if future is None or self._graph.nodes[name]["step"].expect_unit is not None:
                return
            upstream[name] = future
        future = self._backend.submit_ahead(step, tool, known, upstream)
        if future is not None:
            self._ahead[step_id] = future
            self.assigned(step_id, future)
