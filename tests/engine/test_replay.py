"""Replay: the journal alone reproduces a run; changes since the recording are divergences."""

import json
import os
import shutil
import stat
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepgraph import Engine, Planner, PlanningError, StepGraph, Task, tool
from stepgraph.cli import ExitCode
from stepgraph.engine import compare, replay
from stepgraph.engine._replay import compare_files
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import CRASHING_TOOLS, EXAMPLES, crash_calls, flat, invoke, run_killed
from tests.planner.conftest import migration_plan


def test_replaying_a_run_calls_no_tool_and_is_identical(tmp_path):
    calls = []

    @tool
    def probe(name: str) -> float:
        """Measure something."""
        calls.append(name)
        return 42.0

    task = Task(
        goal="g", plan=StepGraph(steps=[{"id": "p", "tool": "probe", "args": {"name": "x"}}])
    )
    Engine(tools=[probe]).run(task, journal=tmp_path / "j.jsonl")
    report = replay(tmp_path / "j.jsonl", tools=[probe])
    assert report.identical, report.divergences
    assert calls == ["x"]
    source = read_journal(tmp_path / "j.jsonl").events[0].run_id
    start = read_journal(report.journal).of_kind("run.start")[0]
    assert start.replay_of is not None and start.replay_of.run_id == source
    assert start.run_id != source  # a replay is a run of its own
    assert report.result.run_id == start.run_id


def test_a_planned_and_repaired_run_replays_without_the_model(tmp_path):
    model = ScriptedLLM(
        [migration_plan("floor", answer="${nights}"), migration_plan("ceil", answer="${nights}")]
    )
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    original = Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    report = replay(tmp_path / "j.jsonl")
    assert report.identical, report.divergences
    assert report.result.answer == original.answer == "3"


def test_a_run_whose_planner_gave_up_replays_to_the_same_end(tmp_path):
    """Seen with a 1.5B model: three plans without steps; the replay asked a fourth time."""
    model = ScriptedLLM(['{"steps": []}'] * 3)
    task = Task(goal="How many hours does 2.5 TB take over a 450 Mbps link?")
    with pytest.raises(PlanningError, match="no valid plan in 3 attempts"):
        Engine(planner=Planner(model, plan_retries=2)).run(task, journal=tmp_path / "j.jsonl")
    report = replay(tmp_path / "j.jsonl")
    assert report.identical, report.divergences or report.error
    replayed = read_journal(report.journal)
    assert len(replayed.of_kind("llm.request")) == 3
    assert replayed.of_kind("run.end")[0].status == "invalid"


def test_an_older_record_of_a_planner_that_gave_up_replays_to_the_same_end(tmp_path):
    """Records written before run.start named the planner's retries: read from the attempts."""
    model = ScriptedLLM(['{"steps": []}'] * 2)
    task = Task(goal="How many hours does 2.5 TB take over a 450 Mbps link?")
    with pytest.raises(PlanningError, match="no valid plan in 2 attempts"):
        Engine(planner=Planner(model, plan_retries=1)).run(task, journal=tmp_path / "j.jsonl")
    events = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    del events[0]["config"]["plan_retries"]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    report = replay(tmp_path / "old.jsonl")
    assert report.identical, report.divergences or report.error


