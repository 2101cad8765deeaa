"""The totals of a suite run, and the one JSON document a script reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from stepgraph.evaluation._runner import GoalOutcome


class Totals(BaseModel):
    """Counts and sums over a set of outcomes (all, or one category)."""

    runs: int = Field(description="Goal runs counted.")
    first_plan_valid: int = Field(description="Runs whose first plan attempt was valid.")
    valid: int = Field(description="Runs that got a valid plan within the retries.")
    verified: int = Field(description="Runs the engine reported verified.")
    correct: int = Field(description="Runs whose answer matched the suite's.")
    verified_correct: int = Field(description="Verified and correct.")
    verified_wrong: int = Field(description="Verified but wrong: must be 0.")
    errors: dict[str, int] = Field(description="Runs that raised, by error kind.")
    model_calls: int = Field(description="Requests to the model.")
    prompt_tokens: int = Field(description="Prompt tokens reported by the endpoint.")
    completion_tokens: int = Field(description="Completion tokens reported by the endpoint.")
    wall_s: float = Field(description="Wall time of all runs, in seconds.")

    @property
    def verified_correct_rate(self) -> float:
        """Verified and correct, as a share of the runs (0 when nothing ran)."""
        return self.verified_correct / self.runs if self.runs else 0.0


def totals(outcomes: Sequence[GoalOutcome]) -> Totals:
    """Add up the outcomes."""
    errors: dict[str, int] = {}
    for outcome in outcomes:
        if outcome.error_kind is not None:
            errors[outcome.error_kind] = errors.get(outcome.error_kind, 0) + 1
    return Totals(
        runs=len(outcomes),
        first_plan_valid=sum(o.first_plan_valid for o in outcomes),
        valid=sum(o.valid for o in outcomes),
        verified=sum(o.verified for o in outcomes),
        correct=sum(o.correct for o in outcomes),
        verified_correct=sum(o.verified and o.correct for o in outcomes),
        verified_wrong=sum(o.verified_wrong for o in outcomes),
        errors=dict(sorted(errors.items())),
        model_calls=sum(o.model_calls for o in outcomes),
        prompt_tokens=sum(o.prompt_tokens for o in outcomes),
        completion_tokens=sum(o.completion_tokens for o in outcomes),
        wall_s=round(sum(o.wall_s for o in outcomes), 3),
    )


def by_category(outcomes: Sequence[GoalOutcome]) -> dict[str, Totals]:
    """Totals per category, in the order the categories first appear."""
    groups: dict[str, list[GoalOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.category, []).append(outcome)
    return {name: totals(group) for name, group in groups.items()}


def report_document(
    outcomes: Sequence[GoalOutcome], *, header: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One JSON-ready document: the header (suite, endpoint, ...), the outcomes, the totals.

    The two headline figures are repeated at the top level: wrong answers reported as
    verified (must be 0), and the verified-correct rate.
    """
    overall = totals(outcomes)
    return {
        **(header or {}),
        "headline": {
            "verified_wrong": overall.verified_wrong,
            "verified_correct_rate": round(overall.verified_correct_rate, 4),
        },
        "totals": overall.model_dump(),
        "categories": {name: t.model_dump() for name, t in by_category(outcomes).items()},
        "goals": [outcome.model_dump() for outcome in outcomes],
    }
