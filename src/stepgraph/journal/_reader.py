"""Reading a journal back into typed events."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import TypeAdapter, ValidationError

from stepgraph.exceptions import JournalError
from stepgraph.journal._events import AnyEvent, JournalEvent, RunStart
from stepgraph.journal._writer import JOURNAL_VERSION

_ADAPTER: TypeAdapter[JournalEvent] = TypeAdapter(AnyEvent)

# Builds one event straight from its line's JSON text (pydantic reads the bytes), for the
# largest lines: a task definition or a plan parsed into dicts first is 5-10x its text.
LineParser = Callable[[bytes], JournalEvent]


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


def read_journal(path: Path | str) -> Journal:
    """Read a JSONL journal into typed events.

    A truncated last line (a killed process) or a garbage line is reported with its
    line number and skipped. A file with no journal event at all (empty, a task file,
    binary data), events of another run mixed into the file, or a journal written by
    a newer format version, are refused with a `JournalError`.
    """
    reader = JournalReader(path)
    events = list(reader)
    return Journal(reader.path, events, reader.problems)


class JournalReader:
    """A journal's events one at a time, read line by line, with the same checks.

    For a large journal (a replay compares two of them): no copy of the whole file is
    held, and the caller keeps only what it needs of each event. `problems` fills as
    the lines are read.
    """

    def __init__(
        self,
        path: Path | str,
        kinds: Collection[str] | None = None,
        parsers: Mapping[str, LineParser] | None = None,
    ) -> None:
        # `kinds`: yield only events of these kinds. A line that names only other kinds is
        # not even parsed (a plan or a task definition is the largest line there is); so
        # such lines are not checked to belong to the run: read the journal whole first.
        # `parsers`: a line of one of these kinds is built by its parser from the bytes;
        # if the parser refuses it, the line is read as any other (and reported if bad).
        self.path = Path(path)  # a str from a Python caller reads the same
        self.problems: list[str] = []
        self._kinds = None if kinds is None else frozenset(kinds)
        self._parsers = dict(parsers or {})
        self._run_id: str | None = None
        self._seen = False

    def __iter__(self) -> Iterator[JournalEvent]:
        try:
            with self.path.open("rb") as file:
                yield from self._events(file)
        except OSError as e:
            raise JournalError(f"cannot read journal: {e.strerror}", path=str(self.path)) from e
        if not self._seen:
            data = self.path.read_bytes()  # only to say what the file holds instead
            raise JournalError(f"not a stepgraph journal: {_describe(data)}", path=str(self.path))

    def _events(self, file: BinaryIO) -> Iterator[JournalEvent]:
        unreadable: tuple[int, str] | None = None  # truncated if no line follows it
        number = 0  # not enumerate(): its reused tuple would keep the last line alive
        for raw in file:
            number += 1
            if _blank(raw):
                continue
            if unreadable is not None:
                self.problems.append(
                    f"line {unreadable[0]}: line is not JSON ({unreadable[1]}); skipped"
                )
                unreadable = None
            if self._kinds is not None and _other_kinds(raw, self._kinds):
                self._seen = True  # an event, just not one asked for: not even parsed
                continue
            event = self._built(raw) if self._parsers else None
            parsed = self._parse(raw, number) if event is None else event
            del raw  # not held while the caller uses the event: a plan's line is large
            if isinstance(parsed, str):
                unreadable = (number, parsed)
            elif parsed is not None:
                self._check_belongs(parsed, number)
                yield parsed
        if unreadable is not None:
            self.problems.append(
                f"line {unreadable[0]}: truncated last line ({unreadable[1]}); skipped"
            )

    def _parse(self, raw: bytes, number: int) -> JournalEvent | str | None:
        """The line's event; or why it is not JSON; or None (skipped, or a problem noted)."""
        try:
            data = json.loads(raw.decode("utf-8", errors="replace"))
            if self._kinds is not None and _skipped(data, self._kinds):
                self._check_run(data.get("run_id"), number)
                return None
            event: JournalEvent = _ADAPTER.validate_python(data)
        except json.JSONDecodeError as e:
            return e.msg
        except RecursionError:  # the writer never nests this deep: not ours
            self.problems.append(f"line {number}: JSON nested too deeply; skipped")
            return None
        except ValidationError as e:
            self.problems.append(
                f"line {number}: not a journal event ({e.error_count()} errors); skipped"
            )
            return None
        return event

    def _built(self, raw: bytes) -> JournalEvent | None:
        for kind in _EVENT_KIND.findall(raw):  # the line's own kind is among them
            parser = self._parsers.get(kind.decode())
            if parser is None:
                continue
            try:
                return parser(raw)
            except ValidationError:  # not this kind after all, or not valid: read it as usual
                continue
        return None

    def _check_run(self, run_id: Any, number: int) -> None:
        self._seen = True
        if self._run_id is None:
            self._run_id = run_id
        elif run_id != self._run_id:
            raise JournalError(
                f"line {number} belongs to run {run_id}, not to run {self._run_id}: "
                "journals of two runs are mixed in one file",
                path=str(self.path),
            )

    def _check_belongs(self, event: JournalEvent, number: int) -> None:
        self._check_run(event.run_id, number)
        if isinstance(event, RunStart) and event.version > JOURNAL_VERSION:
            raise JournalError(
                f"written by a newer stepgraph (journal version {event.version}; "
                f"this one reads up to {JOURNAL_VERSION})",
                path=str(self.path),
            )


