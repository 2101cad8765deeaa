"""The shared vocabulary: tasks, step graphs, observations, verdicts and run results.

The JSON schema of `StepGraph` is what a planner is shown, so every field carries a
description written for a model as much as for a person.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

STEP_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
RESERVED_IDS = frozenset({"inputs"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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

    @field_validator("expect_unit", mode="before")
    @classmethod
    def _no_empty_unit(cls, value: Any) -> Any:
        """An empty expect_unit (models write "") means none."""
        return None if isinstance(value, str) and not value.strip() else value


class Check(_Strict):
    """A condition that must hold once the steps have run."""

    expression: str = Field(
        description="A comparison over step outputs, e.g. '${nights} * ${per_night} >= ${total}'.",
        min_length=1,
    )
    why: str = Field("", description="What the check proves, in a few words.")


class StepGraph(_Strict):
    """A plan: tool calls whose arguments may refer to earlier outputs."""

    goal: str = Field("", description="The question the plan answers.")
    thought: str = Field("", description="The approach, in one or two sentences.")
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
        return plan_hash_of(self.model_dump(mode="json"))


def plan_hash_of(dumped: dict[str, Any]) -> str:
    """`StepGraph.plan_hash` of a plan already dumped (``model_dump(mode="json")``).

    For callers that journal the dump anyway: a 10k-step plan costs 4 us a step to dump.
    """
    canonical = json.dumps(dumped, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ApprovalPolicy(StrEnum):
    """Who approves a plan before it runs."""

    AUTO = "auto"
    ASK = "ask"
    READONLY = "readonly"
    NEVER = "never"


class TaskInput(_Strict):
    """A named input of a task; its value may carry a unit ("2.5 TB")."""

    value: str | float | int = Field(description="Default value, e.g. '2.5 TB' or 0.9.")
    description: str = Field("", description="What the input means.")


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

    model_config = ConfigDict(arbitrary_types_allowed=True)


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
    UNVERIFIED = "unverified"
    STEP_FAILED = "step_failed"
    NOT_RUN = "not_run"


class RunResult(BaseModel):
    """Everything a run produced, as a script would consume it."""

    run_id: str = Field(description="Unique id of the run, also in every journal event.")
    task: str = Field(description="Name of the task.")
    status: RunStatus = Field(
        description="verified only when every step ran, every verdict passed and there is "
        "an answer."
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
    journal: str | None = Field(None, description="Path of the journal file.")
    plan: StepGraph | None = Field(None, description="The plan that ran last (after repairs).")
    reused: list[str] = Field(
        default_factory=list,
        description="Steps whose value a repair round took from an earlier round.",
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
            VerificationError: every step ran but a verdict failed (all of them listed).
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
        (`stepgraph.units.decode_value` reads them back). The journal keeps exact values.
        """
        from stepgraph.units import encode_value

        data = self.model_dump(mode="python")
        for name in ("values", "unverified_values"):
            data[name] = encode_value(data[name], display=True)
        for observation in data["observations"]:
            observation["value"] = encode_value(observation["value"], display=True)
        return json.dumps(data, indent=2, default=str)
