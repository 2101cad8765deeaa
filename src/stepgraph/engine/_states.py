"""Each step's state as a journal tells it, for every face: the rule the run itself used.

The page, `stepgraph show`, `stepgraph graph` and `stepgraph gantt` all colour a step
from here: `verified` only where a verdict of the run's last round looked at its value
(`stepgraph.verifiers.step_states`), `unchecked` where it ran and nothing did,
`check_failed`, `failed`, `skipped`; and `running` for a step started and not finished.
"""

from __future__ import annotations

from collections.abc import Iterable

from stepgraph.journal import JournalEvent, StepFacts
from stepgraph.verifiers import step_states

RUNNING = "running"


def recorded_step_states(facts: StepFacts, *, running: bool = True) -> dict[str, str]:
    """The states of the steps the last round reached, from its folded facts.

    With `running`, a step started and not finished says so; else it is left out (a
    picture of a run that stopped draws it as planned).
    """
    states = step_states(facts.ran, facts.skipped, facts.verdicts)
    if running:
        for step in facts.running:
            states.setdefault(step, RUNNING)
    return states


def journal_step_states(events: Iterable[JournalEvent], *, running: bool = False) -> dict[str, str]:
    """verified, unchecked, check_failed, failed or skipped (or running), for each step."""
    facts = StepFacts()
    for event in events:
        fields = event.__dict__
        extra = event.model_extra
        facts.take(event.event, event.step, {**fields, **extra} if extra else fields)
    return recorded_step_states(facts, running=running)