PAGE_EVENTS = 500  # events in a page when the caller names no limit
PAGE_BYTES = 4 * 2**20  # a page stops after this many bytes of lines (one line at least)


@dataclass
class EventLine:
    """One line of a journal as a page gives it: its seq, its kind, the JSON text itself."""

    seq: int
    kind: str
    text: bytes  # without the newline


@dataclass
class EventPage:
    """Complete lines of a journal after a seq, and the byte offset where the next page starts."""

    lines: list[EventLine]
    next_offset: int  # just after the last line read (a line being written is left for later)
    last_seq: int  # the last seq read, or the `after` asked for when there was none
    more: bool  # the file held more bytes than this page read
    ended: bool  # a `run.end` was read (in the page, skipped before it, or just before `offset`)


def read_page(
    path: Path,
    *,
    after: int = 0,
    limit: int = PAGE_EVENTS,
    offset: int = 0,
    max_bytes: int = PAGE_BYTES,
) -> EventPage:
    """The events with a seq over `after`, read line by line from the byte `offset`.

    A page holds at most `limit` events and about `max_bytes` of text, never the whole
    file, so a client walks a journal of any size page by page: `next_offset` (and
    `last_seq` as the next `after`) starts the next one without reading what came before.
    A line not yet ended by a newline (the writer is at it) stays for the next page;
    a line that is not JSON is left out. An `offset` that is not at the start of a line
    is a `JournalError`.
    """
    lines: list[EventLine] = []
    size = 0
    last = after
    ended = False
    try:
        with path.open("rb") as file:
            end = os.fstat(file.fileno()).st_size
            if offset < 0 or offset > end:
                raise JournalError(f"offset {offset} is outside the journal", path=str(path))
            if offset > 0:
                # The line before the offset: a page that starts after the run's end says so.
                back = min(offset, _LOOK_BACK)
                file.seek(offset - back)
                before = file.read(back)
                if not before.endswith(b"\n"):
                    raise JournalError(
                        f"offset {offset} is not at the start of a line", path=str(path)
                    )
                ended = _ends(before[:-1].rsplit(b"\n", 1)[-1])
            position = offset
            while len(lines) < limit and size < max_bytes:
                raw = file.readline()
                if not raw.endswith(b"\n"):
                    break  # the end, or a line still being written
                position += len(raw)
                text = raw.rstrip(b"\r\n")
                del raw
                line = _stamped(text, after)
                if line is None:
                    ended = ended or _ends(text)
                    continue
                ended = ended or line.kind == "run.end"
                lines.append(line)
                size += len(line.text)
                last = line.seq
    except OSError as e:
        raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
    return EventPage(lines, position, last, position < end, ended)


# The writer ends every line with its stamps, `..."event":"<kind>","seq":N,"ts":"..."}`:
# at the very end, with one closing brace, they are the line's own (not a nested value's).
_STAMPS = re.compile(rb'"event":"([A-Za-z0-9_.]+)","seq":(\d+),"ts":"[^"\\]*"\}$')
_STAMPS_LENGTH = 256  # the stamps are looked for in this many bytes at the end of a line
_LOOK_BACK = 2**16  # bytes read back from a page's offset to find the line before it


def _ends(text: bytes) -> bool:
    """Whether a line skipped unparsed is the run's end (looked at only if it may be)."""
    if b'"run.end"' not in text:
        return False
    kinds = _EVENT_KIND.findall(text)
    if len(kinds) == 1:
        return bool(kinds[0] == b"run.end")
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and bool(data.get("event") == "run.end")


def _stamped(text: bytes, after: int) -> EventLine | None:
    """The line with its seq and kind, or None when it is not JSON or not after `after`.

    A line that ends with the writer's stamps is taken as the writer wrote it, unparsed:
    the lines before the page are skipped at the cost of a search, and a large line (a
    plan, a task definition) is never made into a dict (many times its text). Any other
    line is parsed, and left out unless it is a JSON event.
    """
    stamps = _STAMPS.search(text, max(0, len(text) - _STAMPS_LENGTH))
    if stamps is not None:
        seq = int(stamps.group(2))
        if seq <= after:
            return None
        return EventLine(seq, stamps.group(1).decode(), text)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    number, kind = data.get("seq"), data.get("event")
    if not isinstance(number, int) or not isinstance(kind, str) or number <= after:
        return None
    return EventLine(number, kind, text)


# Every `"event": "<kind>"` in a line: the event's own kind is among them, wherever the
# writer put the key, so a line none of whose matches is wanted cannot be wanted.
_EVENT_KIND = re.compile(rb'"event"\s*:\s*"([A-Za-z0-9_.]+)"')


def _blank(raw: bytes) -> bool:
    """Whitespace only; decoded only if what is left starts with a byte that is not ASCII."""
    left = raw.strip()
    return not left or (left[0] >= 0x80 and not raw.decode("utf-8", errors="replace").strip())


def _other_kinds(raw: bytes, kinds: frozenset[str]) -> bool:
    found = _EVENT_KIND.findall(raw)
    return bool(found) and not any(kind.decode() in kinds for kind in found)


def _skipped(data: Any, kinds: frozenset[str]) -> bool:
    return (
        isinstance(data, dict) and isinstance(data.get("event"), str) and data["event"] not in kinds
    )


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
