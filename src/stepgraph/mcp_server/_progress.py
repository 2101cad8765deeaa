"""A run's progress as MCP `notifications/progress`: one note per step that settles.

Read from the journal events as they are written. The spec wants `progress` to grow
with every note: it counts settled steps over the whole run (repair rounds and the
cross-check included), and `total` is what is known so far: the steps settled plus the
steps of the plan last proposed.
"""

from __future__ import annotations

from dataclasses import dataclass

from stepgraph.journal import (
    JournalEvent,
    ObservationEvent,
    PlanEdited,
    PlanProposed,
    StepReused,
    StepSkipped,
)
from stepgraph.units import format_value

MAX_NOTE = 200  # characters of a value shown in a note; the result carries it whole


@dataclass(frozen=True)
class ProgressNote:
    """One progress notification: steps settled, of how many, and the step that just did."""

    progress: int
    total: int | None
    message: str


class StepProgress:
    """Turns a run's journal events into progress notes (one thread at a time: the journal's)."""

    def __init__(self) -> None:
        self.settled = 0
        self.total: int | None = None

    def see(self, event: JournalEvent) -> ProgressNote | None:
        """The note `event` makes, or None when it settles no step."""
        if isinstance(event, PlanProposed | PlanEdited):
            steps = event.plan.get("steps")
            if isinstance(steps, list):
                self.total = self.settled + len(steps)
            return None
        message = _settled(event)
        if message is None:
            return None
        self.settled += 1
        if self.total is not None and self.total < self.settled:
            self.total = self.settled
        return ProgressNote(self.settled, self.total, message)


def _settled(event: JournalEvent) -> str | None:
    step = event.step or "?"
    if isinstance(event, ObservationEvent):
        if not event.final:
            return None  # a retry follows
        if not event.ok:
            return f"step {step} failed: {event.error or 'no error text'}"[:MAX_NOTE]
        return f"step {step} = {format_value(event.value)}"[:MAX_NOTE]
    if isinstance(event, StepReused):
        return f"step {step} reused from the round before"
    if isinstance(event, StepSkipped):
        return f"step {step} skipped: {event.reason}"[:MAX_NOTE]
    return None
