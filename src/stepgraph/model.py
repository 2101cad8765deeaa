"""The shared vocabulary: tasks, step graphs, observations, verdicts and run results.

The JSON schema of `StepGraph` is what a planner is shown, so every field carries a
description written for a model as much as for a person.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

STEP_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
RESERVED_IDS = frozenset({"inputs"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def fits_a_float(number: int | float) -> bool:
    """Whether `number` is finite and within a float's range.

    Every check compares values as floats: a number no float holds (a 400-digit integer,
    ``1e999``, NaN) ended runs as internal errors, or was reported verified (infinity
    converted back is infinity). Plans, program replies and task inputs refuse it by name.
    """
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def shortened(text: str, limit: int = 24) -> str:
    """`text`, or its first characters and its length where it is longer than `limit`."""
    return text if len(text) <= limit else f"{text[:12]}... ({len(text)} characters)"


def _numbers_in(value: Any) -> Iterator[int | float]:
    """Every int and float inside nested dicts and lists (booleans are no numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers_in(item)


class Step(_Strict):
    """One tool call in a plan."""

    id: str = Field(
        description="Short unique name, letters, digits and _; later steps refer to it as ${id}.",
        pattern=STEP_ID_PATTERN,
        max_length=64,
    )
    thought: str = Field("", description="Why this step is needed, in one sentence.")
    tool: str = Field(description="Name of the tool to call; must be one of the allowed tools.")
    args: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Arguments for the tool. A string that is exactly '${id}' or '${id.field}' passes "
            "that step's output unchanged (numbers keep their units); '${inputs.name}' passes "
            "a task input; references inside longer strings are interpolated as text."
        ),
    )
    depends_on: list[str] = Field(
        default_factory=list,
        description="Ids of steps that must finish first although no output is referenced.",
    )
    expect_unit: str | None = Field(
        None,
        description="Unit the output must be expressible in (e.g. 'GB'); it is converted to it.",
    )
    timeout: float = Field(
        30.0, gt=0, le=3600, description="Seconds one attempt may take before it is abandoned."
    )
    retries: int = Field(0, ge=0, le=5, description="Extra attempts after a failure or a timeout.")

    @field_validator("args")
    @classmethod
    def _finite_numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A number no float holds (a 400-digit int, Infinity) is refused here, said plainly.

        Every check compares arguments as floats; such a number ended a run as an internal
        error (OverflowError) instead of a problem fed back to the model.
        """
        for number in _numbers_in(value):
            if not fits_a_float(number):
                raise ValueError(
                    f"the number {shortened(str(number))} is too large to compute with"
                )
        return value

    @field_validator("expect_unit", mode="before")
    @classmethod
    def _no_empty_unit(cls, value: Any) -> Any:
        """An empty expect_unit (models write "") means none."""
        return None if isinstance(value, str) and not value.strip() else value

    # Frozen: a plan is changed by making a new one (repair, edit), never in place; and
    # steps read back from a journal share their sets of given field names.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Check(_Strict):
    """A condition that must hold once the steps have run."""

    expression: str = Field(
        description="A comparison over step outputs, e.g. '${nights} * ${per_night} >= ${total}'.",
        min_length=1,
    )
    why: str = Field("", description="What the check proves, in a few words.")


class GroundedInput(_Strict):
    """A number the plan read from the goal, with the goal's own words as evidence."""

    value: str | float | int = Field(
        description="The quantity exactly as the goal states it, e.g. '450 Mbps' or '90 %'."
    )
    quote: str = Field(
        description="The goal's words it comes from, copied exactly, e.g. 'a 450 Mbps link'.",
        min_length=1,
    )


class Constant(_Strict):
    """A number the goal does not state that the plan needs anyway, and why."""

    value: str | float | int = Field(description="The number, with its unit if it has one.")
    why: str = Field(description="Why the plan needs it, e.g. 'a week has 5 working days'.")


class UnusedNumber(_Strict):
    """A number of the goal the answer does not depend on, and why."""

    number: str = Field(description="The number as the goal writes it, e.g. '3'.")
    why: str = Field(description="Why the answer does not need it.")


