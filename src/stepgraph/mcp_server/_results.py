"""What each tool returns, as pydantic models: the SDK publishes them as `outputSchema`.

A client reads numbers as data: a quantity is its magnitude and its unit, apart, with the
text people read beside them (`{"value": 962.28, "unit": "GB", "display": "962.28 GB"}`),
so nothing has to parse "2,500 GB" back into a number.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pint
from pydantic import BaseModel, Field, JsonValue, field_serializer

from stepgraph.engine import PlanView
from stepgraph.exceptions import PlanValidationError
from stepgraph.model import RunResult, RunStatus, StepGraph, VerdictKind
from stepgraph.units import (
    HUGE_INT_BITS,
    MAX_DEPTH,
    format_number,
    format_unit,
    format_value,
    round_significant,
)

EXACT_DIGITS = 15  # every decimal of 15 significant digits survives a round trip through a float


class Value(BaseModel):
    """A step's value: as data (a quantity's magnitude and unit apart) and as people read it."""

    value: JsonValue = Field(
        description="The number (a quantity's magnitude, to 15 significant digits: what a "
        "float holds, without its binary noise), or the text, list or object the step "
        "produced; a quantity inside a list or object is {value, unit}."
    )
    unit: str | None = Field(
        None,
        description="The quantity's unit as stepgraph writes and reads it (GB, Mbit/s, MB/s, "
        "h); null for a plain number, a count or other data.",
    )
    display: str = Field(description="The value as people read it: '962.28 GB', '3'.")


def as_value(value: Any) -> Value:
    """A step's value as a client reads it; never raises, whatever the value holds."""
    if isinstance(value, pint.Quantity):
        return Value(
            value=_data(value.magnitude, 0),
            unit=format_unit(value.units),
            display=format_value(value),
        )
    return Value(value=_data(value, 0), display=format_value(value))


