"""Typed journal events: what each line of a journal holds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class JournalEvent(BaseModel):
    """Fields every event has; an event of a kind this version does not know keeps its data."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    seq: int
    ts: str
    event: str
    step: str | None = None


class RunStart(JournalEvent):
    """The run began: task, goal, inputs and journal format version."""

    event: Literal["run.start"]
    task: str
    goal: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    version: int


class PlanProposed(JournalEvent):
    """A plan was put forward (from the task file or a planner)."""

    event: Literal["plan.proposed"]
    source: str
    plan: dict[str, Any]
    plan_hash: str


class PlanApproved(JournalEvent):
    """A plan was approved to run: by whom, how, and which plan."""

    event: Literal["plan.approved"]
    who: str
    how: str
    plan_hash: str


class PlanInvalid(JournalEvent):
    """The static checks rejected a plan."""

    event: Literal["plan.invalid"]
    problems: list[str]


class Thought(JournalEvent):
    """Why a step is about to run."""

    event: Literal["thought"]
    text: str


class Action(JournalEvent):
    """A tool call with its resolved arguments."""

    event: Literal["action"]
    tool: str
    args: dict[str, Any]
    attempt: int


class ObservationEvent(JournalEvent):
    """What one attempt of a step returned or raised."""

    event: Literal["observation"]
    ok: bool
    value: Any = None
    error: str | None = None
    attempt: int
    duration_ms: float
    final: bool


class StepSkipped(JournalEvent):
    """A step that did not run, and why."""

    event: Literal["step.skipped"]
    reason: str


class CheckEvent(JournalEvent):
    """One verdict of the reflection stage."""

    event: Literal["check"]
    kind: str
    passed: bool
    description: str
    values: dict[str, str] = Field(default_factory=dict)
    tolerance: float | None = None


class AnswerEvent(JournalEvent):
    """The rendered answer."""

    event: Literal["answer"]
    text: str


class RunEnd(JournalEvent):
    """The run finished, with its status."""

    event: Literal["run.end"]
    status: str
    duration_ms: float


_KNOWN: dict[str, type[JournalEvent]] = {
    cls.model_fields["event"].annotation.__args__[0]: cls  # type: ignore[union-attr]
    for cls in (
        RunStart,
        PlanProposed,
        PlanApproved,
        PlanInvalid,
        Thought,
        Action,
        ObservationEvent,
        StepSkipped,
        CheckEvent,
        AnswerEvent,
        RunEnd,
    )
}


def _kind(data: Any) -> str:
    event = data.get("event") if isinstance(data, dict) else getattr(data, "event", None)
    return event if event in _KNOWN else "other"


AnyEvent = Annotated[
    Annotated[RunStart, Tag("run.start")]
    | Annotated[PlanProposed, Tag("plan.proposed")]
    | Annotated[PlanApproved, Tag("plan.approved")]
    | Annotated[PlanInvalid, Tag("plan.invalid")]
    | Annotated[Thought, Tag("thought")]
    | Annotated[Action, Tag("action")]
    | Annotated[ObservationEvent, Tag("observation")]
    | Annotated[StepSkipped, Tag("step.skipped")]
    | Annotated[CheckEvent, Tag("check")]
    | Annotated[AnswerEvent, Tag("answer")]
    | Annotated[RunEnd, Tag("run.end")]
    | Annotated[JournalEvent, Tag("other")],
    Discriminator(_kind),
]
