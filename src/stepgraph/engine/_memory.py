"""Plan memory: the verified plans of typed goals in a runs folder, found again by their goal.

The runs folder is the memory. Its journals say which runs verified, and with which plan;
what is derived from them (a row per remembered run, a full-text index of their goals,
SQLite FTS5 ranked by BM25) lives in the run index's database and is rebuilt from the
journals as the index is: deleting it loses nothing, and a deleted journal is forgotten
with it. Only a run the user forgets outlives a rebuild, as one line of
`.memory-forgotten` in the folder: forgetting is the user's word, not the journals'.

Remembered: runs that ended `verified` with this machine's seal (`run.end.seal`, an HMAC by
the approval key of the run id, goal, plan hash and tool fingerprints), of a goal typed
without a plan or inputs of its own, that are neither replays nor forks. A goal of the same
shape (`goal_shape`) gets the newest such plan re-bound (`_recall.rebind`) when the tools it
calls are unchanged; other goals get the nearest ones as worked examples.

The seal is checked each time a row is used, not when it is indexed: the index lives in the
runs folder too, and a journal or a row someone else wrote (a cloned repository's `runs/`,
a shared folder) must never become a plan that runs here, nor a worked example the model
reads. Unsealed runs are skipped and counted (`PlanMemory.unsealed`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from stepgraph.engine._recall import Recalled, RecallRefused, rebind
from stepgraph.engine._signing import sealed_here
from stepgraph.journal import RunIndex
from stepgraph.model import WorkedExample, plan_hash_of
from stepgraph.planner import goal_shape, parse_plan, read_inputs
from stepgraph.task import PreparedTask
from stepgraph.verifiers import grounding_problems

FORGOTTEN_NAME = ".memory-forgotten"
RECALL_TRIES = 3  # the newest remembered plans of one shape tried before the planner is asked

_SCHEMA = """
DROP TABLE IF EXISTS memory_v1;
DROP TABLE IF EXISTS memory_v1_goals;
CREATE TABLE IF NOT EXISTS memory_v2 (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    goal TEXT NOT NULL,
    shape TEXT,
    started TEXT NOT NULL,
    plan TEXT,
    tools TEXT,
    seal TEXT
);
CREATE INDEX IF NOT EXISTS memory_v2_by_shape ON memory_v2 (shape, started);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_v2_goals USING fts5(goal, path UNINDEXED);
"""
_KINDS = re.compile(
    rb'"event"\s*:\s*"(run\.start|plan\.proposed|plan\.edited|plan\.approved|run\.end)"'
)
_FIELDS = "run_id, path, goal, started, plan, tools, seal"


@dataclass(frozen=True)
class Remembered:
    """One remembered run: its goal and the plan that verified it."""

    run_id: str
    path: str
    goal: str
    started: str
    plan: dict[str, Any]
    tools: dict[str, str]  # each tool's fingerprint when it ran

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for JSON."""
        return {
            "run_id": self.run_id,
            "journal": self.path,
            "goal": self.goal,
            "started": self.started,
            "plan": self.plan,
            "tools": self.tools,
        }


@dataclass
class RecallOutcome:
    """What memory had for a goal: a re-bound plan, or why the remembered ones were refused."""

    recalled: Recalled | None = None
    refused: Remembered | None = None  # the newest plan of the goal's shape, when none fit
    reasons: list[str] | None = None


