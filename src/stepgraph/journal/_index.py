"""The run index: one SQLite row per journal in a runs folder, rebuilt from the journals any time.

The journals stay the truth; the index (`.index.sqlite3` in the runs folder, standard
library `sqlite3`) only makes listing and finding runs fast. `refresh()` re-reads the
journals whose size or modification time changed since they were indexed and drops
rows whose file is gone; every read calls it first, which keeps the index current as
runs write (a stat per journal); `rebuild()` starts again from nothing. Lines are read
with orjson and only the fields the index needs are looked at: a rebuild must not cost
a full event parse.

A run without `run.end` is "running" only while a process holds its journal (the
writer's lock, `_liveness.py`); once none does, its process died (`kill -9`, a lost
machine) and the index says "interrupted", which `stepgraph resume` finishes. Where the
index cannot be written (a read-only runs folder, a damaged file), it is kept in memory
and rebuilt from the journals by each process: browsing needs only to read them.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from stat import S_ISLNK, S_ISREG
from typing import Any

import orjson

from stepgraph.exceptions import JournalError
from stepgraph.journal._liveness import writer_alive

INDEX_NAME = ".index.sqlite3"

# Events after `plan.awaiting` that mean it was answered (the engine's parking agrees).
_ANSWERED = frozenset(
    {"plan.approved", "plan.rejected", "plan.edited", "plan.revise", "run.end", "action"}
)

# The kinds whose fields the index reads; a line of any other kind is looked at for its kind.
_PARSED = frozenset({b"run.start", b"run.end", b"answer"})
_EVENT_KIND = re.compile(rb'"event"\s*:\s*"([A-Za-z0-9_.]+)"')

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    path TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    task TEXT NOT NULL,
    goal TEXT NOT NULL,
    status TEXT NOT NULL,
    started TEXT NOT NULL,
    duration_ms REAL,
    answer TEXT,
    parent TEXT,
    replay_of TEXT,
    fork_step TEXT,
    awaiting INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS not_journals (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_id ON runs (run_id);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, started);
"""
_COLUMNS = (
    "path",
    "run_id",
    "task",
    "goal",
    "status",
    "started",
    "duration_ms",
    "answer",
    "parent",
    "replay_of",
    "fork_step",
    "awaiting",
)


@dataclass(frozen=True)
class RunRow:
    """One run as the index knows it."""

    path: str
    run_id: str
    task: str
    goal: str
    # run.end's status; else awaiting_approval, running (no end yet, and a process writes
    # it), or interrupted (no end, and no process holds the journal any more)
    status: str
    started: str
    duration_ms: float | None
    answer: str | None
    parent: str | None  # the run id this one was forked from
    replay_of: str | None  # the run id this one replays
    fork_step: str | None
    awaiting: bool

    def as_dict(self) -> dict[str, Any]:
        """The row as plain data (for JSON)."""
        return asdict(self)


def summarise(path: Path, lines: Iterable[bytes]) -> RunRow | None:
    """The index row of one journal's lines, or None when they hold no `run.start`.

    The lines are read one at a time (a file's own iteration), so a journal of any size
    costs one line; a line whose only kind needs no field (most of them) is not parsed.
    """
    start: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    answer: str | None = None
    awaiting = False
    for line in lines:
        if not line.strip():
            continue
        kinds = _EVENT_KIND.findall(line)
        # A cut-off line (no closing brace) is parsed, and skipped, as before.
        if len(kinds) == 1 and kinds[0] not in _PARSED and line.rstrip().endswith(b"}"):
            kind = kinds[0].decode()
            if kind == "plan.awaiting":
                awaiting = True
            elif kind in _ANSWERED:
                awaiting = False
            continue
        if start is not None and kinds == [b"run.start"]:
            continue  # a second run.start is not read: the first one names the run
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a truncated last line: the reader reports it, the index skips it
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if kind == "run.start" and start is None:
            start = event
        elif kind == "run.end":
            end = event
        elif kind == "answer":
            answer = str(event.get("text", ""))
        if kind == "plan.awaiting":
            awaiting = True
        elif kind in _ANSWERED:
            awaiting = False
    if start is None:
        return None
    parent, replay_of = start.get("parent"), start.get("replay_of")
    status = str(end["status"]) if end else ("awaiting_approval" if awaiting else "running")
    return RunRow(
        path=str(path),
        run_id=str(start.get("run_id", "")),
        task=str(start.get("task", "")),
        goal=str(start.get("goal", "")),
        status=status,
        started=str(start.get("ts", "")),
        duration_ms=float(end["duration_ms"]) if end and "duration_ms" in end else None,
        answer=answer,
        parent=str(parent["run_id"]) if isinstance(parent, dict) else None,
        replay_of=str(replay_of["run_id"]) if isinstance(replay_of, dict) else None,
        fork_step=str(parent.get("from_step")) if isinstance(parent, dict) else None,
        awaiting=awaiting and end is None,
    )


