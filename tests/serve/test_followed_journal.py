"""A followed journal that changes under the stream: the stream ends and says why."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import Server
from tests.serve.test_api import parked_run


def _replace(path: Path) -> None:
    copy = path.with_name("copy.tmp")  # not a .jsonl: the index never sees it
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # what an editor or `mv` does: a new file at the same name


def _truncate(path: Path) -> None:
    os.truncate(path, 10)


def _remove(path: Path) -> None:
    path.unlink()


def _end_of(lines: Iterator[str]) -> dict[str, str]:
    """The data of the stream's `end` event (the stream must end: the client times out)."""
    for line in lines:
        if line == "event: end":
            data = next(lines)
            assert data.startswith("data: ")
            return dict(json.loads(data[6:]))
    raise AssertionError("the stream stopped without an end event")


@pytest.mark.parametrize(
    ("change", "reason", "said"),
    [
        (_replace, "journal_replaced", "replaced by another file"),
        (_truncate, "journal_truncated", "cut shorter"),
        (_remove, "journal_removed", "removed"),
    ],
)
def test_a_stream_whose_journal_is_replaced_truncated_or_removed_ends_saying_so(
    server: Server, change: Callable[[Path], None], reason: str, said: str
) -> None:
    """A parked run's stream waits for its decision; a change to its file ends it, and says why."""
    run_id = parked_run(server)
    path = Path(server.manager.row(run_id).path)
    # Without the fix the stream never ends: the client's read timeout fails the test.
    with (
        httpx.Client(base_url=server.url, timeout=10) as client,
        client.stream("GET", f"/api/runs/{run_id}/events") as stream,
    ):
        lines = stream.iter_lines()
        for line in lines:  # the stream is live: it has reached the wait for a decision
            if line.startswith("data: ") and '"plan.awaiting"' in line:
                break
        change(path)
        end = _end_of(lines)
    assert end["reason"] == reason and said in end["message"]


def test_a_stream_that_ends_with_its_run_says_nothing_more(server: Server) -> None:
    """The ordinary end stays `data: {}`: a page tells it from an end that needs a notice."""
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    with server.client.stream("GET", f"/api/runs/{run_id}/events") as stream:
        assert _end_of(stream.iter_lines()) == {}
