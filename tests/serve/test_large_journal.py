"""A large journal is served lazily: pages of events, a one-pass summary, little memory."""

from __future__ import annotations

import json
import re
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepgraph.journal import read_journal
from tests.serve.conftest import Server, start_server

BIG = 20 * 2**20  # bytes of the journal these tests serve
_SEQ = re.compile(rb'"seq":\d+')
_KIND = re.compile(rb'"event":"([a-z.]+)"')


def grown(small: Path, out: Path, size: int) -> int:
    """A journal of about `size` bytes: the run's step events repeated, seq renumbered.

    The run's start and plan come first and its checks, answer and end last, as written;
    returns the number of events.
    """
    lines = small.read_bytes().splitlines()
    kinds = [_KIND.search(line).group(1) for line in lines]  # type: ignore[union-attr]
    first, last = kinds.index(b"thought"), kinds.index(b"check")
    head, middle, tail = lines[:first], lines[first:last], lines[last:]
    run_id = json.loads(lines[0])["run_id"].encode()
    fresh = uuid.uuid4().hex[:12].encode()
    seq = 0
    with out.open("wb") as file:

        def put(line: bytes) -> None:
            nonlocal seq
            seq += 1
            line = _SEQ.sub(b'"seq":%d' % seq, line.replace(run_id, fresh), count=1)
            file.write(line + b"\n")

        for line in head:
            put(line)
        block = sum(len(line) + 1 for line in middle)
        for _ in range(max(1, (size - block) // block)):
            for line in middle:
                put(line)
        for line in tail:
            put(line)
    return seq


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from start_server(tmp_path_factory.mktemp("large"))


@pytest.fixture(scope="module")
def big(site: Server) -> tuple[str, Path, int]:
    """A finished run's journal grown to about `BIG` bytes: (run id, path, events)."""
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    small = Path(site.manager.row(run_id).path)
    out = site.runs / "20991231T000000.000000Z-migration-big.jsonl"
    events = grown(small, out, BIG)
    row = site.manager.index.at(out)
    assert row is not None and row.status == "verified"
    return row.run_id, out, events


def peak_of(call: Callable[[], Any]) -> tuple[Any, int]:
    """What `call` returns, and the peak of memory traced while it ran (the server's too)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_events_api_pages_through_a_large_journal_holding_a_page_at_a_time(site, big):
    """after/limit/offset walk every event once, in order; a page costs far less than the file."""
    run_id, path, events = big
    size = path.stat().st_size
    seqs: list[int] = []
    after, offset, pages, worst = 0, 0, 0, 0
    while True:
        url = f"/api/runs/{run_id}/events/page?after={after}&offset={offset}&limit=5000"
        if pages % 8 == 0:  # traced memory slows every allocation: a sample of the pages
            response, peak = peak_of(lambda: site.client.get(url))  # noqa: B023 - called here
            worst = max(worst, peak)
        else:
            response = site.client.get(url)
        assert response.status_code == 200, response.text
        page = response.json()
        seqs += [event["seq"] for event in page["events"]]
        after, offset, pages = page["after"], page["offset"], pages + 1
        if not page["more"]:
            break
        if pages == 3:  # the rest from `after` alone: the lines before it are skipped
            rest = site.client.get(f"/api/runs/{run_id}/events/page", params={"after": after})
            assert rest.json()["events"][0]["seq"] == after + 1
    assert seqs == list(range(1, events + 1))
    assert page["events"][-1]["event"] == "run.end"
    assert worst < size / 4, f"a page peaked at {worst:,} bytes for a {size:,}-byte journal"


def test_a_page_of_events_defaults_to_500_and_refuses_an_offset_inside_a_line(site, big):
    run_id, _, _ = big
    page = site.client.get(f"/api/runs/{run_id}/events/page").json()
    assert [e["seq"] for e in page["events"]] == list(range(1, 501)) and page["more"] is True
    bad = site.client.get(f"/api/runs/{run_id}/events/page", params={"offset": page["offset"] + 3})
    assert bad.status_code == 400 and "start of a line" in bad.json()["detail"]
    assert str(site.runs) not in bad.text  # the server's folder is not told


def test_the_run_summary_of_a_large_journal_is_read_in_one_pass_under_its_size(site, big):
    """/api/runs/{id}: answer, linked numbers, verdicts and step states, memory < size / 4."""
    run_id, path, events = big
    size = path.stat().st_size
    response, peak = peak_of(lambda: site.client.get(f"/api/runs/{run_id}"))
    result = response.json()
    assert result["status"] == "verified" and result["last_seq"] == events
    assert result["answer"] == "3 nights (962.28 GB per night; 2,500 GB in all)"
    linked = {part["text"]: part["step"] for part in result["answer_parts"] if part["step"]}
    assert linked == {"3": "nights", "962.28": "per_night", "2,500": "total"}
    assert result["steps"] == dict.fromkeys(["nights", "per_night", "rate", "total"], "verified")
    assert result["values"]["nights"] == "3" and all(v["passed"] for v in result["verdicts"])
    assert peak < size / 4, f"the summary peaked at {peak:,} bytes for a {size:,}-byte journal"


def test_a_large_journals_run_page_says_it_shows_a_summary_and_follows_from_its_end(
    site, big, monkeypatch
):
    """Over the limit, the page is drawn from the digest (states on the nodes) and says so."""
    run_id, path, events = big
    monkeypatch.setattr("stepgraph.journal._digest.LARGE_JOURNAL", 2**20)
    page, peak = peak_of(lambda: site.client.get(f"/runs/{run_id}"))
    assert page.status_code == 200
    assert 'id="large-journal"' in page.text and "/events/page" in page.text
    assert f'data-after="{events}"' in page.text
    assert 'class="node verified" data-step="nights"' in page.text
    assert peak < path.stat().st_size / 4
    offset = re.search(r'data-offset="(\d+)"', page.text).group(1)  # type: ignore[union-attr]
    # The page follows from there: the run has ended, so the stream ends at once.
    with site.client.stream(
        "GET", f"/api/runs/{run_id}/events", params={"after": events, "offset": offset}
    ) as stream:
        lines = list(stream.iter_lines())
    assert "event: end" in lines and not any(line.startswith('data: {"') for line in lines)


def test_a_small_journals_run_page_replays_its_events_as_before(site):
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    page = site.client.get(f"/runs/{run_id}").text
    assert 'id="large-journal"' not in page and "data-after" not in page
    assert 'class="node pending" data-step="nights"' in page


def test_a_plan_too_large_to_draw_is_listed_by_state_instead(site, monkeypatch):
    """Over the drawing limit the page says the graph is not drawn and counts the steps."""
    monkeypatch.setattr("stepgraph.serve._views.MAX_DRAWN_STEPS", 3)
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    page = site.client.get(f"/runs/{run_id}").text
    assert 'id="not-drawn"' in page and "drawn up to 3" in page and '<svg id="graph"' not in page
    assert 'id="step-states"' in page and "failed" in page


def test_the_approval_page_of_a_long_parked_journal_reads_only_what_a_review_shows(site, big):
    """A run parked after many events: the review skips them (memory < size / 4)."""
    _, path, _ = big
    lines = path.read_bytes().splitlines()
    first_check = next(i for i, line in enumerate(lines) if b'"event":"check"' in line)
    head = [json.loads(line) for line in lines[:3]]
    proposed = next(e for e in head if e["event"] == "plan.proposed")
    approved = next(e for e in head if e["event"] == "plan.approved")
    run_id = uuid.uuid4().hex[:12]
    parked = site.runs / "20991231T000001.000000Z-migration-parked.jsonl"
    with parked.open("wb") as file:
        for line in lines[:first_check]:
            file.write(line.replace(proposed["run_id"].encode(), run_id.encode()) + b"\n")
        waiting = {
            "run_id": run_id,
            "step": None,
            "plan_hash": proposed["plan_hash"],
            "approval_hash": approved["approval_hash"],
            "event": "plan.awaiting",
            "seq": first_check + 1,
            "ts": approved["ts"],
        }
        file.write(json.dumps(waiting).encode() + b"\n")
    assert site.manager.index.get(run_id).status == "awaiting_approval"
    size = parked.stat().st_size
    review, peak = peak_of(lambda: site.client.get(f"/api/runs/{run_id}/plan"))
    assert review.status_code == 200 and review.json()["approval_hash"] == approved["approval_hash"]
    assert peak < size / 4, f"the review peaked at {peak:,} bytes for a {size:,}-byte journal"
    page = site.client.get(f"/runs/{run_id}/approve")
    assert page.status_code == 200 and 'id="plan-table"' in page.text


def test_following_a_run_as_it_is_written_still_streams_every_event(site):
    """The tail reads page by page: a live run's events all arrive, then the end."""
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    with (
        httpx.Client(base_url=site.url, timeout=30) as client,
        client.stream("GET", f"/api/runs/{run_id}/events") as stream,
    ):
        got = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith('data: {"')]
    journal = read_journal(Path(site.manager.row(run_id).path))
    assert [e["seq"] for e in got] == [e.seq for e in journal.events]
