"""A run's digest: what its pages show, from one pass over its journal that keeps only that.

A page about a run needs its answer, its verdicts, each step's state and final value, and
which plan ran; not every event, and never a plan it will not draw. The journal is read
line by line; the small lines are read with orjson and only the fields wanted are looked
at (as the index does), the plan lines only for their hash (their plan is not built), and
every other line is skipped on its kind alone. The plan that ran is built afterwards from
its own line, and only when the caller asks for it and its line is small enough.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pint
from pydantic import BaseModel, ConfigDict, ValidationError

from stepgraph.exceptions import JournalError
from stepgraph.journal._recording import _HEADS
from stepgraph.journal._states import take_state
from stepgraph.model import StepGraph
from stepgraph.units import format_value
from stepgraph.values import decode_value

# A journal over this size is large: pages show its digest instead of replaying every event.
LARGE_JOURNAL = 64 * 2**20
# A plan line over this size is not built for a page (a plan of this size has thousands of steps).
MAX_PLAN_LINE = 2 * 2**20
MAX_VALUE_TEXT = 2_000  # a step's value as a page shows it is cut after this many characters

# A plan proposed for one of these purposes (or none) is one the run may run.
_RUN_PURPOSES = frozenset({"plan", "repair", "revise"})
_WANTED = frozenset(
    {
        b"action",
        b"observation",
        b"plan.recalled",
        b"step.reused",
        b"step.skipped",
        b"check",
        b"answer",
        b"plan.proposed",
        b"plan.edited",
        b"plan.approved",
    }
)
_EVENT_KIND = re.compile(rb'"event"\s*:\s*"([A-Za-z0-9_.]+)"')
# How the writer ends a line (see `read_page`): the kind there is the line's own.
_STAMPS = re.compile(rb'"event":"([A-Za-z0-9_.]+)","seq":\d+,"ts":"[^"\\]*"\}\s*$')
# How the writer begins a line; an action needs nothing but its step, read from here.
_STEP = re.compile(rb'\{"run_id":"[^"\\]*","step":"([A-Za-z0-9_.-]+)"')


@dataclass(frozen=True)
class Verdict:
    """One check's outcome, as a page lists it."""

    step: str | None
    kind: str
    passed: bool
    description: str


@dataclass
class RunDigest:
    """What the pages show of a run: answer, verdicts, step states and values, the plan's hash."""

    path: Path
    size: int  # bytes of the journal when it was read
    read_to: int = 0  # the byte offset after the last complete line read
    answer: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # verified, unchecked, failed, ...
    values: dict[str, str] = field(default_factory=dict)  # each step's final value, for people
    magnitudes: dict[str, list[float]] = field(default_factory=dict)  # its numbers, for linking
    plan_hash: str | None = None  # the plan that ran (the last approved), else the last proposed
    recalled: dict[str, str] = field(default_factory=dict)  # plan hash -> the run memory gave it
    last_seq: int = 0
    _plan_lines: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    _encoded: dict[str, Any] = field(default_factory=dict, repr=False)  # last value, JSON form

    @property
    def large(self) -> bool:
        """Whether the journal is over `LARGE_JOURNAL`: pages then show this, not every event."""
        return self.size > LARGE_JOURNAL

    @property
    def recalled_from(self) -> str | None:
        """The verified run whose plan memory gave the current plan, if it did."""
        return self.recalled.get(self.plan_hash or "")

    def plan_size(self) -> int | None:
        """The bytes of the current plan's line, or None when there is no plan."""
        where = self._plan_lines.get(self.plan_hash or "")
        return where[1] if where else None

    def plan(self, max_line: int = MAX_PLAN_LINE) -> StepGraph | None:
        """The current plan, built from its own line; None when there is none or it is larger."""
        where = self._plan_lines.get(self.plan_hash or "")
        if where is None or where[1] > max_line:
            return None
        offset, length = where
        with self.path.open("rb") as file:
            file.seek(offset)
            text = file.read(length)
        try:
            return _PlanOnly.model_validate_json(text).plan
        except ValidationError:
            return None


class _PlanOnly(BaseModel):
    """A plan line read for its plan alone."""

    model_config = ConfigDict(extra="ignore")

    plan: StepGraph


