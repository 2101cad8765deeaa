"""Each step's state as a journal tells it: the same rule the run used (`step_states`)."""

from __future__ import annotations

from rich.text import Text

from stepgraph.journal import Journal
from stepgraph.model import Verdict
from stepgraph.verifiers import STEP_STATES, step_states

_VERDICT_FIELDS = set(Verdict.model_fields)
STYLES = {
    "verified": "green",
    "unchecked": "yellow",
    "check_failed": "bold red",
    "failed": "bold red",
    "skipped": "dim",
}


def journal_step_states(journal: Journal) -> dict[str, str]:
    """verified, unchecked, check_failed, failed or skipped, for each step the run reached."""
    ran: dict[str, bool] = {}
    skipped: list[str] = []
    verdicts: list[Verdict] = []
    for event in journal.events:
        if event.event == "check":
            verdicts.append(Verdict.model_validate(event.model_dump(include=_VERDICT_FIELDS)))
        elif event.step is None:
            continue
        elif event.event == "observation" and event.model_dump()["final"]:
            ran[event.step] = bool(event.model_dump()["ok"])
        elif event.event == "step.reused":
            ran[event.step] = True
        elif event.event == "step.skipped":
            skipped.append(event.step)
    return step_states(ran, skipped, verdicts)


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
