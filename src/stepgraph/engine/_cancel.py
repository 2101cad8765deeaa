"""Cancelling a run from another thread: it stops before its next model or tool call.

`Cancellation.check` is a journal guard, as the budget is: every model call is journaled
(`llm.request`) before it is sent and every tool call (`thought`, then `action`) before
its tool starts, so refusing those events stops the run with nothing half-made. Calls
already running finish and are journaled; the scheduler starts no more, and the run
ends with `run.cancelled` and `run.end` (status ``cancelled``).
"""

from __future__ import annotations

import threading

from stepgraph.exceptions import RunCancelledError
from stepgraph.journal import Action, JournalEvent, LLMRequest, RunCancelled, Thought

CANCELLED = "cancelled"  # the status of a cancelled run's `run.end`


class Cancellation:
    """A request to stop one run, made from any thread, seen by its journal's guard."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.who: str | None = None
        self.how = ""

    def cancel(self, who: str, how: str = "web") -> bool:
        """Ask the run to stop; False when it was asked already (the first request stands)."""
        with self._lock:
            if self.who is not None:
                return False
            self.how = how
            self.who = who
            return True

    @property
    def requested(self) -> bool:
        """Whether someone asked the run to stop."""
        return self.who is not None

    def check(self, event: JournalEvent) -> None:
        """The guard: once cancelled, refuse the next model or tool call."""
        who = self.who  # one read: most events pass here while nobody cancels
        if who is None:
            return
        if isinstance(event, LLMRequest):
            before = "model"
        elif isinstance(event, Thought | Action):
            before = "tool"
        else:
            return
        raise RunCancelledError(
            f"cancelled by {who} ({self.how}) before the next {before} call", who=who, before=before
        )


def cancelled_event(error: RunCancelledError, how: str) -> RunCancelled:
    """The journal event of a cancelled run."""
    return RunCancelled(who=error.who, how=how, before=error.before)
