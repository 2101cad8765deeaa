"""What the live display knows about a run: recorded by the journal listener, read by the painter.

The listener runs on whichever thread emits an event (often the scheduler's), inside the
journal's lock, so recording must cost a few dict operations and nothing more: no text,
no tables, no terminal. Everything a frame needs is taken out in one `snapshot` under a
lock, by the painter thread.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from stepgraph.journal import (
    Action,
    JournalEvent,
    LLMRequest,
    ObservationEvent,
    PlanInvalid,
    PlanProposed,
    PlanRepair,
    StepReused,
    StepSkipped,
    Thought,
)

SETTLED = ("ok", "reused", "failed", "skipped")
# The events printed above the live region; thoughts, actions and verdicts are left to the
# plan table, the live summary and the verification table after the run.
PRINTED = (LLMRequest, PlanInvalid, PlanRepair, StepReused, ObservationEvent, StepSkipped)


def routine(event: JournalEvent) -> bool:
    """Lines that may be elided when many arrive at once: successes, kept and skipped steps."""
    return isinstance(event, StepReused | StepSkipped) or (
        isinstance(event, ObservationEvent) and event.ok
    )


@dataclass
class Snapshot:
    """One frame's worth of the board, copied out under its lock."""

    total: int
    counts: Counter[str]
    running: list[tuple[str, str]]  # (step, note), the first few in start order
    running_count: int
    to_print: list[JournalEvent]
    newly_settled: list[str]
    elapsed_s: float
    elided: int = 0  # routine lines past what one frame prints, counted, not kept


@dataclass
class ProgressBoard:
    """Step states and the events waiting to be printed; `record` is the journal listener."""

    states: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    _running: dict[str, None] = field(default_factory=dict)  # a dict keeps start order
    _to_print: deque[JournalEvent] = field(default_factory=deque)
    _settled: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _started: float = field(default_factory=time.monotonic)
    recorded: int = 0  # events seen, so a test can compare them with frames drawn
    # A frame prints this many routine lines and counts the rest: holding every success of
    # a 20,000-step run until the next frame cost the run a tenth of its time.
    routine_per_frame: int = 12
    _routine_held: int = 0
    _elided: int = 0

    def record(self, event: JournalEvent) -> None:
        """Note what an event changes; never draws (it runs on the emitting thread)."""
        with self._lock:
            self.recorded += 1
            if type(event) is Thought:  # a third of a run's events, and nothing to show
                return
            if isinstance(event, PlanProposed):
                self.states = {step["id"]: "waiting" for step in event.plan.get("steps", [])}
                self.notes.clear()
                self._running.clear()
                self._settled.clear()
                self.counts = Counter(waiting=len(self.states))
                self._to_print.append(event)  # the painter prints it as a table
                return
            if event.step is not None:
                self._track(event, event.step)
            if isinstance(event, PRINTED):
                if not routine(event):
                    self._to_print.append(event)
                elif self._routine_held < self.routine_per_frame:
                    self._routine_held += 1
                    self._to_print.append(event)
                else:
                    self._elided += 1

    def _track(self, event: JournalEvent, step: str) -> None:
        if isinstance(event, Action):
            self._move(step, "running")
            self.notes[step] = f"attempt {event.attempt}" if event.attempt > 1 else ""
        elif isinstance(event, ObservationEvent):
            self._move(step, "ok" if event.ok else ("failed" if event.final else "running"))
        elif isinstance(event, StepReused):
            self._move(step, "reused")
        elif isinstance(event, StepSkipped):
            self._move(step, "skipped")

    def _move(self, step: str, state: str) -> None:
        old = self.states.get(step)
        if old == state:
            return
        if old is not None:
            self.counts[old] -= 1
        self.counts[state] += 1
        self.states[step] = state
        if state == "running":
            self._running[step] = None
        else:
            self._running.pop(step, None)
        if state in SETTLED:
            self._settled.append(step)

    def snapshot(self, show_running: int) -> Snapshot:
        """Take what one frame needs: counts, the first running steps, events to print."""
        with self._lock:
            running: list[tuple[str, str]] = []
            for step in self._running:
                if len(running) == show_running:
                    break
                running.append((step, self.notes.get(step, "")))
            to_print = list(self._to_print)
            self._to_print.clear()
            elided, self._elided, self._routine_held = self._elided, 0, 0
            settled, self._settled = self._settled, []
            return Snapshot(
                total=len(self.states),
                counts=Counter(self.counts),
                running=running,
                running_count=len(self._running),
                to_print=to_print,
                newly_settled=settled,
                elapsed_s=time.monotonic() - self._started,
                elided=elided,
            )
