"""A journal read back as a run: its task, its plans, its observations, where it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepgraph.exceptions import JournalError
from stepgraph.journal._events import (
    Action,
    JournalEvent,
    LLMResponse,
    ObservationEvent,
    PlanApproved,
    PlanEdited,
    PlanProposed,
    RunEnd,
    RunStart,
    StepReused,
)
from stepgraph.journal._reader import Journal, read_journal
from stepgraph.model import StepGraph, Task
from stepgraph.units import decode_value


@dataclass
class Prior:
    """What a resumed run already has: the approved plan and the steps that settled."""

    plan: StepGraph
    values: dict[str, Any] = field(default_factory=dict)
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    round: int = 0


@dataclass
class Recording:
    """What a journal says about one run."""

    journal: Journal
    start: RunStart
    task: Task
    inputs: dict[str, Any]
    plans: dict[str, StepGraph] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Recording:
        """Read a journal that begins with a complete `run.start`."""
        return cls.from_journal(read_journal(path))

    @classmethod
    def from_journal(cls, journal: Journal) -> Recording:
        """The recording of events already read (a replay keeps only the ones it needs)."""
        path = journal.path
        starts = [e for e in journal.events if isinstance(e, RunStart)]
        if not starts or starts[0].definition is None:
            raise JournalError(
                "no run.start with the task definition: cannot rebuild the run", path=str(path)
            )
        start = starts[0]
        recording = cls(
            journal=journal,
            start=start,
            task=Task.model_validate(start.definition),
            inputs={k: decode_value(v) for k, v in start.inputs.items()},
        )
        for event in journal.events:
            if isinstance(event, PlanProposed | PlanEdited):
                plan = StepGraph.model_validate(event.plan)
                recording.plans[plan.plan_hash()] = plan
        return recording

    @property
    def run_id(self) -> str:
        """The recorded run's id."""
        return self.start.run_id

    @property
    def base_dir(self) -> Path:
        """Where the task's plugins are found."""
        return Path(self.start.base_dir or ".")

    @property
    def last_seq(self) -> int:
        """The seq of the last event on disk."""
        return max((e.seq for e in self.journal.events), default=0)

    @property
    def end_status(self) -> str | None:
        """How the run ended, or None if it was interrupted."""
        ends = [event for event in self.journal.events if isinstance(event, RunEnd)]
        return ends[-1].status if ends else None

    def llm_texts(self) -> list[str]:
        """The model's answers, in order."""
        return [e.text for e in self.journal.events if isinstance(e, LLMResponse)]

    def prior(self) -> tuple[Prior | None, list[str]]:
        """State after the last approval: settled steps, and steps that started but never ended."""
        events = self.journal.events
        approvals = [(i, e) for i, e in enumerate(events) if isinstance(e, PlanApproved)]
        if not approvals:
            return None, []
        index, approved = approvals[-1]
        plan = self.plans[approved.plan_hash]
        rounds = sum(e.event == "plan.repair" for e in self.journal.events[:index])
        prior = Prior(plan=plan, round=rounds)
        started: list[str] = []
        for event in self.journal.events[index + 1 :]:
            _settle(prior, started, event)
        in_flight = [
            step for step in started if step not in prior.values and step not in prior.failed
        ]
        return prior, list(dict.fromkeys(in_flight))


def _settle(prior: Prior, started: list[str], event: JournalEvent) -> None:
    step = event.step
    if step is None:
        return
    if isinstance(event, Action):
        started.append(step)
        prior.actions[step] = decode_value(event.args)
    elif isinstance(event, StepReused):
        prior.values[step] = decode_value(event.value)
    elif isinstance(event, ObservationEvent) and event.final:
        if event.ok:
            prior.values[step] = decode_value(event.value)
        else:
            prior.failed[step] = event.error or "failed"
