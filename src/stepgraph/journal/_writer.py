"""Writing the journal: one JSON line per event, through structlog, flushed per event.

Every field is put in its lossless JSON form (`encode_value`) before it is rendered:
integers beyond 64 bits, NaN and infinities survive the round trip, and a value that
is not plain data is refused instead of being written as its repr.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
import structlog
from pydantic import BaseModel

from stepgraph.exceptions import JournalError, JournalWriteError, StepgraphError
from stepgraph.journal._events import JournalEvent
from stepgraph.journal._liveness import hold_journal, release
from stepgraph.values import INT64_RANGE, encode_value

JOURNAL_VERSION = 1

# A listener sees each event once it is written, typed, with its run id, seq and time.
Listener = Callable[[JournalEvent], None]
# A guard sees each event before it is written and may refuse it by raising: every model
# call and tool call is journaled before it starts, so this is where budgets are checked.
Guard = Callable[[JournalEvent], None]
EventDict = MutableMapping[str, Any]
_STAMPED = frozenset({"run_id", "seq", "ts", "event"})  # filled in here, not by the caller


def _encode_fields(_: Any, __: str, event_dict: EventDict) -> EventDict:
    for key, value in event_dict.items():
        kind = type(value)
        if kind is str or kind is bool or value is None:  # most fields: already JSON
            continue
        if kind is float and value - value == 0.0:  # finite (NaN and infinities give NaN)
            continue
        if kind is int and INT64_RANGE[0] <= value <= INT64_RANGE[1]:
            continue
        if kind is dict or kind is list:
            event_dict[key] = _plain_json(value)
        elif isinstance(value, BaseModel):  # a typed field of an event: its unset parts left out
            event_dict[key] = _plain_json(value.model_dump(mode="json", exclude_none=True))
        else:
            event_dict[key] = encode_value(value)
    return event_dict


# What the two C encoders below refuse goes the slow, exact way (`encode_value`): ints
# past 53 bits, keys that are not strings, NaN and infinities, subclasses of builtins,
# and anything that is not data at all.
_ORJSON_STRICT = (
    orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_NO_NAN = json.JSONEncoder(allow_nan=False).encode
_SMALL = 2048  # bytes of JSON
_SPLIT_DEPTH = 3  # a task, its plan, the plan's steps
_SLICE = 256  # members of a long list checked in one call


def _parts(value: Any, depth: int = 0) -> Iterator[Any]:
    """The value cut for checking piece by piece: long lists in slices, down to three levels.

    The standard library's encoder keeps every piece of its output until it joins them:
    checking a 2,000-step plan in one call held 2.8 MB for 0.3 MB of JSON; a call per
    step took twice as long as one call for all.
    """
    if depth < _SPLIT_DEPTH and type(value) is dict:
        for member in value.values():
            yield from _parts(member, depth + 1)
    elif depth < _SPLIT_DEPTH and type(value) is list and len(value) > _SLICE:
        for start in range(0, len(value), _SLICE):
            yield value[start : start + _SLICE]
    else:
        yield value


def _plain_json(value: dict[str, Any] | list[Any]) -> Any:
    """A container that is plain JSON already, rendered in C; else `encode_value`'s form.

    A whole plan is in `run.start` and in `plan.proposed`: walking it in Python was a
    tenth of a 10k-step run. orjson refuses what it cannot write exactly, except NaN and
    infinities (it writes null) and enums and UUIDs (it writes their values): the
    standard library's encoder refuses those.
    """
    try:
        text = orjson.dumps(value, option=_ORJSON_STRICT)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return encode_value(value)
    # Small values (a step's arguments): the Python walk is cheaper than a second encoder.
    # A `{"$` may be a dict that would read back as a tagged value.
    if len(text) < _SMALL or b'{"$' in text:
        return encode_value(value)
    try:
        for part in _parts(value):  # keys: orjson has refused all but strings
            _NO_NAN(part)
    except (TypeError, ValueError):
        return encode_value(value)
    # orjson's bytes keep the room it grew into: up to four times the text.
    return orjson.Fragment(bytes(memoryview(text)))


_second: tuple[int, str] = (-1, "")  # the last whole second seen, and its ISO text


def _utc_now_iso() -> str:
    """Now in UTC as ISO 8601 with microseconds and a Z (what structlog's TimeStamper writes).

    The date and time of day are formatted once a second: `datetime.now().isoformat()`
    was a quarter of writing an event.
    """
    global _second  # replaced whole, never changed in place: writers in other threads read it
    now = time.time()
    second = int(now)
    known = _second
    if known[0] != second:
        known = _second = (
            second,
            datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        )
    return f"{known[1]}.{int((now - second) * 1_000_000):06d}Z"


def _refuse(value: Any) -> Any:
    # structlog's default fallback writes repr(value); after `_encode_fields` nothing
    # unknown is left, and if something were, a silent repr is the worst outcome.
    raise TypeError(f"{type(value).__name__} is not JSON data")


class _LineWriter:
    """The end of the structlog chain: appends rendered lines; `JournalWriter` decides flushes."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    def msg(self, message: bytes) -> None:
        self._file.write(message)  # buffered: two writes cost less than a copy of a big line
        self._file.write(b"\n")

    info = msg


class JournalWriter:
    """Appends events for one run to a JSONL file and hands each to listeners.

    The logger is built with `structlog.wrap_logger` rather than global
    configuration, so two runs in one process never share a file. Each event is
    flushed as it is written, except inside `batch()`, which flushes once at its end:
    the scheduler batches the events of one wake-up and flushes before any tool starts.
    """

    def __init__(
        self,
        path: Path,
        run_id: str,
        *,
        listeners: list[Listener] | None = None,
        guards: list[Guard] | None = None,
        start_seq: int = 0,
    ) -> None:
        self.path = path
        self.run_id = run_id
        self._listeners = list(listeners or [])
        self._guards = list(guards or [])
        self._lock = threading.Lock()
        self._seq = start_seq  # a resumed run appends after the events already there
        self._batch_depth = 0
        self._failure: str | None = None  # set once a write failed; the file is unusable
        # An action is written before its tool starts and flushed before it may start: once
        # one is flushed, a failing write leaves the run with more done than recorded.
        self._action_written = False
        self._tools_started = False
        self._stamp: tuple[int, str] = (start_seq, "")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[bytes] = path.open("ab")
        except OSError as e:
            raise JournalWriteError(
                f"cannot write the journal: {e.strerror}", path=str(path)
            ) from e
        # Held while open: the index tells a run still being written from one whose process died.
        self._held = hold_journal(path, self._file.fileno())
        self._logger = structlog.wrap_logger(
            _LineWriter(self._file),
            # One processor, not four: each is a call per event, three events a step. It
            # renders too (structlog passes a final processor's bytes to the logger), with
            # orjson: the journal is on the scheduler's path, and it is 3-5x faster.
            processors=[self._encode_stamp_render],
            context_class=dict,
        ).bind(run_id=run_id)

    def _encode_stamp_render(self, _: Any, __: str, event_dict: EventDict) -> bytes:
        """The line: fields in JSON form first (a refused value leaves no gap in `seq`), stamps."""
        _encode_fields(_, __, event_dict)
        self._seq += 1
        ts = _utc_now_iso()
        event_dict["seq"], event_dict["ts"] = self._seq, ts
        self._stamp = (self._seq, ts)
        return orjson.dumps(event_dict, default=_refuse)

    @property
    def heard(self) -> bool:
        """Whether an event emitted here is kept or seen by anyone (always, for a file)."""
        return True

    def emit(self, event: JournalEvent) -> None:
        """Write one event; outside a batch it is flushed to the file when this returns.

        The event gets its `run_id`, `seq` and `ts` here; listeners then receive it.
        Guards see it first: one that raises refuses it, and the error propagates.

        Raises:
            JournalWriteError: the file cannot be written (a full disk), now or earlier;
                `tools_started` says whether an action had reached the file before.
            JournalError: a field is not plain data (nothing is written then).
        """
        # The model's own dicts: iterating a pydantic model costs three times as much.
        fields = event.__dict__.copy()
        for key in _STAMPED:  # a copy less four keys: cheaper than filtering every key
            fields.pop(key, None)
        fields.update(event.__pydantic_extra__ or {})
        with self._lock:  # seq order and line order must agree
            self._check_usable()
            for guard in self._guards:  # a refused event leaves no line and no gap in `seq`
                guard(event)
            try:
                self._logger.info(event.event, **fields)
                if event.event == "action":
                    self._action_written = True
                if not self._batch_depth:
                    self._file.flush()
                    self._tools_started = self._action_written
            except OSError as e:
                self._fail(e)
            except StepgraphError as e:  # `encode_value` refused a field
                where = f" of step '{event.step}'" if event.step else ""
                raise JournalError(
                    f"cannot write event '{event.event}'{where}: {e}", path=str(self.path)
                ) from e
            seq, ts = self._stamp
            event.__dict__.update(run_id=self.run_id, seq=seq, ts=ts)  # no per-field hooks
            for listener in self._listeners:
                listener(event)

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise JournalWriteError(
                self._failure, path=str(self.path), tools_started=self._tools_started
            )

    def _fail(self, error: OSError) -> None:
        """Remember that the file is unusable (a half-written line may be in it) and say why."""
        why = error.strerror or str(error)
        if self._tools_started:
            why += "; tools had started, so the journal does not record all the run did"
        self._failure = f"cannot write the journal: {why}"
        raise JournalWriteError(
            self._failure, path=str(self.path), tools_started=self._tools_started
        ) from error

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Write the events of a block with one flush at its end instead of one each."""
        with self._lock:
            self._batch_depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._batch_depth -= 1
                if not self._batch_depth and self._failure is None:
                    try:
                        self._file.flush()
                        self._tools_started = self._action_written
                    except OSError as e:
                        self._fail(e)

    def close(self) -> None:
        """Close the file; later `emit` calls are an error.

        Raises:
            JournalWriteError: the last events could not be written (unless that was
                already reported).
        """
        with self._lock:
            try:
                self._file.close()  # closes even when its final flush fails
            except OSError as e:
                if self._failure is None:
                    self._fail(e)
            finally:
                release(self._held)
                self._held = None

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is None:
            self.close()
            return
        with suppress(JournalError):  # the error on its way out matters more
            self.close()


class NullJournal(JournalWriter):
    """A journal that keeps nothing: `Engine.run(journal=False)`, and benchmarks without I/O.

    Listeners still see every event, stamped with the run id and `seq` (no time stamp:
    nothing is written that could need one).
    """

    def __init__(
        self,
        run_id: str = "null",
        *,
        listeners: list[Listener] | None = None,
        start_seq: int = 0,
    ) -> None:
        # No file and no structlog chain: the writer's __init__ is skipped on purpose.
        self.path = Path(os.devnull)
        self.run_id = run_id
        self._listeners = list(listeners or [])
        self._seq = start_seq

    @property
    def heard(self) -> bool:
        """Only listeners would see an event here."""
        return bool(self._listeners)

    def emit(self, event: JournalEvent) -> None:
        """Drop the event; hand it to listeners first, if there are any."""
        if self._listeners:
            self._seq += 1
            event.__dict__.update(run_id=self.run_id, seq=self._seq)
            for listener in self._listeners:
                listener(event)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Nothing to batch."""
        yield

    def close(self) -> None:
        """Nothing to close."""
