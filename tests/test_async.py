"""The async API: `await engine.arun(...)` and `async for event in engine.stream(...)`."""

import asyncio

import pytest

from stepgraph import Engine, PlannerNotConfiguredError, Task
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES

MIGRATION = EXAMPLES / "migration.yaml"


def test_arun_and_stream_give_the_result_and_the_journal_s_events_in_order(tmp_path):
    engine = Engine()

    async def main():
        result = await engine.arun(MIGRATION, journal=tmp_path / "a.jsonl")
        events = [e async for e in engine.stream(MIGRATION, journal=tmp_path / "b.jsonl")]
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
        async for event in engine.stream(Task(goal="no plan here"), journal=tmp_path / "c.jsonl"):
            seen.append(event.event)

    with pytest.raises(PlannerNotConfiguredError):
        asyncio.run(main())