class StepGraph(_Strict):
    """A plan: tool calls whose arguments may refer to earlier outputs."""

    goal: str = Field("", description="The question the plan answers.")
    thought: str = Field("", description="The approach, in one or two sentences.")
    inputs: dict[str, GroundedInput] = Field(
        default_factory=dict,
        description="Numbers read from the goal, each quoting the goal's words; steps refer to "
        "them as ${inputs.name}.",
    )
    constants: dict[str, Constant] = Field(
        default_factory=dict,
        description="Numbers the goal does not state, each with why; ${inputs.name} too.",
    )
    unused: list[UnusedNumber] = Field(
        default_factory=list, description="Numbers of the goal the answer does not need, and why."
    )
    steps: list[Step] = Field(description="The tool calls, in any order; references set the order.")
    checks: list[Check] = Field(
        default_factory=list,
        description="Reverse checks over the outputs that must hold for the answer to count.",
    )
    answer: str | None = Field(
        None, description="Answer template, e.g. '${nights} nights (${per_night} per night)'."
    )

    def plan_hash(self) -> str:
        """Return a stable SHA-256 of the plan's content (sorted keys)."""
        content = self.model_dump(mode="json")
        return plan_hash_of(content)


class WorkedExample(_Strict):
    """A remembered goal and the plan that verified it, shown to the planner as an example."""

    run_id: str | None = Field(None, description="The run that verified it.")
    goal: str = Field(description="The goal as it was typed.")
    plan: dict[str, Any] = Field(description="The plan, as the journal holds it.")


def plan_hash_of(dumped: dict[str, Any]) -> str:
    """`StepGraph.plan_hash` of a plan already dumped (``model_dump(mode="json")``).

    For callers that journal the dump anyway: a 10k-step plan costs 4 us a step to dump.
    Empty grounding fields are left out: the hash plans had before they existed.
    """
    content = {k: v for k, v in dumped.items() if k not in _GROUNDING_FIELDS or v}
    digest = hashlib.sha256()
    for piece in canonical_json(content):
        digest.update(piece.encode())
    return digest.hexdigest()


_GROUNDING_FIELDS = ("inputs", "constants", "unused")


_SLICE = 256  # members of a long list encoded in one call


def canonical_json(value: Any, depth: int = 0) -> Iterator[str]:
    """``json.dumps(value, sort_keys=True)`` in pieces (members, long lists in slices).

    Joined, the pieces are that text exactly (plan hashes in old journals stay valid);
    made whole, a 2,000-step plan's text held 2.8 MB while the encoder built it.
    """
    if depth < 2 and type(value) is dict and all(type(key) is str for key in value):
        yield "{"
        for index, (key, member) in enumerate(sorted(value.items())):
            yield f"{', ' if index else ''}{json.dumps(key)}: "
            yield from canonical_json(member, depth + 1)
        yield "}"
    elif depth < 2 and type(value) is list and len(value) > _SLICE:
        yield "["
        for start in range(0, len(value), _SLICE):
            text = json.dumps(value[start : start + _SLICE], sort_keys=True)
            yield f"{', ' if start else ''}{text[1:-1]}"  # the slice's members, no brackets
        yield "]"
    else:
        yield json.dumps(value, sort_keys=True)


class ApprovalPolicy(StrEnum):
    """Who approves a plan before it runs."""

    AUTO = "auto"
    ASK = "ask"
    READONLY = "readonly"
    NEVER = "never"
    PER_STEP = "per-step"  # read-only steps run at once; side-effecting ones wait for a person


class TaskInput(_Strict):
    """A named input of a task; its value may carry a unit ("2.5 TB")."""

    value: str | float | int = Field(description="Default value, e.g. '2.5 TB' or 0.9.")
    description: str = Field("", description="What the input means.")
    quote: str | None = Field(
        None, description="With `grounded: true`: the goal's words that state this value."
    )


class Price(_Strict):
    """What a model costs, in US dollars per million tokens."""

    input: float = Field(ge=0, description="Dollars per million prompt (input) tokens.")
    output: float = Field(ge=0, description="Dollars per million completion (output) tokens.")


