"""Reading a journal back into typed events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from stepgraph.exceptions import JournalError
from stepgraph.journal._events import AnyEvent, JournalEvent

_ADAPTER: TypeAdapter[JournalEvent] = TypeAdapter(AnyEvent)


@dataclass
class Journal:
    """The events of a journal, and the lines that could not be read."""

    path: Path
    events: list[JournalEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[JournalEvent]:
        """The events whose `event` is `kind`, in order."""
        return [event for event in self.events if event.event == kind]

    def for_step(self, step: str) -> list[JournalEvent]:
        """The events about one step, in order."""
        return [event for event in self.events if event.step == step]


def read_journal(path: Path) -> Journal:
    """Read a JSONL journal; unreadable lines (a truncated last line) are reported, not fatal."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
    journal = Journal(path)
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            journal.events.append(_ADAPTER.validate_python(json.loads(line)))
        except json.JSONDecodeError as e:
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
            what = "truncated last line" if last else "line is not JSON"
            journal.problems.append(f"line {number}: {what} ({e.msg}); skipped")
        except ValidationError as e:
            journal.problems.append(
                f"line {number}: not a journal event ({e.error_count()} errors); skipped"
            )
    return journal
