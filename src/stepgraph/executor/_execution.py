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


@dataclass(slots=True)  # one per step, held for the run: slots halve it
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


# One attempt as the scheduler notes it: step, ok, duration_ms, value, error, attempt.
_Row = tuple[str, bool, float, Any, str | None, int]
_make_observation = Observation.__pydantic_validator__.validate_python


class ObservationLog:
    """Each attempt noted as a tuple while the run lasts; Observations made at its end.

    A tuple is a third of a dict and a sixth of an Observation, and a run's peak is where
    the two coexist. Observations with the same fields given share one set of their names
    (216 bytes each otherwise): Observation is frozen, so nothing adds to it.
    """

    def __init__(self) -> None:
        self._rows: list[_Row] = []
        self._given: dict[frozenset[str], set[str]] = {}

    def add(
        self, step: str, ok: bool, duration_ms: float, value: Any, error: str | None, attempt: int
    ) -> None:
        """Note one attempt, in the order attempts end."""
        self._rows.append((step, ok, duration_ms, value, error, attempt))

    def observations(self) -> list[Observation]:
        """The attempts as Observations, in order; the log is empty afterwards."""
        rows, self._rows = self._rows, []
        rows.reverse()
        made: list[Observation] = []
        while rows:  # each tuple goes as its Observation comes
            step, ok, duration, value, error, attempt = rows.pop()
            fields: dict[str, Any] = {"step": step, "ok": ok, "duration_ms": duration}
            if value is not None:
                fields["value"] = value
            if error is not None:
                fields["error"] = error
            if attempt != 1:
                fields["attempt"] = attempt
            observation = _make_observation(fields)
            names = frozenset(fields)
            given = self._given.get(names)
            if given is None:
                given = self._given[names] = set(fields)
            object.__setattr__(observation, "__pydantic_fields_set__", given)
            made.append(observation)
        return made
