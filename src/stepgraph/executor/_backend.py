"""Backends: where a step's tool call runs. Scheduling, references and the journal stay ours."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from stepgraph.exceptions import NonRetryableError, StepgraphError
from stepgraph.executor._pool import WorkerPool
from stepgraph.model import Step
from stepgraph.references import resolve
from stepgraph.tools import Tool
from stepgraph.tools.expression import bind


def resolve_args(tool: Tool, args: dict[str, Any], scope: Mapping[str, Any]) -> dict[str, Any]:
    """A step's arguments with its references replaced by upstream values (`ReferenceError_`).

    Expression arguments are bound, not pasted: the values travel beside the text.
    Run by the scheduler, and on a Dask worker for a step submitted ahead of its inputs.
    Arguments without references come back as the step's own dict, not a copy: a run
    keeps each step's arguments to its end (read them, do not change them).
    """
    resolved = {
        name: bind(value, scope)
        if name in tool.expression_args and isinstance(value, str)
        else resolve(value, scope)
        for name, value in args.items()
    }
    if all(resolved[name] is value for name, value in args.items()):
        return args
    return resolved


@dataclass(frozen=True)
class ToolCall:
    """One attempt of one step: the tool and its resolved arguments."""

    step: Step
    attempt: int
    tool: Tool
    args: dict[str, Any]

    def validated_args(self) -> dict[str, Any]:
        """The arguments after the tool's schema; a mismatch is not worth retrying."""
        try:
            return self.tool.validate_args(self.args)
        except StepgraphError as e:
            raise NonRetryableError(str(e), step=self.step.id) from e

    def run(self) -> Any:
        """Call a sync tool."""
        return self.tool.func(**self.validated_args())

    async def run_async(self) -> Any:
        """Call an async tool."""
        return await self.tool.func(**self.validated_args())


class Backend(Protocol):
    """Runs tool calls and hands back futures; the scheduler waits on them."""

    def submit(self, call: ToolCall) -> Future[Any]:
        """Start the call; the future holds its value or its exception."""
        ...

    def cancel(self, future: Future[Any]) -> None:
        """Give up on a call whose step timed out."""
        ...

    def shutdown(self) -> None:
        """Release workers once the run is over."""
        ...


@runtime_checkable
class ThreadLimited(Protocol):
    """A backend whose sync calls past a thread limit wait in its own queue.

    The scheduler gives such a backend more calls than it has threads while calls are
    quick, so a worker that finishes one starts the next without a round trip.
    """

    def limit_threads(self, count: int) -> None:
        """Run at most `count` sync calls at once; calls past it wait in the backend's queue."""
        ...


class ThreadBackend:
    """Sync tools on daemon worker threads, async tools on one shared event loop."""

    def __init__(self) -> None:
        self._pool = WorkerPool()

    def limit_threads(self, count: int) -> None:
        """Run at most `count` sync calls at once; calls past it wait in the pool's queue."""
        self._pool.max_threads = count

    def submit(self, call: ToolCall) -> Future[Any]:
        """Run the call on the pool."""
        if call.tool.is_async:
            return self._pool.submit_async(call.run_async)
        return self._pool.submit(call.run)

    def cancel(self, future: Future[Any]) -> None:
        """Cancel a coroutine or a waiting call; a running sync call is abandoned on its thread."""
        self._pool.abandon(future)

    def shutdown(self) -> None:
        """Stop the pool's idle workers and its loop."""
        self._pool.shutdown()