class PlanMemory:
    """The remembered plans of one runs folder."""

    def __init__(self, runs_dir: Path | str) -> None:
        self.runs_dir = Path(runs_dir)
        self.index = RunIndex(self.runs_dir, schemas=(_SCHEMA,))
        # Journals that say they verified but carry no seal of this machine: never used.
        self.unsealed: set[str] = set()

    def refresh(self) -> None:
        """Bring the memory up to date with the journals (the index first)."""
        rows = self.index.runs(status="verified", limit=1 << 31)
        wanted = {row.path for row in rows if row.replay_of is None and row.parent is None}
        with self.index.connection() as db:
            known = {
                path: (mtime, size)
                for path, mtime, size in db.execute("SELECT path, mtime_ns, size FROM memory_v2")
            }
            for path in sorted(wanted):
                try:
                    stat = os.stat(path)
                except OSError:
                    continue
                stamp = (stat.st_mtime_ns, stat.st_size)
                if known.get(path) != stamp:
                    _remember(db, Path(path), stamp)
            gone = [(path,) for path in known if path not in wanted]
            db.executemany("DELETE FROM memory_v2 WHERE path = ?", gone)
            db.executemany("DELETE FROM memory_v2_goals WHERE path = ?", gone)

    def entries(self, limit: int = 1000) -> list[Remembered]:
        """The remembered runs, newest first."""
        self.refresh()
        sql = f"SELECT {_FIELDS} FROM memory_v2 WHERE plan IS NOT NULL ORDER BY started DESC"
        return list(self._kept(sql, (), limit))

    def get(self, run_id: str) -> Remembered | None:
        """The remembered run with this id, or None (not verified, forgotten, or gone)."""
        self.refresh()
        sql = f"SELECT {_FIELDS} FROM memory_v2 WHERE plan IS NOT NULL AND run_id = ?"
        return next(self._kept(sql, (run_id,), 1), None)

    def forget(self, run_id: str) -> bool:
        """Never recall or show this run again; False if memory does not hold it."""
        if self.get(run_id) is None:
            return False
        with (self.runs_dir / FORGOTTEN_NAME).open("a", encoding="utf-8") as file:
            file.write(run_id + "\n")
        return True

    def recall(self, task: PreparedTask, tools: Mapping[str, str]) -> RecallOutcome:
        """The newest remembered plan of this goal's shape, re-bound and checked as a plan is.

        `tools` are the fingerprints of the tools as they are now: a plan that calls a tool
        which changed since it verified is not recalled.
        """
        self.refresh()
        goal = task.task.goal
        sql = (
            f"SELECT {_FIELDS} FROM memory_v2 WHERE plan IS NOT NULL AND shape = ? "
            "ORDER BY started DESC"
        )
        outcome = RecallOutcome()
        for remembered in self._kept(sql, (goal_shape(goal),), RECALL_TRIES):
            try:
                recalled = _fit(remembered, task, tools)
            except RecallRefused as e:
                if outcome.refused is None:
                    outcome.refused, outcome.reasons = remembered, str(e).split("\n")
                continue
            return RecallOutcome(recalled=recalled)
        return outcome

    def nearest(self, goal: str, limit: int) -> list[WorkedExample]:
        """The remembered plans whose goals share most words with this one (BM25), best first."""
        words = sorted({w.casefold() for w in re.findall(r"[A-Za-z]{3,}", goal)})
        if not words or limit <= 0:
            return []
        self.refresh()
        query = " OR ".join(f'"{word}"' for word in words)
        sql = (
            f"SELECT {', '.join('m.' + f.strip() for f in _FIELDS.split(','))} "
            "FROM memory_v2_goals g JOIN memory_v2 m ON m.path = g.path "
            "WHERE memory_v2_goals MATCH ? AND m.plan IS NOT NULL ORDER BY bm25(memory_v2_goals)"
        )
        shapes: set[str] = set()
        found = []
        for remembered in self._kept(sql, (query,), limit * 4):
            shape = goal_shape(remembered.goal)
            if shape in shapes:  # one example per question, not one per run of it
                continue
            shapes.add(shape)
            found.append(
                WorkedExample(run_id=remembered.run_id, goal=remembered.goal, plan=remembered.plan)
            )
            if len(found) == limit:
                break
        return found

    def _kept(self, sql: str, args: tuple[Any, ...], limit: int) -> Iterator[Remembered]:
        """The rows of `sql` that are not forgotten, as `Remembered`, at most `limit`."""
        forgotten = self._forgotten()
        with self.index.connection() as db:
            rows = db.execute(sql, args).fetchall()
        count = 0
        for run_id, path, goal, started, plan, tools, seal in rows:
            if run_id in forgotten:
                continue
            remembered = Remembered(
                run_id, path, goal, started, json.loads(plan), json.loads(tools)
            )
            if not _sealed(remembered, seal):
                self.unsealed.add(path)
                continue
            yield remembered
            count += 1
            if count == limit:
                return

    def _forgotten(self) -> set[str]:
        try:
            text = (self.runs_dir / FORGOTTEN_NAME).read_text(encoding="utf-8")
        except FileNotFoundError:
            return set()
        return {line.strip() for line in text.splitlines() if line.strip()}