def test_a_replay_that_fails_where_the_run_did_not_is_an_error(tmp_path):
    model = ScriptedLLM([migration_plan("ceil", answer="${nights}")])
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    events = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    for event in events:  # the recorded answer edited into a plan without steps
        if event["event"] == "llm.response":
            event["text"] = '{"steps": []}'
    (tmp_path / "edited.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    report = replay(tmp_path / "edited.jsonl")
    assert not report.identical
    assert report.error and "the replay asked the model more often" in report.error


def test_a_replay_that_stops_before_its_first_event_says_so(tmp_path):
    model = ScriptedLLM([migration_plan("ceil", answer="${nights}")])
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    lines = (tmp_path / "j.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if '"llm.response"' not in line]  # no answer to replay
    (tmp_path / "cut.jsonl").write_text("".join(kept))
    report = replay(tmp_path / "cut.jsonl")
    assert not report.identical and report.error


@pytest.fixture
def company(tmp_path):
    copy = tmp_path / "company"
    shutil.copytree(EXAMPLES / "company", copy)
    Engine().run(copy / "company.yaml", journal=tmp_path / "j.jsonl")
    return copy, tmp_path / "j.jsonl"


def test_a_tool_changed_since_the_recording_is_a_divergence_not_a_crash(company):
    folder, journal = company
    source = folder / "company_tools.py"
    source.write_text(source.read_text().replace("company_id: int", "company_id: str"))
    report = replay(journal, trust_plugins=True)
    assert not report.identical
    assert report.divergences[0].event == "tool"
    assert "list_shareholders" in report.divergences[0].recorded


MARKER_PLUGIN = '''
from pathlib import Path

Path(__file__).with_name("imported.marker").write_text("the plugin ran")

from stepgraph import tool


@tool
def double(x: float) -> float:
    """Twice x."""
    return 2 * x
'''


def test_a_journal_names_plugins_replay_imports_only_when_trusted(tmp_path):
    """A journal someone sent you runs no code: its plugins are imported with the flag only."""
    (tmp_path / "double.py").write_text(MARKER_PLUGIN)
    task = "name: d\ngoal: twice 2\nplugins: [double.py]\nplan:\n  steps:\n"
    task += "    - {id: d, tool: double, args: {x: 2}}\n"
    (tmp_path / "d.yaml").write_text(task)
    Engine().run(tmp_path / "d.yaml", journal=tmp_path / "d.jsonl")
    marker = tmp_path / "imported.marker"
    marker.unlink()
    refused = invoke("replay", tmp_path / "d.jsonl")
    assert refused.exit_code == ExitCode.USAGE and "--trust-plugins" in flat(refused.output)
    assert "double.py" in flat(refused.output) and not marker.exists()
    trusted = invoke("replay", tmp_path / "d.jsonl", "--trust-plugins")
    assert trusted.exit_code == ExitCode.OK and "identical" in trusted.output
    assert marker.exists()


def test_live_replay_diffs_each_observation_against_the_record(company):
    folder, journal = company
    sql = folder / "company.sql"
    sql.write_text(
        sql.read_text().replace("(42, 'Founders Trust', 38.5)", "(42, 'Founders Trust', 40.5)")
    )
    report = replay(journal, live=True, trust_plugins=True)
    steps = {d.step for d in report.divergences if d.event == "observation"}
    assert "holders" in steps and "company" not in steps


def test_fork_from_a_step_reuses_what_came_before_and_names_its_parent(tmp_path):
    calls = []

    @tool
    def measure(name: str) -> float:
        """Measure something."""
        calls.append(name)
        return {"a": 1.0, "b": 2.0}[name]

    steps = [
        {"id": "a", "tool": "measure", "args": {"name": "a"}},
        {"id": "b", "tool": "measure", "args": {"name": "b"}},
        {"id": "total", "tool": "calculate", "args": {"expression": "${a} + ${b}"}},
    ]
    task = Task(goal="g", plan=StepGraph(steps=steps, answer="${total}"))
    Engine(tools=[measure]).run(task, journal=tmp_path / "j.jsonl")
    calls.clear()
    report = replay(tmp_path / "j.jsonl", from_step="b", tools=[measure])
    assert calls == ["b"]
    assert report.result.answer == "3"
    start = read_journal(report.journal).of_kind("run.start")[0]
    assert start.parent is not None and start.parent.journal == str(tmp_path / "j.jsonl")
    assert start.parent.from_step == "b" and start.replay_of is None
    assert start.run_id != read_journal(tmp_path / "j.jsonl").events[0].run_id


def test_fork_from_an_unknown_step_is_a_clear_error(tmp_path):
    Engine().run(EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl")
    with pytest.raises(Exception, match="no such step \\(steps: rate, total, per_night, nights\\)"):
        replay(tmp_path / "j.jsonl", from_step="nope")


@st.composite
def random_graphs(draw):
    """Random DAGs: each step adds the outputs of some earlier steps, with a random latency."""
    count = draw(st.integers(min_value=1, max_value=8))
    steps = []
    for index in range(count):
        parents = (
            draw(st.lists(st.integers(0, index - 1), unique=True, max_size=3)) if index else []
        )
        latency = draw(st.integers(min_value=0, max_value=4))
        steps.append(
            {
                "id": f"s{index}",
                "tool": "work",
                "args": {"ms": latency, "inputs": [f"${{s{p}}}" for p in parents]},
            }
        )
    return steps


@tool
def work(ms: int, inputs: list[float]) -> float:
    """Wait a few simulated milliseconds, then add the inputs and one."""
    time.sleep(ms / 1000)
    return sum(inputs) + 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=random_graphs())
def test_replay_of_any_graph_with_any_latencies_is_identical(steps, tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay")
    task = Task(goal="g", plan=StepGraph(steps=steps), max_workers=4)
    Engine(tools=[work]).run(task, journal=folder / "j.jsonl")
    report = replay(folder / "j.jsonl", tools=[work])
    assert report.identical, report.divergences


def test_journals_compared_line_by_line_differ_where_they_differ_in_memory(tmp_path):
    """The streamed comparison a replay uses finds what `compare` finds, at the same step."""
    record = tmp_path / "run.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=record)
    lines = record.read_text().splitlines()
    edited = [
        line.replace('"ok":true', '"ok":false', 1)
        if '"event":"observation"' in line and '"step":"total"' in line
        else line
        for line in lines
    ]
    assert edited != lines
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join(edited) + "\n")
    streamed = compare_files(record, forged)
    assert streamed == compare(read_journal(record), read_journal(forged))
    assert [(d.event, d.step) for d in streamed] == [("observation", "total")]
    assert (streamed[0].recorded["ok"], streamed[0].produced["ok"]) == (True, False)
    assert compare_files(record, record) == []


def test_replay_out_never_overwrites_another_runs_journal(tmp_path):
    """`replay --out OTHER.jsonl` refuses a file holding a run, unless told to replace it."""
    Engine().run(EXAMPLES / "migration.yaml", journal=tmp_path / "a.jsonl")
    Engine().run(EXAMPLES / "migration.yaml", journal=tmp_path / "b.jsonl")
    before = (tmp_path / "b.jsonl").read_bytes()
    refused = invoke("replay", tmp_path / "a.jsonl", "--out", tmp_path / "b.jsonl")
    assert refused.exit_code == ExitCode.INVALID and "already holds a run" in flat(refused.output)
    assert (tmp_path / "b.jsonl").read_bytes() == before
    replaced = invoke(
        "replay", tmp_path / "a.jsonl", "--out", tmp_path / "b.jsonl", "--replace-journal"
    )
    assert replaced.exit_code == ExitCode.OK and (tmp_path / "b.jsonl").read_bytes() != before
    for _ in range(2):  # its own default output (a.replay.jsonl) is replaced freely
        assert invoke("replay", tmp_path / "a.jsonl").exit_code == ExitCode.OK


def test_a_journal_path_that_is_a_folder_is_refused_and_a_device_is_never_removed(tmp_path):
    """`--journal DIR` says it is a folder; `--replace-journal /dev/null` keeps /dev/null."""
    folder = tmp_path / "runs"
    folder.mkdir()
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", folder)
    assert result.exit_code == ExitCode.INVALID and "is a folder" in flat(result.output)
    result = invoke(
        "run", EXAMPLES / "migration.yaml", "--journal", "/dev/null", "--replace-journal"
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


SENT: list[str] = []


@tool(side_effects=True)
def send_note(text: str) -> str:
    """Send a note (changes the world)."""
    SENT.append(text)
    return "sent"


def _note_task(**fields):
    steps = [
        {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
        {"id": "w", "tool": "send_note", "args": {"text": "nights ${n}"}},
    ]
    return Task(goal="nights, then a note", plan=StepGraph(steps=steps, answer="${n}"), **fields)


def _flow(name, journal):
    """Write a journal of one flow: parked, decided, rejected, never, per-step, resumed."""
    from stepgraph.engine import Decision, RunOptions, decide, resume
    from stepgraph.model import Budget

    engine = Engine(tools=[send_note])
    if name == "resumed after its budget":
        with pytest.raises(Exception, match="budget"):
            engine.run(
                EXAMPLES / "migration.yaml",
                journal=journal,
                options=RunOptions(budget=Budget(tool_calls=2)),
            )
        resume(journal, budget=Budget(tool_calls=10))
    elif name == "never":
        engine.run(_note_task(approval="never"), journal=journal)
    else:
        policy = "per-step" if name.startswith("per-step") else "ask"
        engine.run(_note_task(approval=policy), journal=journal)
        if name.endswith("approved"):
            decide(journal, Decision("approve", who="bob"), tools=[send_note])
        elif name.endswith("rejected"):
            decide(journal, Decision("reject", who="bob"), tools=[send_note])


@pytest.mark.parametrize(
    "flow",
    [
        "parked",
        "parked then approved",
        "parked then rejected",
        "never",
        "per-step parked",
        "per-step parked then approved",
        "resumed after its budget",
    ],
)
def test_a_journal_of_every_flow_replays_identical(tmp_path, flow):
    """Faithful journals of parked, decided, rejected, never, per-step and resumed runs."""
    journal = tmp_path / "j.jsonl"
    _flow(flow, journal)
    SENT.clear()
    report = replay(journal, tools=[send_note])
    assert report.identical, report.divergences
    assert SENT == []  # an exact replay calls no tool


KILLED_TASK = """
name: killed
goal: double along a chain
plugins: [crash_tools.py]
approval: auto
plan:
  steps:
    - {id: a, tool: calculate, args: {expression: "1 + 2"}}
    - {id: b, tool: crashes, args: {x: "${a}", failures: FAILURES}, retries: 1}
    - {id: c, tool: calculate, args: {expression: "${b} + 1"}}
  checks:
    - {expression: "${c} == 7"}
  answer: "total ${c}"
"""


@pytest.mark.parametrize("failures", [0, 1], ids=["first attempt", "retry"])
def test_a_killed_then_resumed_run_replays_identical_calling_nothing(tmp_path, failures):
    """The killed attempt (an action with no observation) is superseded by the resume's.

    With a failed first attempt, the retry in flight at the kill is superseded too: the
    resumed run starts the step over, and so does its replay.
    """
    task = tmp_path / "killed.yaml"
    task.write_text(KILLED_TASK.replace("FAILURES", str(failures)))
    (tmp_path / "crash_tools.py").write_text(CRASHING_TOOLS)
    journal = tmp_path / "j.jsonl"
    run_killed(task, journal)
    resumed = invoke("resume", journal)
    assert resumed.exit_code == ExitCode.OK, resumed.output
    record = read_journal(journal)
    assert [e.step for e in record.of_kind("action")].count("b") == failures + 2
    assert record.of_kind("run.resume")[0].rerun == ["b"]
    calls = crash_calls(tmp_path)
    replayed = invoke("replay", journal, "--trust-plugins")
    assert replayed.exit_code == ExitCode.OK, replayed.output
    assert "identical" in flat(replayed.output)
    assert crash_calls(tmp_path) == calls  # no tool ran again
    copy = read_journal(tmp_path / "j.replay.jsonl")
    assert [e.step for e in copy.of_kind("action")] == ["a", "b", "c"]
    assert copy.of_kind("answer")[0].text == "total 7"


def test_stepgraph_runs_lists_each_replay_as_its_own_row(tmp_path):
    """`stepgraph runs`: a run and two replays of it are three ids; the replays say of what."""
    runs = tmp_path / "runs"
    original = Engine(journal_dir=runs).run(EXAMPLES / "migration.yaml")
    for n in range(2):
        replay(original.journal, out=runs / f"replay-{n}.jsonl")
    listed = invoke("runs", "--runs", runs)
    assert listed.exit_code == 0, listed.output
    from stepgraph.journal import RunIndex

    rows = RunIndex(runs).runs()
    assert len({row.run_id for row in rows}) == 3
    assert sorted(row.replay_of or "" for row in rows) == ["", original.run_id, original.run_id]
    assert "replay of" in listed.output
    assert all(row.run_id in flat(listed.output) for row in rows)
