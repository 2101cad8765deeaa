"""Typed journal events: what each line of a journal holds."""

from __future__ import annotations

import functools
import operator
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
    definition: dict[str, Any] | None = None
    base_dir: str | None = None
    tools: dict[str, str] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)


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


class LLMRequest(JournalEvent):
    """A request to the model: what for, which attempt, and the full messages."""

    event: Literal["llm.request"]
    purpose: str
    attempt: int
    model: str
    messages: list[dict[str, str]]


class LLMResponse(JournalEvent):
    """The model's answer with its cost: full text, token usage, latency, SDK retries."""

    event: Literal["llm.response"]
    purpose: str
    attempt: int
    text: str
    usage: dict[str, int] = Field(default_factory=dict)
    latency_ms: float
    mode: str
    retries: int = 0


class PlanRepair(JournalEvent):
    """A repair round: the failures that caused it and the diff of the graph."""

    event: Literal["plan.repair"]
    round: int
    failures: list[str]
    diff: dict[str, Any]
    plan_hash: str


class StepReused(JournalEvent):
    """A step whose value came from an earlier round instead of running again."""

    event: Literal["step.reused"]
    value: Any = None


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


_TYPED: tuple[type[JournalEvent], ...] = (
    RunStart,
    LLMRequest,
    LLMResponse,
    PlanProposed,
    PlanInvalid,
    PlanApproved,
    PlanRepair,
    Thought,
    Action,
    ObservationEvent,
    StepReused,
    StepSkipped,
    CheckEvent,
    AnswerEvent,
    RunEnd,
)
_KNOWN: dict[str, type[JournalEvent]] = {
    cls.model_fields["event"].annotation.__args__[0]: cls  # type: ignore[union-attr]
    for cls in _TYPED
}


def _kind(data: Any) -> str:
    event = data.get("event") if isinstance(data, dict) else getattr(data, "event", None)
    return event if event in _KNOWN else "other"


# One tagged union of every typed event, with the base class for kinds we do not know.
AnyEvent: Any = Annotated[
    functools.reduce(
        operator.or_,
        [Annotated[cls, Tag(kind)] for kind, cls in _KNOWN.items()],
        Annotated[JournalEvent, Tag("other")],
    ),
    Discriminator(_kind),
]