def _fit(remembered: Remembered, task: PreparedTask, tools: Mapping[str, str]) -> Recalled:
    """The remembered plan made this task's, checked as the planner's plans are."""
    called = sorted({step["tool"] for step in remembered.plan.get("steps", [])})
    changed = [name for name in called if tools.get(name) != remembered.tools.get(name)]
    if changed:
        raise RecallRefused(
            f"tool '{changed[0]}' changed since the plan verified, or is not allowed"
        )
    plan, rebound = rebind(remembered.plan, remembered.goal, task.task.goal)
    parsed = parse_plan(
        plan.model_dump_json(),
        task.tools,
        task.inputs,
        task.extra_checks,
        answer=task.answer,
        read=read_inputs(task.task.goal),
    )
    problems = parsed.problems
    if parsed.plan is not None:
        problems = grounding_problems(parsed.plan, task)
    if parsed.plan is None or problems:
        raise RecallRefused("\n".join(str(problem) for problem in problems))
    return Recalled(parsed.plan, remembered.run_id, remembered.path, remembered.goal, rebound)


def _sealed(remembered: Remembered, seal: str | None) -> bool:
    """Whether this machine sealed the run as verified, with this very goal, plan and tools."""
    if not isinstance(remembered.tools, dict) or not isinstance(remembered.plan, dict):
        return False
    plan_hash = plan_hash_of(remembered.plan)
    return sealed_here(remembered.run_id, remembered.goal, plan_hash, remembered.tools, seal)


def _remember(db: Any, path: Path, stamp: tuple[int, int]) -> None:
    """Read what memory keeps of one verified journal into its row (plan NULL: not kept)."""
    start, plan, seal = _read_run(path)
    goal = str(start.get("goal", "")) if start else ""
    definition = (start or {}).get("definition") or {}
    typed = start is not None and not definition.get("plan") and not definition.get("inputs")
    keep = typed and plan is not None
    db.execute("DELETE FROM memory_v2_goals WHERE path = ?", (str(path),))
    db.execute(
        "INSERT OR REPLACE INTO memory_v2 "
        "(path, mtime_ns, size, run_id, goal, shape, started, plan, tools, seal) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(path),
            *stamp,
            str((start or {}).get("run_id", "")),
            goal,
            goal_shape(goal) if keep else None,
            str((start or {}).get("ts", "")),
            json.dumps(plan) if keep else None,
            json.dumps((start or {}).get("tools", {})),
            seal,
        ),
    )
    if keep:
        db.execute("INSERT INTO memory_v2_goals (goal, path) VALUES (?, ?)", (goal, str(path)))


def _read_run(path: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """The journal's `run.start`, the plan its last approval let run, and its end's seal.

    Only the few lines of those kinds are parsed: a big run's observations are skipped.
    """
    start: dict[str, Any] | None = None
    plans: dict[str, dict[str, Any]] = {}
    approved: str | None = None
    seal: str | None = None
    try:
        with path.open("rb") as file:
            for line in file:
                found = _KINDS.search(line)
                if found is None:
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                kind = found.group(1)
                if not isinstance(event, dict) or event.get("event") != kind.decode():
                    continue  # the words were inside a value, not this line's kind
                if kind == b"run.start" and start is None:
                    start = event
                elif kind in (b"plan.proposed", b"plan.edited") and isinstance(
                    event.get("plan"), dict
                ):
                    plans[str(event.get("plan_hash"))] = event["plan"]
                elif kind == b"plan.approved":
                    approved = str(event.get("plan_hash"))
                elif kind == b"run.end":
                    seal = event.get("seal") if isinstance(event.get("seal"), str) else None
    except OSError:
        return None, None, None
    return start, plans.get(approved) if approved else None, seal
