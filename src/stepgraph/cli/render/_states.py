"""Each step's state as a journal tells it: the same rule the run used (`step_states`)."""

from __future__ import annotations

from rich.text import Text

from stepgraph.journal import Journal, fold_states
from stepgraph.verifiers import STEP_STATES

STYLES = {
    "verified": "green",
    "unchecked": "yellow",
    "check_failed": "bold red",
    "failed": "bold red",
    "skipped": "dim",
}


def journal_step_states(journal: Journal) -> dict[str, str]:
    """verified, unchecked, check_failed, failed or skipped, for each step the run reached.

    The same fold as the run page (`stepgraph.journal.fold_states`): a step run again in a
    repair round is judged by that round's verdicts, not by an earlier round's failure.
    """
    return fold_states(event.model_dump() for event in journal.events)


def states_line(states: dict[str, str], shown: int = 8) -> Text | None:
    """One line: each state with its steps (the first few), verified first."""
    if not states:
        return None
    line = Text("Steps: ", style="bold")
    first = True
    for state in STEP_STATES:
        steps = [step for step, have in states.items() if have == state]
        if not steps:
            continue
        more = f", +{len(steps) - shown:,}" if len(steps) > shown else ""
        line.append("" if first else "; ")
        line.append(f"{state} {len(steps):,}", style=STYLES[state])
        line.append(f" ({', '.join(steps[:shown])}{more})")
        first = False
    return line