def digest(path: Path) -> RunDigest:
    """The digest of a journal, read once, line by line.

    A file that cannot be read is a `JournalError`. Lines that are not JSON, or not the
    events it looks for, are skipped: the run's index row already says whether the file
    is a journal.
    """
    try:
        with path.open("rb") as file:
            found = RunDigest(path, size=path.stat().st_size)
            approved: str | None = None
            latest: str | None = None
            offset = 0
            last = b""
            for raw in file:
                start, offset = offset, offset + len(raw)
                if raw.endswith(b"\n"):
                    found.read_to = offset
                    if raw.strip():
                        last = raw
                kinds = _kinds(raw)
                if not any(kind in _WANTED for kind in kinds):
                    continue
                if kinds == [b"action"] and (step := _STEP.match(raw)) is not None:
                    found.states[step.group(1).decode()] = "running"
                    continue
                if b"plan.proposed" in kinds or b"plan.edited" in kinds:
                    plan_hash = _plan_head(raw, found, start)
                    if plan_hash is not None:
                        latest = plan_hash
                    continue
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    if data.get("event") == "plan.approved":
                        approved = str(data.get("plan_hash", "")) or approved
                    _take(found, data)
    except OSError as e:
        raise JournalError(f"cannot read journal: {e.strerror}", path=str(path)) from e
    found.last_seq = max(found.last_seq, _seq_of(last))
    _values(found)
    # An approval of a plan the journal does not hold names nothing to draw: as before it.
    found.plan_hash = approved if approved in found._plan_lines else latest
    return found


def _kinds(raw: bytes) -> list[bytes]:
    """The line's own kind from the writer's stamps at its end, else every kind it names."""
    stamps = _STAMPS.search(raw, max(0, len(raw) - 256))
    return [stamps.group(1)] if stamps is not None else _EVENT_KIND.findall(raw)


def _seq_of(line: bytes) -> int:
    """The seq of a line (the last one: its kind may be none the digest looks at)."""
    if not line:
        return 0
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return 0
    seq = data.get("seq") if isinstance(data, dict) else None
    return seq if isinstance(seq, int) else 0


def _plan_head(raw: bytes, found: RunDigest, start: int) -> str | None:
    """Note where a plan line is; its hash when the run may run that plan, else None."""
    for kind in _EVENT_KIND.findall(raw):
        head_model = _HEADS.get(kind.decode())
        if head_model is None:
            continue
        try:
            head = head_model.model_validate_json(raw)
        except ValidationError:
            continue
        plan_hash = str(head.plan_hash)  # type: ignore[attr-defined]
        found.last_seq = max(found.last_seq, int(head.seq))  # type: ignore[attr-defined]
        found._plan_lines[plan_hash] = (start, len(raw))
        purpose = getattr(head, "purpose", None)  # plan.edited has none: always a run's plan
        return plan_hash if purpose is None or purpose in _RUN_PURPOSES else None
    return None


def _take(found: RunDigest, data: dict[str, Any]) -> None:
    """Fold one small event into the digest, as the run page's script does."""
    seq = data.get("seq")
    if isinstance(seq, int):
        found.last_seq = max(found.last_seq, seq)
    kind, step = data.get("event"), data.get("step")
    if kind == "plan.recalled" and data.get("plan_hash"):
        found.recalled[str(data["plan_hash"])] = str(data.get("from_run", ""))
        return
    if kind == "answer":
        found.answer = str(data.get("text", ""))
        return
    if kind == "check":
        passed = bool(data.get("passed"))
        found.verdicts.append(
            Verdict(
                step if isinstance(step, str) else None,
                str(data.get("kind", "")),
                passed,
                str(data.get("description", "")),
            )
        )
        take_state(found.states, data)  # the one rule of pages and pictures
        return
    if not isinstance(step, str):
        return
    take_state(found.states, data)
    if kind == "step.reused" or kind == "observation" and data.get("final") and data.get("ok"):
        found._encoded[step] = data.get("value")


def _values(found: RunDigest) -> None:
    """Each step's last value decoded and put in words once, at the end (formatting is slow)."""
    for step, encoded in found._encoded.items():
        value = decode_value(encoded)
        text = format_value(value)
        if len(text) > MAX_VALUE_TEXT:
            text = text[: MAX_VALUE_TEXT - 1] + "…"
        found.values[step] = text
        found.magnitudes[step] = _magnitudes(value)
    found._encoded.clear()


def _magnitudes(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, pint.Quantity):
        return [float(value.magnitude)]
    if isinstance(value, int | float):
        return [float(value)]
    return []
