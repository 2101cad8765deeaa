"""Typed journal events: what each line of a journal holds."""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from stepgraph.model import Budget


class JournalEvent(BaseModel):
    """Fields every event has; an event of a kind this version does not know keeps its data.

    Events are built by the stage that has something to say and handed to
    `JournalWriter.emit`, which fills in `run_id`, `seq` and `ts`.
    """

    model_config = ConfigDict(extra="allow")

    run_id: str = ""
    seq: int = 0
    ts: str = ""
    event: str
    step: str | None = None


class RecordedConfig(BaseModel):
    """What a run's engine was set to, as `run.start` records it for replay and resume.

    Not the engine's `RunConfig` (the journal never imports the engine, and that holds
    the planner and the backend themselves): the settings a replay needs to build them
    again. Keys of a later version are kept, not refused.
    """

    model_config = ConfigDict(extra="allow")

    repair_rounds: int = Field(2, description="Repair rounds the run was allowed.")
    plan_retries: int | None = Field(None, description="The planner's tries per plan.")
    plan_syntax: str | None = Field(None, description="'json' or 'lines' plans.")
    read_goal: bool | None = Field(None, description="Whether the goal's quantities were read.")
    reason_first: bool | None = Field(
        None, description="Whether the model reasoned in words before its plan."
    )
    cross_check: bool = Field(False, description="Whether a second plan had to agree.")
    numbered_names: bool | None = Field(
        None, description="Whether read counts and money were named with their numbers."
    )
    cross_route: str | None = Field(
        None, description="The cross-check's second route: 'plan', or 'worked' (in words)."
    )
    retry_with: str | None = Field(
        None, description="A refused plan's next attempt: 'feedback' or 'fresh'."
    )
    afresh_on_disagreement: bool | None = Field(
        None, description="Whether the worked answer's disagreement asked for a fresh plan."
    )
    program_plan: bool | None = Field(
        None, description="Whether a goal with no valid plan was asked for a program."
    )
    program_first: bool | None = Field(
        None, description="Whether a program was asked for before any plan."
    )
    program_only: bool | Literal["auto"] | None = Field(
        None,
        description="Whether programs were asked for and no plan (auto: where the words "
        "check the answer).",
    )
    second_words: bool | None = Field(
        None, description="Whether disagreeing words were asked for once more."
    )
    reuse_repeats: bool | None = Field(
        None,
        description="Whether a request the run had sent before, sampled the same, took its "
        "earlier answer instead of asking again (absent: older records, which asked again).",
    )
    program_tries: int | None = Field(
        None,
        ge=1,
        le=5,  # as the setting allows: a record cannot ask a replay for more programs
        description="How many programs a goal got with programs only (absent: older "
        "records, which asked up to three).",
    )
    examples: Literal["first", "nearest"] | None = Field(
        None,
        description="Plans in lines: which worked examples were shown, the first ones or "
        "the goal's nearest (absent: older records, the first ones).",
    )
    stop_loops: bool | None = Field(
        None, description="Whether an answer that looped was stopped while it streamed."
    )
    memory: bool = Field(False, description="Whether plan memory was on.")
    stream: bool = Field(False, description="Whether the first plan was streamed into execution.")
    approval: str | None = Field(None, description="The policy asked for (None: the task's).")


class RunLink(BaseModel):
    """The run another run replays or forks: its id, its journal, and how it is run again."""

    run_id: str = Field(description="The source run's id.")
    journal: str = Field(description="The source run's journal.")
    from_step: str | None = Field(None, description="A fork: the step it runs again from.")
    live: bool = Field(False, description="Whether tools ran again instead of the record.")


class RunStart(JournalEvent):
    """The run began: task, goal, inputs and journal format version."""

    event: Literal["run.start"] = "run.start"
    task: str
    goal: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    version: int
    definition: dict[str, Any] | None = None
    base_dir: str | None = None
    tools: dict[str, str] = Field(default_factory=dict)
    mcp_tools: dict[str, dict[str, Any]] = Field(default_factory=dict)  # replayed without servers
    # Each tool's schema and code as approvals bind them: a resume refuses changed code.
    tool_prints: dict[str, str] = Field(default_factory=dict)
    config: RecordedConfig = Field(default_factory=RecordedConfig)
    budget: Budget | None = Field(None, description="The run's limits, when it had any.")
    replay_of: RunLink | None = Field(None, description="The run this one replays.")
    parent: RunLink | None = Field(None, description="The run this one forks.")


class PlanProposed(JournalEvent):
    """A plan was put forward (from the task file, a plan file or a planner)."""

    event: Literal["plan.proposed"] = "plan.proposed"
    source: str
    plan: dict[str, Any]
    plan_hash: str
    purpose: str | None = None
    attempt: int | None = None
    repairs: list[str] = Field(default_factory=list)


