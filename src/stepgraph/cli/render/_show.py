"""`stepgraph show`: a journal as a person reads it, event by event."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from stepgraph.cli.render._lines import render_event
from stepgraph.cli.render._states import journal_step_states, states_line
from stepgraph.journal import Journal


def show_journal(console: Console, journal: Journal) -> None:
    """Print every event a person cares about, in order, then the reading problems."""
    for event in journal.events:
        line = render_event(event)
        if line is not None:
            console.print(line, highlight=False)
    line = states_line(journal_step_states(journal))
    if line is not None:
        console.print(line, highlight=False)
    for problem in journal.problems:
        console.print(Text(f"journal: {problem}", style="yellow"))
