"""A journal read back as a run: its task, its plans, its observations, where it stopped."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

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
from stepgraph.journal._reader import Journal, JournalReader, LineParser
from stepgraph.model import Step, StepGraph, Task
from stepgraph.values import decode_value


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
        """Read a journal that begins with a complete `run.start`: every event, as `read`."""
        return cls.read(path, keep=lambda _: True)

    @classmethod
    def from_journal(cls, journal: Journal) -> Recording:
        """The recording of events already read whole."""
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

    @classmethod
    def read(
        cls,
        path: Path,
        keep: Callable[[JournalEvent], bool],
        kinds: Collection[str] | None = None,
    ) -> Recording:
        """Read a journal in one pass, holding only what rebuilds the run.

        The task and the plans are built straight from their lines' text (their events
        keep no copy: `definition` is None, `plan` is empty); `keep` sees every other event
        and says whether the recording holds it. A task's own plan, proposed as it is,
        is held once. With `kinds`, the lines of other kinds (but the start and the plans)
        are not even parsed, and so not checked to belong to the run (see `JournalReader`).
        """
        builder = _Builder()
        wanted = None if kinds is None else {*kinds, *_BUILT}
        reader = JournalReader(path, kinds=wanted, parsers=builder.parsers())
        kept: list[JournalEvent] = []
        for event in reader:
            if builder.made(event):
                kept.append(event)
            elif isinstance(event, RunStart | PlanProposed | PlanEdited):
                kept.append(builder.fallback(event, path))  # a line the parsers refused: as before
            elif keep(event):
                kept.append(event)
        starts = [e for e in kept if isinstance(e, RunStart)]
        if not starts or builder.task is None:
            raise JournalError(
                "no run.start with the task definition: cannot rebuild the run", path=str(path)
            )
        start = starts[0]
        return cls(
            journal=Journal(path, kept, reader.problems),
            start=start,
            task=builder.task,
            inputs={k: decode_value(v) for k, v in start.inputs.items()},
            plans=builder.plans,
        )

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


class _StartLine(BaseModel):
    """A `run.start` line whose task is built from the text (the other fields: extras)."""

    model_config = ConfigDict(extra="allow")

    event: Literal["run.start"]
    definition: Task | None = None


class _PlanLine(BaseModel):
    """A `plan.proposed` or `plan.edited` line whose plan is built from the text."""

    model_config = ConfigDict(extra="allow")

    event: Literal["plan.proposed", "plan.edited"]
    plan: StepGraph


def _without_plan(kind: type[PlanProposed | PlanEdited]) -> type[BaseModel]:
    """A model of the kind's lines that reads every field but the plan (not even into dicts)."""
    fields: dict[str, Any] = {
        name: (info.annotation, info) for name, info in kind.model_fields.items() if name != "plan"
    }
    return create_model(f"_{kind.__name__}Head", __config__=ConfigDict(extra="ignore"), **fields)


_BUILT = frozenset(
    {"run.start", "plan.proposed", "plan.edited"}
)  # always read: they rebuild the run
_PLAN_EVENT: TypeAdapter[PlanProposed | PlanEdited] = TypeAdapter(PlanProposed | PlanEdited)
_HEADS = {"plan.proposed": _without_plan(PlanProposed), "plan.edited": _without_plan(PlanEdited)}


class _Builder:
    """Builds the task and the plans of a run while its journal is read."""

    def __init__(self) -> None:
        self.task: Task | None = None  # the first run.start's
        self.plans: dict[str, StepGraph] = {}  # by the hash their events recorded
        self._made: set[int] = set()  # ids of the events built here

    def start(self, raw: bytes) -> JournalEvent:
        """The `run.start` event, without its definition; the task is kept here."""
        line = _StartLine.model_validate_json(raw)
        event = RunStart.model_validate({**(line.model_extra or {}), "event": line.event})
        if self.task is None and line.definition is not None:
            self.task = line.definition
            if self.task.plan is not None:
                _unmark_defaults(self.task.plan)
        self._made.add(id(event))
        return event

    def parsers(self) -> dict[str, LineParser]:
        """The reader's parsers for the lines this builder builds from their text."""
        return {
            "run.start": self.start,
            **{kind: partial(self.plan, head) for kind, head in _HEADS.items()},
        }

    def plan(self, head_model: type[BaseModel], raw: bytes) -> JournalEvent:
        """The plan's event, with an empty `plan`; the plan is kept here.

        A proposal of the task's own plan (source "task") is by construction the plan of
        the run's definition (`RunSession` dumps the one task for both), built with the
        task: the line's copy is not built again. (A record edited so that the two differ
        still replays the definition's; the proposal's recorded hash then differs.)
        """
        head = head_model.model_validate_json(raw).model_dump()
        event = _PLAN_EVENT.validate_python({**head, "plan": {}})
        own = self.task.plan if self.task is not None else None
        if own is not None and isinstance(event, PlanProposed) and event.source == "task":
            self.plans[event.plan_hash] = own
        else:
            self.plans[event.plan_hash] = _unmark_defaults(_PlanLine.model_validate_json(raw).plan)
        self._made.add(id(event))
        return event

    def made(self, event: JournalEvent) -> bool:
        """Whether the event was built here (its task or plan is already kept)."""
        return id(event) in self._made

    def fallback(self, event: RunStart | PlanProposed | PlanEdited, path: Path) -> JournalEvent:
        """An event its parser refused, read as a dict: its task or plan is built from that.

        A definition or a plan that is no valid task or plan (a journal edited by hand, or
        written by a stepgraph whose models differ) is a `JournalError` naming the event.
        """
        try:
            if isinstance(event, RunStart):
                if self.task is None and event.definition is not None:
                    self.task = Task.model_validate(event.definition)
                    if self.task.plan is not None:
                        _unmark_defaults(self.task.plan)
                event.definition = None
            else:
                plan = _unmark_defaults(StepGraph.model_validate(event.plan))
                self._keep(event.plan_hash, plan)
                event.plan = {}
        except ValidationError as e:
            what = "task definition" if isinstance(event, RunStart) else "plan"
            first = e.errors()[0]
            where = ".".join(map(str, first["loc"])) or "(top)"
            raise JournalError(
                f"the {what} of {event.event} (seq {event.seq}) cannot be rebuilt: "
                f"{_errors(e.error_count())}, first at {where}: {first['msg']}",
                path=str(path),
            ) from e
        return event

    def _keep(self, plan_hash: str, plan: StepGraph) -> None:
        own = self.task.plan if self.task is not None else None
        self.plans[plan_hash] = own if own is not None and plan == own else plan


_STEP_DEFAULTS = {
    name: info.get_default(call_default_factory=True) for name, info in Step.model_fields.items()
}


def _unmark_defaults(plan: StepGraph) -> StepGraph:
    """Mark as set only the fields of each step that differ from their defaults.

    The journal writes every field, so a step read back from it has all eight in
    `model_fields_set`: a set of eight names is 728 bytes, half of what the step costs.
    The steps' values do not change, nor their dump or the plan's hash; nothing reads
    which fields of a step were given. Steps given the same fields share one set of their
    names (a step is frozen: nothing adds to it).
    """
    shared: dict[frozenset[str], set[str]] = {}
    for step in plan.steps:
        given = frozenset(
            name for name in step.model_fields_set if getattr(step, name) != _STEP_DEFAULTS[name]
        )
        names = shared.get(given)
        if names is None:
            names = shared[given] = set(given)
        object.__setattr__(step, "__pydantic_fields_set__", names)
    return plan


def _errors(count: int) -> str:
    return f"{count} error" if count == 1 else f"{count} errors"


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
