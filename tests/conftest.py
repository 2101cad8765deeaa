from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from stepgraph import Engine, RunResult, StepGraph, Task
from stepgraph.cli import app
from stepgraph.journal import Journal, read_journal

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True, scope="session")
def approval_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Plan-file approvals are signed with a key of the test session, never the user's own."""
    path = tmp_path_factory.mktemp("approval") / "approval.key"
    os.environ["STEPGRAPH_APPROVAL_KEY"] = str(path)
    return path


def make_task(steps: list[dict[str, Any]], **fields: Any) -> Task:
    """A task whose plan is the given steps (dicts in the planner's JSON shape)."""
    plan_fields = {key: fields.pop(key) for key in ("checks", "answer") if key in fields}
    plan = StepGraph.model_validate({"steps": steps, **plan_fields})
    return Task(goal=fields.pop("goal", "test"), plan=plan, **fields)


@pytest.fixture
def run_task(tmp_path: Path) -> Callable[..., tuple[RunResult, Journal]]:
    """Run a task with extra tools; return the result and the journal read back."""

    def runner(
        task: Task | Path, tools: list[Any] = (), **options: Any
    ) -> tuple[RunResult, Journal]:
        journal = tmp_path / f"run-{len(list(tmp_path.iterdir()))}.jsonl"
        result = Engine(tools=tools).run(task, journal=journal, **options)
        return result, read_journal(journal)

    return runner


def invoke(*args: Any, env: dict[str, str] | None = None) -> Result:
    """Run the `stepgraph` command in-process; no bad input may print a traceback."""
    result = CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def flat(text: str) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(text.split())
