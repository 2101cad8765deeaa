"""The suite file: goals in plain language, each with the answer a person computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stepgraph.evaluation._correct import Expected, parse_expected
from stepgraph.exceptions import StepgraphError, TaskFileError
from stepgraph.model import Task

DEFAULT_TOLERANCE = 1e-3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpectedAnswer(_Strict):
    """The expected answer: a number, or a number with a unit (a count may name its thing)."""

    value: str | float | int = Field(description="The number, or a quantity such as '962.28 GB'.")
    unit: str | None = Field(
        None,
        description="A unit ('GB', 'h', '%'); a word that is no unit ('nights') marks a count.",
    )


class SuiteGoal(_Strict):
    """One goal of the suite: the question, its expected answer, and what it may use."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="Unique short id.")
    category: str = Field("other", description="For the totals by category.")
    goal: str = Field(min_length=1, description="The question as a user would type it.")
    expect: ExpectedAnswer = Field(description="The expected answer, computed by hand.")
    tolerance: float | None = Field(
        None, gt=0, lt=1, description="Relative tolerance; default: the suite's."
    )
    step: str | None = Field(
        None, description="Compare only this step's value (else the last step and the answer)."
    )
    tools: list[str] = Field(default_factory=list, description="Allowed tools; empty: all.")
    plugins: list[str] = Field(
        default_factory=list,
        description="Python files with @tool functions, relative to the suite.",
    )
    answer: str | None = Field(None, description="Answer template, as in a task file.")

    @field_validator("expect", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        # `expect: "962.28 GB"` and `expect: 3` are shorthands for {value: ...}.
        return {"value": value} if isinstance(value, str | int | float) else value

    def expected(self) -> Expected:
        """The expected answer, parsed (units checked when the suite is loaded)."""
        return parse_expected(self.expect.value, self.expect.unit)

    def task(self) -> Task:
        """The goal as a goal-only task (the planner writes the plan)."""
        return Task(
            name=self.id,
            goal=self.goal,
            tools=self.tools,
            plugins=self.plugins,
            answer=self.answer,
        )


class Suite(_Strict):
    """A named list of goals with expected answers."""

    name: str = Field("suite", description="Short name, shown in the report.")
    description: str = Field("", description="What the suite measures.")
    tolerance: float = Field(
        DEFAULT_TOLERANCE, gt=0, lt=1, description="Default relative tolerance."
    )
    goals: list[SuiteGoal] = Field(min_length=1, description="The goals, in order.")

    @model_validator(mode="after")
    def _unique_ids_and_readable_answers(self) -> Suite:
        seen: set[str] = set()
        for goal in self.goals:
            if goal.id in seen:
                raise ValueError(f"goal id '{goal.id}' is used twice")
            seen.add(goal.id)
            try:
                goal.expected()
            except StepgraphError as e:  # a typo in a unit must not count as a wrong answer
                raise ValueError(f"goal '{goal.id}': expect: {e}") from e
        return self

    def tolerance_of(self, goal: SuiteGoal) -> float:
        """The goal's own tolerance, else the suite's."""
        return goal.tolerance if goal.tolerance is not None else self.tolerance


def load_suite(path: Path) -> Suite:
    """Read and check a suite file; every problem is a `TaskFileError` naming the file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise TaskFileError(f"cannot read suite: {e.strerror}", path=str(path)) from e
    except yaml.YAMLError as e:
        raise TaskFileError(f"not YAML: {e}", path=str(path)) from e
    if not isinstance(data, dict):
        raise TaskFileError("a suite is a mapping with 'goals:'", path=str(path))
    try:
        return Suite.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'suite'}: {error['msg']}"
            for error in e.errors()
        )
        raise TaskFileError(f"not a valid suite: {problems}", path=str(path)) from e
