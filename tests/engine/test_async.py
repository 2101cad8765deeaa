"""The async API: `await engine.arun(...)` and `async for event in engine.events(...)`."""

import asyncio

import pytest

from stepgraph import Engine, PlannerNotConfiguredError, Task
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES

MIGRATION = EXAMPLES / "migration.yaml"


def test_arun_and_events_give_the_result_and_the_journal_s_events_in_order(tmp_path):
    engine = Engine()

    async def main():
        result = await engine.arun(MIGRATION, journal=tmp_path / "a.jsonl")
        events = [e async for e in engine.events(MIGRATION, journal=tmp_path / "b.jsonl")]
        return result, events

    result, events = asyncio.run(main())
    assert result.answer.startswith("3 nights")
    written = read_journal(tmp_path / "b.jsonl").events
    assert [(e.seq, e.event, e.step) for e in events] == [(e.seq, e.event, e.step) for e in written]
    assert events[0].event == "run.start" and events[-1].event == "run.end"


def test_a_stream_raises_the_run_s_error_after_its_events(tmp_path):
    engine = Engine()
    seen = []

    async def main():
        async for event in engine.events(Task(goal="no plan here"), journal=tmp_path / "c.jsonl"):
            seen.append(event.event)

    with pytest.raises(PlannerNotConfiguredError):
        asyncio.run(main())


def test_the_old_name_stream_still_yields_the_events_and_warns(tmp_path):
    """`Engine.stream(task)` is deprecated for `Engine.events(task)`: same events, a warning."""
    engine = Engine()

    async def main():
        return [e.event async for e in engine.stream(MIGRATION, journal=tmp_path / "d.jsonl")]

    with pytest.warns(DeprecationWarning, match=r"Engine\.events"):
        kinds = asyncio.run(main())
    assert kinds == [e.event for e in read_journal(tmp_path / "d.jsonl").events]