class PlanRecalled(JournalEvent):
    """A verified plan of a goal of the same shape was taken from memory, re-bound to this goal.

    With `refused` set, the recalled plan did not pass the checks a planner's plan passes,
    and the planner was asked instead; otherwise a `plan.proposed` (source "memory") follows.
    """

    event: Literal["plan.recalled"] = "plan.recalled"
    from_run: str = Field(description="The verified run whose plan was taken.")
    from_journal: str = Field(description="That run's journal.")
    from_goal: str = Field(description="The goal that run answered.")
    rebound: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Each input re-read from this goal: name -> {was, now, quote}.",
    )
    plan_hash: str | None = Field(None, description="The re-bound plan's hash (None: refused).")
    refused: list[str] = Field(default_factory=list, description="Why it was not used.")


class PlanExamples(JournalEvent):
    """The worked examples the planner was shown in place of its fixed ones: remembered plans."""

    event: Literal["plan.examples"] = "plan.examples"
    examples: list[dict[str, Any]] = Field(
        description="Each a remembered run: run_id, goal and plan, as the prompt showed them."
    )


class _Decision(JournalEvent):
    """Who decided about a plan, how, when, and which plan."""

    who: str
    how: str
    when: str = ""
    plan_hash: str
    # The plan with its resolved task (inputs, answer template, tools' schema and code, MCP
    # servers): what was decided about. None in journals written before it existed.
    approval_hash: str | None = None
    # An approval's HMAC by the approving machine's key: only a signed one is reused by a
    # fork or a live replay (a journal line is easy to write by hand).
    signature: str | None = None


class PlanApproved(_Decision):
    """A plan was approved to run."""

    event: Literal["plan.approved"] = "plan.approved"


class PlanRejected(_Decision):
    """A plan was rejected."""

    event: Literal["plan.rejected"] = "plan.rejected"


class PlanEdited(_Decision):
    """A person edited the plan before approving it: the new plan and the diff."""

    event: Literal["plan.edited"] = "plan.edited"
    plan_hash_before: str
    plan: dict[str, Any]
    diff: dict[str, Any]


class PlanRevise(JournalEvent):
    """A person asked the planner to revise the plan."""

    event: Literal["plan.revise"] = "plan.revise"
    who: str
    comment: str


class PlanAwaiting(JournalEvent):
    """The plan waits for a person who is not at a terminal: the run is parked until decided."""

    event: Literal["plan.awaiting"] = "plan.awaiting"
    plan_hash: str
    approval_hash: str | None = None  # what a decision about it binds (see `plan.approved`)
    side_effects: list[str] = Field(default_factory=list)
    critical_path: list[str] = Field(default_factory=list)


class RunResume(JournalEvent):
    """An interrupted run continues: what had settled and what runs again."""

    event: Literal["run.resume"] = "run.resume"
    after_seq: int
    settled: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    rerun: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    budget: Budget | None = Field(None, description="The limits from here on, when any.")


class PlanInvalid(JournalEvent):
    """The static checks rejected a plan."""

    event: Literal["plan.invalid"] = "plan.invalid"
    problems: list[str]
    purpose: str | None = None
    attempt: int | None = None
    repairs: list[str] = Field(default_factory=list)


class LLMRequest(JournalEvent):
    """A request to the model: what for, which attempt, and the full messages."""

    event: Literal["llm.request"] = "llm.request"
    purpose: str
    attempt: int
    model: str
    messages: list[dict[str, str]]
    # How the request went out, where the client says so (the OpenAI-compatible client
    # does; a scripted or replayed model does not); None in journals from before them.
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    server_address: str | None = None  # the endpoint's host, never its path or credentials
    server_port: int | None = None


STREAMED_PIECES = "streamed_pieces"
"""A usage key: the server told no counts, so the engine counted the pieces it streamed.

Each piece is at least one token (OpenAI and llama.cpp's server stream one a piece), so its
``completion_tokens`` are exact or low; the prompt's tokens are unknown.
"""


class LLMResponse(JournalEvent):
    """The model's answer with its cost: full text, token usage, latency, SDK retries."""

    event: Literal["llm.response"] = "llm.response"
    purpose: str
    attempt: int
    text: str
    usage: dict[str, int] = Field(default_factory=dict)
    latency_ms: float
    mode: str
    retries: int = 0
    stream: str | None = (
        None  # streamed: "complete", "stopped" (a step was invalid), "not streamed"
    )
    model: str | None = None  # the model asked (older journals have it too)
    # What the endpoint said of its answer, where it did; None in journals from before them.
    response_id: str | None = None
    response_model: str | None = None  # the model that answered, as the endpoint names it
    finish_reasons: list[str] = Field(default_factory=list)


