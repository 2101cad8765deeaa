"""Keep-alive comments on the event stream: a parked run's page keeps hearing it via proxies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from stepgraph.serve._keepalive import KEEPALIVE_SECONDS, with_keepalive
from tests.serve.conftest import start_server


def test_an_idle_event_stream_sends_a_ping_within_the_interval(tmp_path):
    """A parked run writes nothing: the stream said nothing either, and proxies dropped it."""
    for server in start_server(tmp_path, keepalive=0.2):
        response = server.post("/api/runs", task="migration.yaml", approval="ask")
        run_id = response.json()["run_id"]
        server.wait_status(run_id, "awaiting_approval")
        with server.client.stream("GET", f"/api/runs/{run_id}/events") as stream:
            lines = stream.iter_lines()
            events = []
            for line in lines:  # the recorded events come first, at once
                if line.startswith("data: "):
                    events.append(line)
                if '"event":"plan.awaiting"' in line.replace(" ", ""):
                    break
            quiet_since = time.monotonic()
            pings = []
            for line in lines:
                if line.startswith(":"):
                    pings.append((line, time.monotonic() - quiet_since))
                    if len(pings) == 2:
                        break
        assert [line for line, _ in pings] == [": ping", ": ping"]
        assert pings[0][1] < 2 and pings[1][1] < 4  # 0.2 s apart, with room for a slow host
        assert events and events[-1].startswith("data: ")


def test_a_busy_stream_sends_no_pings_and_ends_with_its_source():
    async def source() -> AsyncIterator[int]:
        for number in range(3):
            yield number
            await asyncio.sleep(0.001)

    async def collect(every: float) -> list[int | None]:
        return [item async for item in with_keepalive(source(), every)]

    assert asyncio.run(collect(5)) == [0, 1, 2]


def test_pings_fill_the_quiet_and_keep_the_source_going():
    """The item awaited across the pings is the same one: the source is not cancelled."""

    async def source() -> AsyncIterator[str]:
        yield "first"
        await asyncio.sleep(0.25)
        yield "after a pause"

    async def collect() -> list[str | None]:
        return [item async for item in with_keepalive(source(), 0.05)]

    items = asyncio.run(collect())
    assert items[0] == "first" and items[-1] == "after a pause"
    assert 2 <= items.count(None) <= 5 and len(items) == items.count(None) + 2
    assert KEEPALIVE_SECONDS < 60  # under a proxy's idle timeout (nginx: 60 s)
