"""Reading a journal back into typed events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from stepgraph.exceptions import JournalError
from stepgraph.journal._events import AnyEvent, JournalEvent, RunStart
from stepgraph.journal._writer import JOURNAL_VERSION

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
    """Read a JSONL journal into typed events.

    A truncated last line (a killed process) or a garbage line is reported with its
    line number and skipped. A file with no journal event at all (empty, a task file,
    binary data), events of another run mixed into the file, or a journal written by
    a newer format version, are refused with a `JournalError`.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
    journal = _parse(path, data.decode("utf-8", errors="replace"))
    if not journal.events:
        raise JournalError(f"not a stepgraph journal: {_describe(data)}", path=str(path))
    return journal


def _parse(path: Path, text: str) -> Journal:
    journal = Journal(path)
    lines = text.split("\n")
    last = max((n for n, line in enumerate(lines, start=1) if line.strip()), default=0)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = _ADAPTER.validate_python(json.loads(line))
        except json.JSONDecodeError as e:
            what = "truncated last line" if number == last else "line is not JSON"
            journal.problems.append(f"line {number}: {what} ({e.msg}); skipped")
            continue
        except RecursionError:  # the writer never nests this deep: not ours
            journal.problems.append(f"line {number}: JSON nested too deeply; skipped")
            continue
        except ValidationError as e:
            journal.problems.append(
                f"line {number}: not a journal event ({e.error_count()} errors); skipped"
            )
            continue
        _check_belongs(journal, event, number)
        journal.events.append(event)
    return journal


def _describe(data: bytes) -> str:
    """What a file holds instead of journal events, so the user recognises a wrong path."""
    if not data.strip():
        return "the file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data, not text"
    if "\0" in text:
        return "binary data, not text"
    number, first = next((n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip())
    shown = first.strip() if len(first.strip()) <= 60 else first.strip()[:57] + "..."
    return f"no line is a journal event; line {number} is {shown!r}"


def _check_belongs(journal: Journal, event: JournalEvent, number: int) -> None:
    if journal.events and event.run_id != journal.events[0].run_id:
        raise JournalError(
            f"line {number} belongs to run {event.run_id}, not to run {journal.events[0].run_id}: "
            "journals of two runs are mixed in one file",
            path=str(journal.path),
        )
    if isinstance(event, RunStart) and event.version > JOURNAL_VERSION:
        raise JournalError(
            f"written by a newer stepgraph (journal version {event.version}; "
            f"this one reads up to {JOURNAL_VERSION})",
            path=str(journal.path),
        )
