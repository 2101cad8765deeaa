"""The run index: rebuilt from the journals at any time, current as runs write."""

import os
import threading

import pytest

from stepgraph import ApprovalPolicy, Engine
from stepgraph.engine import replay
from stepgraph.journal import RunIndex
from tests.conftest import EXAMPLES, flat, invoke

MIGRATION = EXAMPLES / "migration.yaml"


def test_the_index_holds_task_goal_status_duration_answer_and_a_fork_s_parent(tmp_path):
    runs = tmp_path / "runs"
    done = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    parked = Engine().run(MIGRATION, journal=runs / "b.jsonl", approval=ApprovalPolicy.ASK)
    replay(runs / "a.jsonl", from_step="nights", out=runs / "a.fork.jsonl")
    index = RunIndex(runs)
    rows = {row.path.rsplit("/", 1)[-1]: row for row in index.runs()}
    assert set(rows) == {"a.jsonl", "b.jsonl", "a.fork.jsonl"}
    a, b, fork = rows["a.jsonl"], rows["b.jsonl"], rows["a.fork.jsonl"]
    assert (a.run_id, a.task, a.status, a.answer) == (
        done.run_id,
        "migration",
        "verified",
        done.answer,
    )
    assert a.goal.startswith("Nights needed") and a.duration_ms > 0 and not a.awaiting
    assert (b.run_id, b.status, b.awaiting, b.duration_ms) == (
        parked.run_id,
        "awaiting_approval",
        True,
        None,
    )
    assert (fork.parent, fork.fork_step) == (done.run_id, "nights")
    assert index.children(done.run_id) == [fork]
    assert {r.run_id for r in index.runs(status="verified")} == {done.run_id, fork.run_id}
    assert index.get(done.run_id) == a


def test_a_rebuild_from_the_journals_alone_gives_the_same_rows(tmp_path):
    runs = tmp_path / "runs"
    for name in "abc":
        Engine().run(MIGRATION, journal=runs / f"{name}.jsonl")
    before = RunIndex(runs).runs()
    (runs / ".index.sqlite3").unlink()
    index = RunIndex(runs)
    assert index.rebuild() == 3 and index.runs() == before


def test_the_index_follows_journals_that_change_appear_and_vanish(tmp_path):
    runs = tmp_path / "runs"
    Engine().run(MIGRATION, journal=runs / "a.jsonl", approval=ApprovalPolicy.ASK)
    index = RunIndex(runs)
    [row] = index.runs()
    assert row.status == "awaiting_approval"
    invoke("approve", row.run_id, "--by", "ann", "--runs", runs)
    assert index.get(row.run_id).status == "verified"
    Engine().run(MIGRATION, journal=runs / "b.jsonl")
    assert len(index.runs()) == 2
    os.remove(runs / "a.jsonl")
    assert [r.path.rsplit("/", 1)[-1] for r in index.runs()] == ["b.jsonl"]


def test_files_that_are_not_journals_are_left_out_and_a_cut_off_one_is_interrupted(tmp_path):
    """A journal cut off mid-line that no process holds is a run whose process died."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "notes.jsonl").write_text("hello\n[1, 2]\n")
    Engine().run(MIGRATION, journal=runs / "a.jsonl")
    lines = (runs / "a.jsonl").read_text().splitlines()
    (runs / "cut.jsonl").write_text("\n".join(lines[:5]) + '\n{"event": "acti')
    rows = {r.path.rsplit("/", 1)[-1]: r for r in RunIndex(runs).runs()}
    assert set(rows) == {"a.jsonl", "cut.jsonl"} and rows["cut.jsonl"].status == "interrupted"


def test_stepgraph_runs_lists_and_filters_by_status(tmp_path):
    runs = tmp_path / "runs"
    verified = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    waiting = Engine().run(MIGRATION, journal=runs / "b.jsonl", approval=ApprovalPolicy.ASK)
    listed = flat(invoke("runs", "--runs", runs).output)
    assert verified.run_id in listed and waiting.run_id in listed and "3 nights" in listed
    only = flat(invoke("runs", "--runs", runs, "--status", "awaiting_approval", "--rebuild").output)
    assert waiting.run_id in only and verified.run_id not in only


def test_a_fifo_named_like_a_journal_is_skipped_without_opening_it(tmp_path):
    """A FIFO `x.jsonl` would block a reader forever: listing never opens it."""
    runs = tmp_path / "runs"
    Engine().run(MIGRATION, journal=runs / "a.jsonl")
    os.mkfifo(runs / "x.jsonl")
    done = threading.Event()
    rows: list[str] = []

    def listing() -> None:
        rows.extend(r.path.rsplit("/", 1)[-1] for r in RunIndex(runs).runs())
        done.set()

    threading.Thread(target=listing, daemon=True).start()
    assert done.wait(10), "listing hung on the FIFO"
    assert rows == ["a.jsonl"]


def test_a_link_out_of_the_runs_folder_is_not_indexed_and_one_inside_it_is(tmp_path):
    """A symlink to a journal elsewhere is neither listed nor found; a link within is."""
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    outside = Engine().run(
        MIGRATION, journal=elsewhere / "secret.jsonl", approval=ApprovalPolicy.ASK
    )
    inside = Engine().run(MIGRATION, journal=runs / "sub" / "kept.jsonl")
    (runs / "secret.jsonl").symlink_to(elsewhere / "secret.jsonl")
    (runs / "kept.jsonl").symlink_to(runs / "sub" / "kept.jsonl")
    (runs / "loop.jsonl").symlink_to(runs / "loop.jsonl")
    index = RunIndex(runs)
    assert [r.path.rsplit("/", 1)[-1] for r in index.runs()] == ["kept.jsonl"]
    assert index.get(outside.run_id) is None and index.get(inside.run_id) is not None


def test_a_file_that_is_not_a_journal_is_read_once_until_it_changes(tmp_path, monkeypatch):
    """A big non-journal `.jsonl` is remembered by size and time, not re-read per listing."""
    runs = tmp_path / "runs"
    runs.mkdir()
    notes = runs / "notes.jsonl"
    notes.write_text('{"event": "something else"}\n' * 1000)
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    index = RunIndex(runs)
    for _ in range(3):
        assert index.runs() == []
    assert opened.count(str(notes)) == 1
    Engine().run(MIGRATION, journal=tmp_path / "real.jsonl")
    notes.write_bytes((tmp_path / "real.jsonl").read_bytes())  # now it is a journal
    assert [r.path for r in index.runs()] == [str(notes)]
    assert opened.count(str(notes)) == 2
    notes.unlink()
    assert index.runs() == []


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_stepgraph_runs_fits_the_terminal_and_keeps_each_run_id_whole(tmp_path, columns):
    """The table was drawn 160 wide whatever the terminal; now it folds the free text."""
    runs = tmp_path / "runs"
    done = [Engine().run(MIGRATION, journal=runs / f"{name}.jsonl") for name in "ab"]
    listed = invoke("runs", "--runs", runs, env={"COLUMNS": str(columns)})
    lines = listed.output.splitlines()
    assert listed.exit_code == 0 and max(len(line) for line in lines) <= columns
    assert all(result.run_id in listed.output for result in done)  # what `approve` takes
    assert "verified" in listed.output and "3 nights" in listed.output
    if columns == 200:  # room enough: one line a run
        assert sum(result.run_id in line for line in lines for result in done) == 2
        assert any("3 nights (962.28 GB per night; 2,500 GB in all)" in line for line in lines)
