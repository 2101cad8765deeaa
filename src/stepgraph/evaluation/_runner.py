"""Running a suite: each goal through the engine, measured from its journal and its result."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stepgraph.engine import Engine
from stepgraph.evaluation._correct import numbers_in, text_matches, value_matches
from stepgraph.evaluation._suite import Suite, SuiteGoal
from stepgraph.exceptions import JournalError, failure_kind
from stepgraph.journal import Journal, read_journal
from stepgraph.model import ApprovalPolicy, RunResult
from stepgraph.units import format_value


class GoalOutcome(BaseModel):
    """One run of one goal: what the planner managed, what the engine verified, what it cost."""

    goal: str = Field(description="The goal's id.")
    category: str = Field(description="The goal's category.")
    run: int = Field(description="1 for the first run of the goal, 2 for the second, ...")
    status: str = Field(description="verified, unverified, step_failed, not_run, or error.")
    error_kind: str | None = Field(
        None,
        description="For a run that raised: one word of `stepgraph.exceptions.failure_kind` "
        "(invalid, model_failed, not_run, budget, journal_incomplete, error, internal, ...).",
    )
    error: str | None = Field(None, description="The error's message, for a run that raised.")
    exit_code: int | None = Field(None, description="What `stepgraph run` would have exited with.")
    first_plan_valid: bool = Field(description="The first plan attempt gave a valid plan.")
    valid: bool = Field(description="A valid plan came within the planner's retries.")
    plan_attempts: int = Field(0, description="Model requests for the first plan.")
    repairs: int = Field(0, description="Repair rounds after a failed step or check.")
    verified: bool = Field(description="The engine reported the run verified.")
    correct: bool = Field(description="The suite's expected answer was found (see _correct).")
    matched: str | None = Field(None, description="What matched the expected answer.")
    expected: str = Field(description="The expected answer, as the suite gives it.")
    answer: str | None = Field(None, description="The run's answer text.")
    model_calls: int = Field(0, description="Requests sent to the model (all purposes).")
    prompt_tokens: int = Field(0, description="Prompt tokens the endpoint reported.")
    completion_tokens: int = Field(0, description="Completion tokens the endpoint reported.")
    wall_s: float = Field(0.0, description="Wall time of the run in seconds.")
    journal: str = Field(description="The run's journal.")

    @property
    def verified_wrong(self) -> bool:
        """The worst outcome: the engine vouched for a wrong answer."""
        return self.verified and not self.correct


ExitCodeOf = Callable[[RunResult | BaseException], int]
Listener = Callable[[GoalOutcome], None]


def run_suite(
    suite: Suite,
    engine: Engine,
    *,
    base_dir: Path,
    journal_dir: Path,
    runs: int = 1,
    goals: Sequence[SuiteGoal] | None = None,
    exit_code_of: ExitCodeOf | None = None,
    on_outcome: Listener | None = None,
) -> list[GoalOutcome]:
    """Run every goal (or `goals`) `runs` times; one journal per goal per run in `journal_dir`."""
    journal_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[GoalOutcome] = []
    for goal in goals if goals is not None else suite.goals:
        for number in range(1, runs + 1):
            path = journal_dir / f"{goal.id}-run{number}.jsonl"
            outcome = run_goal(suite, goal, engine, base_dir, path, number, exit_code_of)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


def run_goal(
    suite: Suite,
    goal: SuiteGoal,
    engine: Engine,
    base_dir: Path,
    journal: Path,
    number: int = 1,
    exit_code_of: ExitCodeOf | None = None,
) -> GoalOutcome:
    """Run one goal once; a run that raises is an outcome too, never an abort of the suite."""
    started = time.monotonic()
    result: RunResult | None = None
    failure: Exception | None = None
    try:
        prepared = engine.prepare(goal.task(), base_dir=base_dir)
        # Unattended: a plan with side effects is not run (nobody is there to approve it).
        result = engine.run(
            prepared, journal=journal, replace_journal=True, approval=ApprovalPolicy.READONLY
        )
    except Exception as error:  # a failing goal is a measurement, never the end of the suite
        failure = error
    wall = round(time.monotonic() - started, 3)
    events = _journal(journal)
    fields: dict[str, Any] = _from_journal(events)
    correct, matched = (False, None) if result is None else _correctness(suite, goal, result)
    outcome = GoalOutcome(
        goal=goal.id,
        category=goal.category,
        run=number,
        status=result.status.value if result is not None else "error",
        error_kind=failure_kind(failure) if failure is not None else None,
        error=str(failure) if failure is not None else None,
        verified=result is not None and result.verified,
        correct=correct,
        matched=matched,
        expected=str(goal.expected()),
        answer=result.answer if result is not None else None,
        wall_s=wall,
        journal=str(journal),
        **fields,
    )
    if exit_code_of is not None:
        subject: RunResult | BaseException | None = result if result is not None else failure
        assert subject is not None
        outcome.exit_code = exit_code_of(subject)
    return outcome


def _journal(path: Path) -> Journal | None:
    try:
        return read_journal(path)
    except JournalError:
        return None  # the run failed before its first event (e.g. a bad plugin)


def _from_journal(journal: Journal | None) -> dict[str, Any]:
    """Planner and cost figures: every exchange with the model is in the journal."""
    if journal is None:
        return {"first_plan_valid": False, "valid": False}
    proposed = [
        e for e in journal.of_kind("plan.proposed") if getattr(e, "purpose", None) == "plan"
    ]
    requests = journal.of_kind("llm.request")
    unused = journal.of_kind("llm.unused")  # a worked answer asked ahead, never compared
    usage = [getattr(e, "usage", {}) for e in [*journal.of_kind("llm.response"), *unused]]
    return {
        "first_plan_valid": any(getattr(e, "attempt", None) == 1 for e in proposed),
        "valid": bool(proposed),
        "plan_attempts": sum(1 for e in requests if getattr(e, "purpose", None) == "plan"),
        "repairs": len(journal.of_kind("plan.repair")),
        "model_calls": len(requests) + len(unused),
        "prompt_tokens": sum(u.get("prompt_tokens", 0) for u in usage),
        "completion_tokens": sum(u.get("completion_tokens", 0) for u in usage),
    }


def _correctness(suite: Suite, goal: SuiteGoal, result: RunResult) -> tuple[bool, str | None]:
    """The named step's value; else the last step's value, then the answer's numbers."""
    expected, tolerance = goal.expected(), suite.tolerance_of(goal)
    values = result.values or result.unverified_values
    if goal.step is not None:
        value = values.get(goal.step)
        ok = goal.step in values and value_matches(expected, value, tolerance)
        return ok, f"step {goal.step} = {format_value(value)}" if ok else None
    if result.plan is not None:
        last = [step.id for step in result.plan.steps if step.id in values][-1:]
        for step in last:
            if value_matches(expected, values[step], tolerance):
                return True, f"step {step} = {format_value(values[step])}"
    if result.answer and not result.answer.startswith("no answer"):
        found = text_matches(expected, result.answer, tolerance, numbers_in(goal.goal))
        if found is not None:
            return True, f"answer: {found}"
    return False, None