# What SQLite says of a database file it cannot keep: the index goes to memory then.
_UNWRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_NOTADB",
               "SQLITE_CORRUPT", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_AUTH")  # fmt: skip


class RunIndex:
    """The SQLite index of the journals in one runs folder."""

    def __init__(
        self,
        runs_dir: Path | str,
        database: Path | str | None = None,
        *,
        schemas: tuple[str, ...] = (),
    ) -> None:
        """`schemas`: the tables of what else is derived from these journals (plan memory)."""
        self.runs_dir = Path(runs_dir)
        self._schema = "\n".join([_SCHEMA, *schemas])
        self.database = Path(database) if database else self.runs_dir / INDEX_NAME
        self.in_memory: str | None = None  # why the index is not kept in its file, if it is not
        self._memory: sqlite3.Connection | None = None
        self._memory_lock = threading.Lock()
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise JournalError(
                f"cannot use this as a runs folder: {e.strerror or e}", path=str(self.runs_dir)
            ) from e
        try:
            with self._connect() as db:
                db.executescript(self._schema)
        except sqlite3.Error as e:
            self._to_memory(e)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self._memory is not None:
            with self._memory_lock, self._memory:
                yield self._memory
            return
        # One connection per operation: safe from any thread, and cheap for SQLite.
        missing = not self.database.exists()  # deleted under a long-lived index: made again
        with closing(sqlite3.connect(self.database, timeout=10)) as db, db:
            if missing:
                db.executescript(self._schema)
            yield db

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """The index's database, for tables derived from the same journals (plan memory).

        A transaction: committed when the block ends, rolled back if it raises.
        """
        with self._connect() as db:
            yield db

    def _to_memory(self, error: sqlite3.Error) -> None:
        """Keep the index in memory from now on, if `error` says its file cannot be kept."""
        name = getattr(error, "sqlite_errorname", "") or ""
        if self._memory is not None or not name.startswith(_UNWRITABLE):
            raise error
        self.in_memory = (
            f"the run index cannot be written in the runs folder ({error}): it is kept in "
            "memory instead, rebuilt from the journals"
        )
        self._memory = sqlite3.connect(":memory:", check_same_thread=False)
        with self._connect() as db:
            db.executescript(self._schema)

    def rebuild(self) -> int:
        """Index every journal again from nothing; returns how many runs are indexed."""
        try:
            with self._connect() as db:
                db.execute("DELETE FROM runs")
                db.execute("DELETE FROM not_journals")
        except sqlite3.Error as e:
            self._to_memory(e)  # starts empty: nothing to delete
        self.refresh()
        with self._connect() as db:
            return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])

    def refresh(self) -> int:
        """Re-read the journals that changed since indexed, drop vanished ones; returns changes.

        Only regular files inside the runs folder are read: a FIFO would hang every
        listing, and a link to a journal elsewhere would let that journal be served and
        decided on. A file that is not a journal is remembered (by size and time) and
        not read again until it changes. A running run whose journal no process holds
        any more is marked interrupted.
        """
        try:
            return self._refresh()
        except sqlite3.Error as e:  # a read-only folder: the first write says so
            self._to_memory(e)
            return self._refresh()

    def _refresh(self) -> int:
        with self._connect() as db:
            known = {
                path: (mtime, size)
                for path, mtime, size in db.execute("SELECT path, mtime_ns, size FROM runs")
            }
            skipped = {
                path: (mtime, size)
                for path, mtime, size in db.execute("SELECT path, mtime_ns, size FROM not_journals")
            }
            seen: set[str] = set()
            changed = 0
            for path in sorted(self.runs_dir.glob("*.jsonl")):
                stat = self._journal_stat(path)
                if stat is None:
                    continue
                key = str(path)
                seen.add(key)
                stamp = (stat.st_mtime_ns, stat.st_size)
                if known.get(key) == stamp or skipped.get(key) == stamp:
                    continue
                changed += 1
                self._index_one(db, path, *stamp)
            gone = [(path,) for path in known if path not in seen]
            db.executemany("DELETE FROM runs WHERE path = ?", gone)
            db.executemany(
                "DELETE FROM not_journals WHERE path = ?",
                [(path,) for path in skipped if path not in seen],
            )
            changed += self._mark_interrupted(db)
        return changed + len(gone)

    def _mark_interrupted(self, db: sqlite3.Connection) -> int:
        """Mark interrupted the running runs whose journal no process holds; returns how many.

        Only when the file is as it was indexed: a run that wrote its end and closed its
        journal since is read again next time, not called interrupted.
        """
        dead = []
        for path, mtime, size in db.execute(
            "SELECT path, mtime_ns, size FROM runs WHERE status = 'running'"
        ).fetchall():
            if writer_alive(path) is not False:
                continue
            try:
                stat = os.stat(path)
            except OSError:
                continue
            if (stat.st_mtime_ns, stat.st_size) == (mtime, size):
                dead.append((path,))
        db.executemany("UPDATE runs SET status = 'interrupted' WHERE path = ?", dead)
        return len(dead)

    def _journal_stat(self, path: Path) -> os.stat_result | None:
        """The file's stat when it may be read as a journal of this folder, else None."""
        try:
            stat = os.lstat(path)
            if S_ISLNK(stat.st_mode):
                if not path.resolve(strict=True).is_relative_to(self.runs_dir.resolve()):
                    return None  # a link out of the folder: never served from here
                stat = os.stat(path)
        except (OSError, RuntimeError):  # gone, or a link loop
            return None
        return stat if S_ISREG(stat.st_mode) else None

    def _index_one(self, db: sqlite3.Connection, path: Path, mtime_ns: int, size: int) -> None:
        try:
            # O_NONBLOCK: should the file have become a FIFO since its stat, opening does not
            # wait for a writer; the fstat then refuses it.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as file:
                row = summarise(path, file) if S_ISREG(os.fstat(fd).st_mode) else None
        except OSError:
            row = None
        if row is None:  # not a journal (yet): remembered, looked at again when it changes
            db.execute("DELETE FROM runs WHERE path = ?", (str(path),))
            db.execute(
                "INSERT OR REPLACE INTO not_journals (path, mtime_ns, size) VALUES (?, ?, ?)",
                (str(path), mtime_ns, size),
            )
            return
        db.execute("DELETE FROM not_journals WHERE path = ?", (str(path),))
        values = [getattr(row, column) for column in _COLUMNS]
        db.execute(
            f"INSERT OR REPLACE INTO runs ({', '.join(_COLUMNS)}, mtime_ns, size) "
            f"VALUES ({', '.join('?' * (len(_COLUMNS) + 2))})",
            [*values, mtime_ns, size],
        )

    def runs(
        self,
        *,
        status: str | None = None,
        task: str | None = None,
        limit: int = 1000,
        text: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[RunRow]:
        """Runs, newest first, optionally of one status and/or task (refreshed first).

        `text` is looked for (case aside) in the goal, the answer, the task's name and the
        run id; `since` and `until` bound when the run started (ISO times in UTC, as
        `started` holds them: ``2025-06-01T00:00:00Z``; `until` excluded).
        """
        self.refresh()
        where, args = [], []
        if status:
            where.append("status = ?")
            args.append(status)
        if task:
            where.append("task = ?")
            args.append(task)
        if text:
            pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"
            where.append(
                "(goal LIKE ? ESCAPE '\\' OR answer LIKE ? ESCAPE '\\' "
                "OR task LIKE ? ESCAPE '\\' OR run_id LIKE ? ESCAPE '\\')"
            )
            args.extend([pattern] * 4)
        if since:
            where.append("started >= ?")
            args.append(since)
        if until:
            where.append("started < ?")
            args.append(until)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY started DESC, path DESC LIMIT ?"
        with self._connect() as db:
            return [_row(values) for values in db.execute(sql, [*args, limit])]

    def get(self, run_id: str) -> RunRow | None:
        """The run with this id (its own journal, not a replay of it), or None."""
        self.refresh()
        with self._connect() as db:
            found = db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ? "
                "ORDER BY replay_of IS NOT NULL, started LIMIT 1",
                (run_id,),
            ).fetchone()
        return _row(found) if found else None

    def at(self, path: Path | str) -> RunRow | None:
        """The run whose journal is at `path`, or None."""
        self.refresh()
        with self._connect() as db:
            found = db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE path = ?", (str(path),)
            ).fetchone()
        return _row(found) if found else None

    def children(self, run_id: str) -> list[RunRow]:
        """The forks of a run."""
        self.refresh()
        with self._connect() as db:
            rows = db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE parent = ? ORDER BY started",
                (run_id,),
            )
            return [_row(values) for values in rows]


def _row(values: tuple[Any, ...]) -> RunRow:
    data = dict(zip(_COLUMNS, values, strict=True))
    data["awaiting"] = bool(data["awaiting"])
    return RunRow(**data)
