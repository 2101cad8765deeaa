from __future__ import annotations

import os
import subprocess
import sys
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


@pytest.fixture(autouse=True)
def runs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's `stepgraph` commands keep their runs (and plan memory) in a folder of its own.

    Not the checkout's `runs/`: a verified run of one test would be recalled by the next.
    """
    folder = tmp_path / "runs"
    monkeypatch.setenv("STEPGRAPH_RUNS", str(folder))
    return folder


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


# Tools whose call kills their process, as kill -9 or a crash would: after the action is
# in the journal, before any observation. Every call is counted in `crash.calls`.
CRASHING_TOOLS = '''
import os
from pathlib import Path

from stepgraph import tool


def _call(x: float, failures: int) -> float:
    calls = Path(__file__).with_name("crash.calls")
    with calls.open("a") as file:
        file.write("call\\n")
    number = len(calls.read_text().split())
    if number <= failures:
        raise ConnectionError(f"attempt {number} fails")
    if number == failures + 1:
        os._exit(9)  # the process dies in the middle of the step
    return x * 2


@tool
def crashes(x: float, failures: int = 0) -> float:
    """Double x; the call after `failures` failed calls kills the process."""
    return _call(x, failures)


@tool(side_effects=True)
def pays(x: float, failures: int = 0) -> float:
    """Pay x (a side effect) and return twice it; the first call kills the process."""
    return _call(x, failures)
'''


def crash_calls(folder: Path) -> int:
    """How often the crashing tools in `folder` were called."""
    calls = folder / "crash.calls"
    return len(calls.read_text().split()) if calls.exists() else 0


def run_killed(task_file: Path, journal: Path) -> None:
    """Run `task_file` in a process of its own, which a crashing tool kills mid-step."""
    (task_file.parent / "crash_tools.py").write_text(CRASHING_TOOLS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    died = subprocess.run(
        [sys.executable, "-m", "stepgraph", "run", str(task_file), "--journal", str(journal)],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip
    assert died.returncode == 9, died.stdout + died.stderr
    assert read_journal(journal).of_kind("run.end") == []