def _data(value: Any, depth: int) -> JsonValue:
    """Plain JSON: quantities as {value, unit}; what JSON cannot hold (NaN, huge ints) as text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, pint.Quantity):
        return {"value": _data(value.magnitude, depth + 1), "unit": format_unit(value.units)}
    if isinstance(value, int):
        return int(value) if abs(value).bit_length() <= HUGE_INT_BITS else format_number(value)
    if isinstance(value, float):
        # 2500.0000000000005 is 2500 in every digit a float holds; the journal keeps each bit.
        return round_significant(float(value), EXACT_DIGITS) if math.isfinite(value) else str(value)
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return "..."
        if isinstance(value, dict):
            return {str(key): _data(item, depth + 1) for key, item in value.items()}
        return [_data(item, depth + 1) for item in value]
    return str(value)


def _values(values: dict[str, Any]) -> dict[str, Value]:
    return {step: as_value(value) for step, value in values.items()}


class _HasPlan(BaseModel):
    """A result that carries a plan, written without its defaults (as a person writes one)."""

    @field_serializer("plan", check_fields=False)
    def _compact(self, plan: StepGraph | None) -> dict[str, Any] | None:
        return None if plan is None else plan.model_dump(mode="json", exclude_defaults=True)


class Problem(BaseModel):
    """One problem of a plan, by step."""

    step: str | None = Field(description="The step it is about; null for the plan as a whole.")
    problem: str = Field(description="What is wrong and what to change.")


class Validation(BaseModel):
    """The static checks of a plan: valid, or its problems by step."""

    valid: bool = Field(description="True when the plan passes every check before a run.")
    problems: list[Problem] = Field(description="Each problem found (empty when valid).")
    runs_in_order: list[list[str]] = Field(
        description="Step ids in the order they run; the steps of one group run at the same "
        "time (empty when not valid)."
    )
    message: str | None = Field(None, description="All problems as one text (when not valid).")

    @classmethod
    def of_problems(cls, error: PlanValidationError) -> Validation:
        """The problems `error` names."""
        problems = [Problem(step=p.step, problem=p.message) for p in error.problems]
        return cls(valid=False, problems=problems, runs_in_order=[], message=str(error))


class Planned(_HasPlan):
    """A validated plan the model wrote; nothing ran."""

    plan: StepGraph = Field(description="The plan: steps, checks, answer; `run` takes it back.")
    plan_hash: str = Field(description="The plan's hash, as approvals and journals record it.")


class VerdictView(BaseModel):
    """One re-verification of a result."""

    kind: VerdictKind = Field(description="What kind of check it was.")
    step: str | None = Field(description="The step it checked, when there is one.")
    passed: bool = Field(description="True when it holds.")
    description: str = Field(description="What was compared, with the numbers.")


class ParkedStep(BaseModel):
    """One step of a plan that waits for a person, as it would run."""

    id: str = Field(description="The step's id.")
    tool: str = Field(description="The tool it calls.")
    args: dict[str, JsonValue] = Field(description="Its arguments, with the inputs resolved.")
    side_effects: bool = Field(description="True when the tool changes something.")


class RunReport(_HasPlan):
    """A run: finished (its answer, values and verdicts) or parked for a person's approval."""

    status: RunStatus = Field(
        description="verified: every number re-checked and the answer's value checked; "
        "awaiting_approval: nothing ran, a person decides (see how_to_approve)."
    )
    run_id: str = Field(description="The run's id (`stepgraph approve RUN_ID` takes it).")
    journal: str | None = Field(description="The run's journal (`replay` takes it).")
    plan_hash: str | None = Field(description="The hash of the plan that ran or waits.")
    verified: bool = Field(description="True only when the status is verified.")
    answer: str | None = Field(None, description="The answer, each number from a step.")
    values: dict[str, Value] = Field(
        default_factory=dict, description="Each step's value, only when the run is verified."
    )
    unverified_values: dict[str, Value] = Field(
        default_factory=dict,
        description="Each step's value when the run is not verified: for diagnosis, not an answer.",
    )
    failed: dict[str, str] = Field(default_factory=dict, description="Failed steps: the error.")
    skipped: dict[str, str] = Field(default_factory=dict, description="Skipped steps: why.")
    verdicts: list[VerdictView] = Field(default_factory=list, description="Every check made.")
    plan: StepGraph | None = Field(None, description="A parked run's plan, as it would run.")
    steps: list[ParkedStep] = Field(
        default_factory=list, description="A parked run's steps, with the inputs resolved."
    )
    inputs: dict[str, str] = Field(
        default_factory=dict, description="A parked run's inputs, as people read them."
    )
    approval_hash: str | None = Field(
        None, description="What a person's approval of a parked run binds."
    )
    side_effect_tools: list[str] = Field(
        default_factory=list, description="The tools of a parked run that change something."
    )
    how_to_approve: str | None = Field(
        None, description="For a parked run: who decides and how (never the client)."
    )

    @classmethod
    def finished(cls, result: RunResult) -> RunReport:
        """A run that ended: its answer, values with their units, and verdicts."""
        return cls(
            status=result.status,
            run_id=result.run_id,
            journal=result.journal,
            plan_hash=result.plan.plan_hash() if result.plan else None,
            verified=result.verified,
            answer=result.answer,
            values=_values(result.values),
            unverified_values=_values(result.unverified_values),
            failed=result.failed,
            skipped=result.skipped,
            verdicts=[
                VerdictView(kind=v.kind, step=v.step, passed=v.passed, description=v.description)
                for v in result.verdicts
            ],
        )

    @classmethod
    def awaiting(cls, result: RunResult, view: PlanView) -> RunReport:
        """A parked run as the client reports it to its user: what waits, and who can decide."""
        return cls(
            status=result.status,
            run_id=result.run_id,
            journal=result.journal,
            plan_hash=view.plan.plan_hash(),
            verified=False,
            plan=view.plan,
            steps=[
                ParkedStep(
                    id=row.id,
                    tool=row.tool,
                    args=json.loads(row.args),  # with the inputs resolved, as data
                    side_effects=row.side_effects,
                )
                for row in view.rows
            ],
            inputs=view.inputs,
            approval_hash=view.approval_hash,
            side_effect_tools=view.side_effect_tools,
            how_to_approve=(
                "the plan has side effects and waits for a person; nothing has run. Ask the "
                f"user to decide: `stepgraph approve {result.run_id} --by NAME` (or --reject), "
                "or on the run's page in `stepgraph serve`"
            ),
        )


class Replayed(BaseModel):
    """A journal re-run without tools or model, compared with the record."""

    identical: bool = Field(description="True when the replay matches the record throughout.")
    divergences: list[str] = Field(description="Where the replay differs, in record order.")
    error: str | None = Field(description="Why the replay could not finish, if it could not.")
    answer: str | None = Field(description="The replayed answer.")
    journal: str = Field(description="The replay's own journal.")
