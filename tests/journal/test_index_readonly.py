"""A runs folder whose index cannot be written is still listed: the index lives in memory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stepgraph
from stepgraph import Engine, JournalError
from stepgraph.journal import RunIndex
from tests.conftest import EXAMPLES, flat, invoke

MIGRATION = EXAMPLES / "migration.yaml"
SOURCE = str(Path(stepgraph.__file__).parents[1])


def read_only(folder: Path) -> list[str]:
    """A command prefix under which `folder` cannot be written, or a skip.

    As root, file modes do not stop a write: the folder is bound read-only in a mount
    namespace of the command's own (`unshare -m`). Otherwise its mode is enough.
    """
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        pytest.skip("as root, a read-only folder needs unshare(1) for a mount namespace")
    prefix = [
        "unshare", "-m", "sh", "-c",
        'mount --bind -o ro "$0" "$0" && exec "$@"', str(folder),
    ]  # fmt: skip
    probe = subprocess.run(
        [*prefix, "sh", "-c", f"! touch {folder}/probe"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"no read-only bind mount here: {probe.stderr.decode().strip()}")
    return prefix


def test_an_index_location_that_cannot_be_written_keeps_the_index_in_memory(tmp_path):
    """Where the index file cannot be (here a folder holds its name), runs are still listed."""
    runs = tmp_path / "runs"
    done = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    (runs / ".index.sqlite3").mkdir()
    index = RunIndex(runs)
    assert [row.run_id for row in index.runs()] == [done.run_id]
    assert index.get(done.run_id).status == "verified" and index.rebuild() == 1
    assert index.in_memory and "kept in memory" in index.in_memory
    listed = invoke("runs", "--runs", runs)
    assert listed.exit_code == 0 and done.run_id in flat(listed.output)
    assert "kept in memory" in flat(listed.output)


def test_a_damaged_index_file_is_not_an_internal_error(tmp_path):
    """A file that is not SQLite at the index's name: the journals are listed all the same."""
    runs = tmp_path / "runs"
    done = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    (runs / ".index.sqlite3").write_bytes(b"not a database at all" * 100)
    assert [row.run_id for row in RunIndex(runs).runs()] == [done.run_id]


def test_a_runs_folder_that_cannot_be_a_folder_is_a_clear_error(tmp_path):
    """A runs folder under a file: an error naming it, not a traceback."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(JournalError, match="cannot use this as a runs folder"):
        RunIndex(tmp_path / "file" / "runs")
    listed = invoke("runs", "--runs", tmp_path / "file" / "runs")
    assert listed.exit_code not in (0, 1) and "cannot use this as a runs folder" in listed.output


def test_stepgraph_runs_lists_a_read_only_runs_folder(tmp_path):
    """A read-only folder, with an index from before and a journal it has not indexed yet."""
    runs = tmp_path / "runs"
    first = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    RunIndex(runs).runs()  # the index file exists and holds a.jsonl
    second = Engine().run(MIGRATION, journal=runs / "b.jsonl")
    fresh = tmp_path / "fresh"
    shutil.copytree(runs, fresh, ignore=shutil.ignore_patterns(".index.sqlite3"))
    for folder in (runs, fresh):
        prefix = read_only(folder)
        try:
            listed = subprocess.run(
                [*prefix, sys.executable, "-m", "stepgraph", "runs", "--runs", str(folder)],
                capture_output=True, text=True, check=False,
                env={**os.environ, "PYTHONPATH": SOURCE, "COLUMNS": "200"},
            )  # fmt: skip
        finally:
            folder.chmod(0o755)
        assert listed.returncode == 0, listed.stderr
        assert first.run_id in listed.stdout and second.run_id in listed.stdout
        assert "kept in memory" in flat(listed.stderr)
