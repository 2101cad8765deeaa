"""Comparing a replayed run with its record, event by event, both read side by side."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from stepgraph.journal import Journal, JournalEvent, JournalReader, PlanProposed

# What must be equal, per event kind, for a replay to count as identical. Times,
# durations and approvals (who, when) are left out on purpose.
COMPARED: dict[str, tuple[str, ...]] = {
    "llm.request": ("purpose", "messages"),
    "llm.response": ("purpose", "text"),
    "llm.reused": ("purpose", "asked_attempt", "text"),
    "plan.proposed": ("plan_hash",),
    "plan.invalid": ("problems",),
    "plan.repair": ("plan_hash", "diff"),
    "action": ("tool", "args", "attempt"),
    "observation": ("ok", "value", "error", "attempt", "final"),
    "step.reused": ("value",),
    "step.skipped": ("reason",),
    "check": ("kind", "passed", "description"),
    "answer": ("text",),
    "run.end": ("status",),
}

_Key = tuple[str, str | None]  # (kind, step)
_T = TypeVar("_T")


@dataclass
class Divergence:
    """Where a replay first differs from the record."""

    event: str
    step: str | None
    recorded: Any
    produced: Any

    def __str__(self) -> str:
        where = f"step '{self.step}'" if self.step else "the run"
        return f"{self.event} of {where}: recorded {self.recorded!r}, produced {self.produced!r}"


def compare(recorded: Journal, produced: Journal) -> list[Divergence]:
    """Every difference between two runs, in the recorded order, step by step.

    Events are matched per (kind, step) rather than globally, because steps that run
    at the same time may finish in another order without the run being different: the
    n-th recorded event of a kind and step is compared with the n-th produced one. What
    the record has and the replay has not comes in the record's order; then what only
    the replay has.
    """
    return _compare(recorded.events, produced.events)


def compare_files(recorded: Path, produced: Path) -> list[Divergence]:
    """`compare` of two journal files, read line by line, side by side.

    Only the events one side has and the other has not reached yet are held: a few,
    as a replay writes its events in nearly the recorded order.
    """
    return _compare(_reader(recorded), _reader(produced))


def _reader(path: Path) -> JournalReader:
    return JournalReader(path, {*COMPARED, "run.resume"}, parsers={"plan.proposed": _proposal})


class _Proposal(BaseModel):
    """What is compared of a `plan.proposed` line: not the plan, only its hash (extra: ignored)."""

    run_id: str = ""
    seq: int = 0
    event: Literal["plan.proposed"]
    step: str | None = None
    source: str
    plan_hash: str


def _proposal(raw: bytes) -> JournalEvent:
    """The proposal without its plan: the largest line of a journal, never built into dicts."""
    return PlanProposed(**_Proposal.model_validate_json(raw).model_dump(), plan={})


def _compare(
    recorded: Iterable[JournalEvent], produced: Iterable[JournalEvent]
) -> list[Divergence]:
    # Unmatched payloads per key, in order. Recorded ones carry their place in the record
    # (divergences are reported in the record's order); lists, not deques: a key rarely
    # holds more than one, and a deque costs 600 bytes.
    waiting: dict[_Key, list[tuple[int, dict[str, Any]]]] = {}
    extra: dict[_Key, list[dict[str, Any]]] = {}  # first seen, first reported
    found: list[tuple[int, Divergence]] = []
    place = 0
    for mine, theirs in zip_longest(_payloads(recorded), _payloads(produced)):
        if mine is not None:
            key, payload = mine
            if key in extra:
                _match(found, place, key, payload, _first(extra, key))
            else:
                waiting.setdefault(key, []).append((place, payload))
            place += 1
        if theirs is not None:
            key, payload = theirs
            if key in waiting:
                at, recorded_payload = _first(waiting, key)
                _match(found, at, key, recorded_payload, payload)
            else:
                extra.setdefault(key, []).append(payload)
    for (kind, step), pending in waiting.items():
        found += [(at, Divergence(kind, step, payload, None)) for at, payload in pending]
    found.sort(key=lambda item: item[0])
    divergences = [divergence for _, divergence in found]
    for (kind, step), rest in extra.items():
        divergences += [Divergence(kind, step, None, payload) for payload in rest]
    return divergences


def _first(queues: dict[_Key, list[_T]], key: _Key) -> _T:
    """The key's first item, taken out; a key left with none is dropped (most keys are matched)."""
    queue = queues[key]
    item = queue.pop(0)
    if not queue:
        del queues[key]
    return item


def _match(
    found: list[tuple[int, Divergence]],
    place: int,
    key: _Key,
    recorded: dict[str, Any],
    produced: dict[str, Any],
) -> None:
    if recorded != produced:
        found.append((place, Divergence(key[0], key[1], recorded, produced)))


def _payloads(events: Iterable[JournalEvent]) -> Iterator[tuple[_Key, dict[str, Any]]]:
    # A run stopped (by its budget, say) and then resumed has a `run.end` that a later
    # `run.resume` supersedes: the run ended once, with the last one.
    ended: JournalEvent | None = None
    # ... and its steps settled before the stop are noted `step.reused` when it goes on:
    # bookkeeping of the resume, not of the run.
    settled: set[str] = set()
    carried: set[str] = set()
    # A step's attempts are held until its final observation: a step in flight when the
    # run was killed starts over when it resumes (`run.resume` names it in `rerun`), and
    # its attempts before the kill are superseded, as a second `run.end` is.
    unsettled: dict[str, list[tuple[_Key, dict[str, Any]]]] = {}
    for event in events:
        step = event.step
        if event.event == "run.resume":
            ended = None
            carried = set(settled)
            for rerun in getattr(event, "rerun", ()):
                unsettled.pop(rerun, None)
            continue
        if event.event == "observation" and step and getattr(event, "final", False):
            if getattr(event, "ok", False):
                settled.add(step)
            yield from unsettled.pop(step, ())
            yield _payload(event)
            continue
        if event.event == "step.reused" and step in carried:
            carried.discard(step)
            continue
        if event.event == "run.end":
            if ended is not None:
                yield _payload(ended)
            ended = event
            continue
        if event.event in ("action", "observation") and step:
            unsettled.setdefault(step, []).append(_payload(event))
        elif event.event in COMPARED:
            yield _payload(event)
    for held in unsettled.values():  # killed and never resumed: what it did, as it is
        yield from held
    if ended is not None:
        yield _payload(ended)


def _payload(event: JournalEvent) -> tuple[_Key, dict[str, Any]]:
    fields = COMPARED[event.event]
    return (event.event, event.step), {key: getattr(event, key, None) for key in fields}