class LLMUnused(JournalEvent):
    """A model call made ahead of need and not used: what it cost, so no token goes unsaid.

    The worked answer is asked while the plan is made (the server answers both at once);
    when no plan verifies, it is never compared, and this is all the journal keeps of it.
    Replays ask for it again only where the run used it, so it is not compared.
    """

    event: Literal["llm.unused"] = "llm.unused"
    purpose: str
    text: str = ""  # what had come back when it was stopped
    # A stopped stream's usage is its pieces, counted (`STREAMED_PIECES` says so).
    usage: dict[str, int] = Field(default_factory=dict)
    latency_ms: float | None = None  # None: no answer came back at all
    model: str | None = None
    reason: str


class LLMReused(JournalEvent):
    """A request the run had sent before, word for word and sampled the same: not sent again.

    A greedy or seeded model answers the same request the same way; a repair round's program
    request repeated the first round's (held-out GSM8K: 25 repeats in 22 of 100 questions,
    each waiting for an answer the run had). The earlier answer is used again, no model is
    asked, nothing is spent; `asked_attempt` is the attempt whose answer it was. A replay
    reuses it the same way and does not ask its recorded model for it.
    """

    event: Literal["llm.reused"] = "llm.reused"
    purpose: str
    attempt: int
    asked_attempt: int
    text: str


class PlanRepair(JournalEvent):
    """A repair round: the failures that caused it and the diff of the graph."""

    event: Literal["plan.repair"] = "plan.repair"
    round: int
    failures: list[str]
    diff: dict[str, Any]
    plan_hash: str


class StepReused(JournalEvent):
    """A step whose value came from an earlier round instead of running again."""

    event: Literal["step.reused"] = "step.reused"
    value: Any = None


class Thought(JournalEvent):
    """Why a step is about to run."""

    event: Literal["thought"] = "thought"
    text: str


class Action(JournalEvent):
    """A tool call with its resolved arguments."""

    event: Literal["action"] = "action"
    tool: str
    args: dict[str, Any]
    attempt: int


class ObservationEvent(JournalEvent):
    """What one attempt of a step returned or raised."""

    event: Literal["observation"] = "observation"
    ok: bool
    value: Any = None
    error: str | None = None
    attempt: int
    duration_ms: float
    final: bool


class StepSkipped(JournalEvent):
    """A step that did not run, and why."""

    event: Literal["step.skipped"] = "step.skipped"
    reason: str


class CheckEvent(JournalEvent):
    """One verdict of the reflection stage."""

    event: Literal["check"] = "check"
    kind: str
    passed: bool
    description: str
    values: dict[str, str] = Field(default_factory=dict)
    tolerance: float | None = None


class AnswerEvent(JournalEvent):
    """The rendered answer."""

    event: Literal["answer"] = "answer"
    text: str
    sources: dict[str, str] = Field(
        default_factory=dict, description="Each number of the answer -> the step it comes from."
    )


class BudgetExceeded(JournalEvent):
    """The run stopped before a call that would pass a budget limit; it can be resumed."""

    event: Literal["budget.exceeded"] = "budget.exceeded"
    limit: str
    allowed: float
    used: dict[str, Any] = Field(default_factory=dict)
    before: str  # the call that was not made: "model" or "tool"


class RunCancelled(JournalEvent):
    """Someone cancelled the run: it stopped before its next model or tool call."""

    event: Literal["run.cancelled"] = "run.cancelled"
    who: str = Field(description="Who cancelled it, as they said.")
    how: str = Field(description="How the request came: web (the page or the API), ...")
    before: str = Field(description="The call that was not made: model or tool.")


class RunEnd(JournalEvent):
    """The run finished, with its status."""

    event: Literal["run.end"] = "run.end"
    status: str
    duration_ms: float
    reason: str | None = None  # why a run ended early: the error, with its kind
    # A verified run's HMAC (this machine's key) of its run id, goal, plan hash and tool
    # fingerprints: plan memory recalls only sealed runs, for a journal is easy to write by hand.
    seal: str | None = None


_TYPED: tuple[type[JournalEvent], ...] = (
    RunStart,
    RunResume,
    PlanRejected,
    PlanEdited,
    PlanRevise,
    LLMRequest,
    LLMResponse,
    LLMUnused,
    LLMReused,
    PlanProposed,
    PlanRecalled,
    PlanExamples,
    PlanInvalid,
    PlanApproved,
    PlanAwaiting,
    PlanRepair,
    Thought,
    Action,
    ObservationEvent,
    StepReused,
    StepSkipped,
    CheckEvent,
    AnswerEvent,
    BudgetExceeded,
    RunCancelled,
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