class Budget(_Strict):
    """Limits on one run; each is checked before every model call and tool call."""

    model_calls: int | None = Field(None, ge=0, description="Requests to the model.")
    prompt_tokens: int | None = Field(None, ge=0, description="Prompt tokens, summed.")
    completion_tokens: int | None = Field(None, ge=0, description="Completion tokens, summed.")
    tool_calls: int | None = Field(None, ge=0, description="Tool attempts, retries included.")
    wall_time: float | None = Field(
        None, ge=0, description="Seconds since the run started, or a duration like '5 min'."
    )
    cost: float | None = Field(None, ge=0, description="US dollars spent on the model.")
    price: Price | None = Field(
        None,
        description="The model's price; without it, genai-prices' data for the model's name.",
    )

    @field_validator("wall_time", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        """Accept ``5 min`` or ``90 s`` as well as a number of seconds."""
        if isinstance(value, str):
            from stepgraph.exceptions import StepgraphError
            from stepgraph.units import convert, parse_quantity

            try:
                return float(convert(parse_quantity(value), "s").magnitude)
            except StepgraphError as e:
                raise ValueError(f"{value!r} is not a duration such as '90 s' ({e})") from e
        return value

    def merged(self, other: Budget | None) -> Budget:
        """These limits, with every limit `other` sets taking precedence."""
        if other is None:
            return self
        given = {name: getattr(other, name) for name in other.model_fields_set}
        return self.model_copy(update={k: v for k, v in given.items() if v is not None})

    def limits(self) -> dict[str, float]:
        """The limits that are set, by name."""
        return {
            name: value
            for name, value in self.model_dump(exclude={"price"}).items()
            if value is not None
        }


class BudgetUsage(BaseModel):
    """What a run has used so far, in the units of `Budget`."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    wall_time: float = 0.0
    cost: float | None = Field(0.0, description="None when a model call's price is unknown.")


class BudgetReport(BaseModel):
    """Usage against each limit of a run's budget."""

    limits: Budget = Field(default_factory=Budget)
    used: BudgetUsage = Field(default_factory=BudgetUsage)


class McpServerSpec(_Strict):
    """An MCP server whose tools join the registry: a command (stdio) or a URL (streamable HTTP)."""

    name: str = Field(
        "", description="Short name used in messages; defaults to the command or the URL."
    )
    command: str | None = Field(
        None, description="Program that serves MCP over stdio; 'python' is stepgraph's own."
    )
    args: list[str] = Field(default_factory=list, description="Arguments of the command.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the command."
    )
    url: str | None = Field(None, description="Streamable HTTP endpoint, e.g. http://host/mcp.")
    trusted: bool = Field(
        False,
        description="Believe the server's hints (read-only, idempotent); untrusted tools are "
        "treated as having side effects.",
    )
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds one tool call may take.")
    startup_timeout: float = Field(
        20.0, gt=0, le=600, description="Seconds the server may take to start and list its tools."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of 'command' (stdio) or 'url' (HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} must start with http:// or https://")
        return self

    @property
    def identity(self) -> str:
        """What the server is, for fingerprints: its URL, or its command line."""
        return self.url or " ".join([self.command or "", *self.args])

    @property
    def label(self) -> str:
        """The name people see in messages."""
        return self.name or self.identity


class Task(_Strict):
    """A declarative task: a goal, inputs, tools, and optionally a ready plan."""

    name: str = Field("task", description="Short name, used in journal file names.")
    goal: str = Field(description="What the task should find out.")
    inputs: dict[str, TaskInput] = Field(
        default_factory=dict, description="Named inputs; plans refer to them as ${inputs.name}."
    )
    tools: list[str] = Field(
        default_factory=list, description="Tools the plan may use; empty means every known tool."
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="Python files, relative to the task file, whose @tool functions are loaded.",
    )
    mcp_servers: list[McpServerSpec] = Field(
        default_factory=list, description="MCP servers whose tools the plan may use."
    )
    plan: StepGraph | None = Field(
        None, description="A ready plan; without it a planner is needed."
    )
    checks: list[Check] = Field(
        default_factory=list, description="Checks added to those of the plan."
    )
    answer: str | None = Field(None, description="Answer template; overrides the plan's.")
    approval: ApprovalPolicy | None = Field(
        None,
        description="auto, ask, readonly or never; unset: ask at a terminal when the plan has "
        "side effects, else auto.",
    )
    max_workers: int = Field(8, ge=1, le=256, description="Steps that may run at the same time.")
    cross_check: bool = Field(
        False, description="Verified only if a second, independent plan reaches the same answer."
    )
    grounded: bool = Field(
        False,
        description="Hold plans to the goal's text as for a typed goal: quotes match, every "
        "number of the goal is used, no literal the goal does not state.",
    )
    budget: Budget | None = Field(
        None, description="Limits on model calls, tokens, tool calls, wall time and cost."
    )
    stream: bool = Field(
        False,
        description="Stream the plan from the model and start read-only steps as they are "
        "written (needs a streaming endpoint; falls back when it does not stream).",
    )

    @field_validator("inputs", mode="before")
    @classmethod
    def _shorthand_inputs(cls, value: Any) -> Any:
        """Accept ``data: 2.5 TB`` as shorthand for ``data: {value: 2.5 TB}``."""
        if isinstance(value, dict):
            return {
                key: item if isinstance(item, dict) else {"value": item}
                for key, item in value.items()
            }
        return value


class Observation(BaseModel):
    """What one attempt of a step produced: a value or an error."""

    step: str = Field(description="Id of the step.")
    ok: bool = Field(description="True when the attempt returned a value.")
    value: Any = Field(None, description="The value returned (quantities keep their unit).")
    error: str | None = Field(None, description="The error, when the attempt failed.")
    attempt: int = Field(1, description="1 for the first attempt, 2 for the first retry, ...")
    duration_ms: float = Field(0.0, description="Wall time of the attempt in milliseconds.")

    # Frozen: what was observed does not change afterwards (and runs share field-name sets).
    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)


class VerdictKind(StrEnum):
    """Where a verdict comes from."""

    REVERSE = "reverse"
    CHECK = "check"
    UNIT = "unit"
    ANSWER = "answer"
    COVERAGE = "coverage"  # a typed goal's numbers, each used by the plan
    CROSS = "cross_check"  # a second, independent plan agrees


class Verdict(BaseModel):
    """The outcome of one re-verification, with the values it compared."""

    kind: VerdictKind = Field(description="reverse calculation, declared check, or unit check.")
    step: str | None = Field(None, description="The step verified, when there is one.")
    passed: bool = Field(description="True when the verification holds.")
    description: str = Field(description="What was compared, with the numbers.")
    values: dict[str, str] = Field(default_factory=dict, description="The values compared.")
    tolerance: float | None = Field(None, description="Relative tolerance used, if any.")


class RunStatus(StrEnum):
    """How a run ended."""

    VERIFIED = "verified"
    UNCHECKED = "unchecked"  # every verdict passed, but none looked at the answer's value
    UNVERIFIED = "unverified"
    STEP_FAILED = "step_failed"
    NOT_RUN = "not_run"
    AWAITING_APPROVAL = "awaiting_approval"  # parked: a person elsewhere decides


class RunResult(BaseModel):
    """Everything a run produced, as a script would consume it."""

    run_id: str = Field(description="Unique id of the run, also in every journal event.")
    task: str = Field(description="Name of the task.")
    status: RunStatus = Field(
        description="verified only when every step ran, every verdict passed, at least one "
        "verdict checked the answer's value, and there is an answer; unchecked when all "
        "passed but nothing checked the answer."
    )
    values: dict[str, Any] = Field(
        default_factory=dict,
        description="Final value of each step, only when the run is verified; otherwise empty "
        "and the values are under unverified_values.",
    )
    unverified_values: dict[str, Any] = Field(
        default_factory=dict,
        description="Values the steps produced in a run that is not verified (a step failed, "
        "a verification failed, no answer): for diagnosis only, never an answer.",
    )
    observations: list[Observation] = Field(default_factory=list, description="Every attempt.")
    failed: dict[str, str] = Field(
        default_factory=dict, description="Steps that failed, with the error of their last attempt."
    )
    skipped: dict[str, str] = Field(default_factory=dict, description="Skipped steps and why.")
    verdicts: list[Verdict] = Field(default_factory=list, description="Every re-verification.")
    answer: str | None = Field(
        None,
        description="The rendered answer; when there is none, 'no answer: ' and what is missing.",
    )
    answer_sources: dict[str, str] = Field(
        default_factory=dict, description="Each number of the answer -> the step it comes from."
    )
    journal: str | None = Field(None, description="Path of the journal file.")
    plan: StepGraph | None = Field(None, description="The plan that ran last (after repairs).")
    recalled_from: str | None = Field(
        None,
        description="The verified run whose plan memory gave, when the plan that ran last is "
        "that recalled plan (no model call planned it).",
    )
    reused: list[str] = Field(
        default_factory=list,
        description="Steps whose value a repair round took from an earlier round.",
    )
    step_states: dict[str, str] = Field(
        default_factory=dict,
        description="Each step: verified (a verdict checked its value), unchecked (it ran and "
        "nothing checked it), failed, check_failed (a verdict about it failed) or skipped.",
    )
    budget: BudgetReport | None = Field(
        None, description="What the run used, against each limit of its budget."
    )

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    def verified(self) -> bool:
        """True when every step ran and every verdict passed."""
        return self.status is RunStatus.VERIFIED

    def raise_for_status(self) -> RunResult:
        """Return self when verified; else raise what went wrong, for scripts that must stop.

        Raises:
            StepExecutionError: a step failed: the first step that failed for good, with
                the error of its last attempt (others are named in the message).
            VerificationError: every step ran but a verdict failed (all of them listed), or
                nothing checked the answer's value (unchecked).
            ApprovalError: the plan was not run.
        """
        from stepgraph.exceptions import ApprovalError, StepExecutionError, VerificationError

        if self.status is RunStatus.STEP_FAILED:
            failed = self.failed or self._finally_failed()
            if not failed:
                step = next(iter(self.skipped), "?")
                raise StepExecutionError(
                    self.skipped.get(step, "skipped"), step=step, run_id=self.run_id
                )
            step, error = next(iter(failed.items()))
            others = [name for name in failed if name != step]
            also = f" (also failed: {', '.join(others)})" if others else ""
            raise StepExecutionError((error or "failed") + also, step=step, run_id=self.run_id)
        if self.status is RunStatus.UNVERIFIED:
            failures = "; ".join(v.description for v in self.verdicts if not v.passed)
            raise VerificationError(f"verification failed: {failures}", run_id=self.run_id)
        if self.status is RunStatus.UNCHECKED:
            raise VerificationError(
                "unchecked: no verdict checked the answer's value (its tools state no reverse "
                "check and no declared check names it)",
                run_id=self.run_id,
            )
        if self.status is RunStatus.NOT_RUN:
            raise ApprovalError("the plan was not run", run_id=self.run_id)
        return self

    def _finally_failed(self) -> dict[str, str]:
        """Steps whose last attempt failed, from the observations (for results built by hand)."""
        last = {observation.step: observation for observation in self.observations}
        return {step: o.error or "failed" for step, o in last.items() if not o.ok}

    def to_json(self) -> str:
        """Serialise for scripts, numbers as people read them (12 significant digits).

        Quantities become ``{"$quantity": [magnitude, "unit"]}``, NaN and infinities
        ``{"$float": "nan"}``, integers beyond 64 bits ``{"$int": "digits"}``
        (`stepgraph.values.decode_value` reads them back). The journal keeps exact values.
        """
        from stepgraph.values import encode_value

        data = self.model_dump(mode="python")
        for name in ("values", "unverified_values"):
            data[name] = encode_value(data[name], display=True)
        for observation in data["observations"]:
            observation["value"] = encode_value(observation["value"], display=True)
        try:  # orjson: the standard library's indented form is pure Python (0.3 s at 10k steps)
            return orjson.dumps(data, default=str, option=orjson.OPT_INDENT_2).decode()
        except TypeError:  # an integer past 64 bits in a plan's arguments, say
            return json.dumps(data, indent=2, default=str)
