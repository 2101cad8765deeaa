"""What one execution of a graph produced: a record per step, seen by outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from stepgraph.model import Observation


class StepState(StrEnum):
    """Where a step ended up in one execution."""

    STARTED = "started"  # launched; a final outcome follows
    DONE = "done"
    REUSED = "reused"  # its value came from an earlier round
    FAILED = "failed"
    SKIPPED = "skipped"  # an upstream step failed


@dataclass
class StepRecord:
    """One step's outcome: its state, its value, the arguments it ran with, its error."""

    step: str
    state: StepState = StepState.STARTED
    value: Any = None
    args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the final error, or why the step was skipped


@dataclass(frozen=True)
class _Views:
    """An execution's records seen by outcome, built in one pass."""

    values: dict[str, Any]
    failed: dict[str, str]
    skipped: dict[str, str]
    actions: dict[str, dict[str, Any]]
    reused: set[str]

    @classmethod
    def of(cls, records: dict[str, StepRecord]) -> _Views:
        values: dict[str, Any] = {}
        failed: dict[str, str] = {}
        skipped: dict[str, str] = {}
        reused: set[str] = set()
        for r in records.values():
            state = r.state
            if state is StepState.DONE or state is StepState.REUSED:
                values[r.step] = r.value
                if state is StepState.REUSED:
                    reused.add(r.step)
            elif state is StepState.FAILED:
                failed[r.step] = r.error or "failed"
            elif state is StepState.SKIPPED:
                skipped[r.step] = r.error or "skipped"
        actions = {r.step: r.args for r in records.values() if r.args}
        return cls(values, failed, skipped, actions, reused)


@dataclass
class Execution:
    """What a run of the graph produced: a record per step (plan order) and every attempt.

    The views (`values`, `failed`, ...) are built once and kept until a record is
    fetched through `record()` again: callers look them up once per step, and
    rebuilding them each time made a 10k-step run quadratic. They are shared, not
    copies: read them, do not change them.
    """

    records: dict[str, StepRecord] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    _cache: tuple[dict[str, StepRecord], _Views] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def record(self, step: str) -> StepRecord:
        """The step's record, created on first use (the caller may change it: views are reset)."""
        self._cache = None
        found = self.records.get(step)
        if found is None:
            found = self.records[step] = StepRecord(step)
        return found

    @property
    def _views(self) -> _Views:
        cache = self._cache
        if cache is None or cache[0] is not self.records:  # changed, or replaced wholesale
            cache = self._cache = (self.records, _Views.of(self.records))
        return cache[1]

    @property
    def values(self) -> dict[str, Any]:
        """Each step's value, for the steps that have one (ran now or reused)."""
        return self._views.values

    @property
    def failed(self) -> dict[str, str]:
        """Each failed step's final error."""
        return self._views.failed

    @property
    def skipped(self) -> dict[str, str]:
        """Each skipped step and why."""
        return self._views.skipped

    @property
    def actions(self) -> dict[str, dict[str, Any]]:
        """The arguments each step ran with (for verifiers: what to undo)."""
        return self._views.actions

    @property
    def reused(self) -> set[str]:
        """Steps whose value came from an earlier round."""
        return self._views.reused
