"""A replay holds little: the task and plans built from their text, journals compared side by side.

What it keeps must still rebuild the run exactly; what a bad record holds is a clear error.
"""

import json

import pytest

from stepgraph import Engine, Planner, RunStatus, StepGraph, Task, tool
from stepgraph.engine import compare, replay
from stepgraph.engine._compare import compare_files
from stepgraph.engine._replay import load_for_replay
from stepgraph.exceptions import JournalError
from stepgraph.executor import _scheduler
from stepgraph.journal import Journal, ObservationEvent, Recording, read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, make_task
from tests.planner.conftest import migration_plan


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch):
    monkeypatch.setattr(_scheduler, "RETRY_BACKOFF_SECONDS", 0.01)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_the_task_and_plan_read_for_a_replay_are_the_recorded_ones(tmp_path):
    """Built from the lines' text: the same steps, the recorded hash, the plan held once."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    recording, _ = load_for_replay(journal)
    start, proposed = _lines(journal)[0], _lines(journal)[1]
    assert proposed["event"] == "plan.proposed"
    plan = recording.task.plan
    assert plan.model_dump(mode="json") == start["definition"]["plan"] == proposed["plan"]
    assert plan.plan_hash() == proposed["plan_hash"]
    assert recording.plans == {proposed["plan_hash"]: plan}
    assert recording.plans[proposed["plan_hash"]] is plan  # not a second copy
    assert recording.task.model_dump(mode="json") == start["definition"]
    # The events keep no copy of what was built from them.
    assert recording.start.definition is None
    assert recording.start.goal == start["goal"] and recording.run_id == start["run_id"]


def test_a_step_read_back_marks_only_the_fields_it_changes_as_given(tmp_path):
    """The journal writes every field; the values stay, only non-defaults count as given."""
    journal = tmp_path / "j.jsonl"
    task = make_task([{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}])
    Engine().run(task, journal=journal)
    step = load_for_replay(journal)[0].task.plan.steps[0]
    assert step.model_fields_set == {"id", "tool", "args"}
    assert (step.timeout, step.retries, step.thought, step.depends_on) == (30.0, 0, "", [])


def test_a_retried_step_replays_each_attempt_without_calling_the_tool(tmp_path):
    """Two failures then a value: the replay gives the three outcomes in order."""
    calls = []

    @tool
    def flaky() -> float:
        """Fail twice, then answer."""
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return 7.0

    journal = tmp_path / "j.jsonl"
    task = make_task(
        [
            {"id": "f", "tool": "flaky", "retries": 2},
            {"id": "g", "tool": "flaky", "depends_on": ["f"]},
        ]
    )
    first = Engine(tools=[flaky]).run(task, journal=journal)
    assert first.status is RunStatus.UNCHECKED and len(calls) == 4
    report = replay(journal, tools=[flaky])
    assert report.identical, report.divergences
    assert len(calls) == 4
    attempts = [(o.step, o.attempt, o.ok) for o in report.result.observations]
    assert attempts == [("f", 1, False), ("f", 2, False), ("f", 3, True), ("g", 1, True)]


def test_a_definition_that_is_no_valid_task_is_a_clear_journal_error(tmp_path):
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    lines = _lines(journal)
    lines[0]["definition"]["max_workers"] = "many"
    _write(journal, lines)
    with pytest.raises(JournalError, match="task definition of run.start .* max_workers"):
        replay(journal)


def test_a_proposed_plan_that_is_no_valid_plan_is_a_clear_journal_error(tmp_path):
    """The planner's plan, spoilt in the record: the error names the event."""
    journal = tmp_path / "j.jsonl"
    model = ScriptedLLM([migration_plan("ceil", answer="${nights}")])
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(model)).run(task, journal=journal)
    lines = _lines(journal)
    proposed = next(line for line in lines if line["event"] == "plan.proposed")
    proposed["plan"]["steps"] = "none"
    _write(journal, lines)
    where = f"the plan of plan.proposed \\(seq {proposed['seq']}\\)"
    with pytest.raises(JournalError, match=where):
        replay(journal)


def test_a_record_without_its_task_cannot_be_replayed(tmp_path):
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    lines = _lines(journal)
    del lines[0]["definition"]
    _write(journal, lines)
    with pytest.raises(JournalError, match="no run.start with the task definition"):
        replay(journal)


def test_a_recording_read_in_one_pass_has_the_events_read_whole(tmp_path):
    """Every event the journal holds, in order, only without the JSON of the task and plans."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    lean = Recording.read(journal, keep=lambda event: True)
    whole = read_journal(journal)
    assert [e.seq for e in lean.journal.events] == [e.seq for e in whole.events]
    for mine, theirs in zip(lean.journal.events, whole.events, strict=True):
        expected = theirs.model_dump(exclude={"definition", "plan"})
        assert mine.model_dump(exclude={"definition", "plan"}) == expected


def _observation(step, value, attempt=1):
    return ObservationEvent(
        step=step, ok=True, value=value, attempt=attempt, duration_ms=1.0, final=True
    )


def _journal(*events):
    return Journal(path=None, events=list(events))


def test_steps_that_finish_in_another_order_are_no_divergence():
    recorded = _journal(_observation("a", 1), _observation("b", 2), _observation("c", 3))
    produced = _journal(_observation("c", 3), _observation("a", 1), _observation("b", 2))
    assert compare(recorded, produced) == []


def test_divergences_come_in_the_record_order_then_what_only_the_replay_did():
    recorded = _journal(_observation("a", 1), _observation("b", 2), _observation("c", 3))
    # b is missing, a and c differ (c's counterpart comes first), d is new.
    produced = _journal(_observation("c", 30), _observation("d", 4), _observation("a", 10))
    found = [(d.step, d.recorded, d.produced) for d in compare(recorded, produced)]
    payload = {"ok": True, "error": None, "attempt": 1, "final": True}
    assert found == [
        ("a", {**payload, "value": 1}, {**payload, "value": 10}),
        ("b", {**payload, "value": 2}, None),
        ("c", {**payload, "value": 3}, {**payload, "value": 30}),
        ("d", None, {**payload, "value": 4}),
    ]


def test_the_nth_event_of_a_step_is_compared_with_the_nth_of_the_replay():
    """A step's attempts are matched in order, wherever other steps fall between them."""
    recorded = _journal(_observation("a", 1, 1), _observation("b", 5), _observation("a", 2, 2))
    produced = _journal(_observation("a", 1, 1), _observation("a", 9, 2), _observation("b", 5))
    found = compare(recorded, produced)
    assert [(d.step, d.recorded["value"], d.produced["value"]) for d in found] == [("a", 2, 9)]


def test_a_replay_of_a_plan_with_a_thousand_steps_is_compared_line_by_line(tmp_path):
    """A large record and its replay: identical, and the files compare as the events do."""
    steps = [
        {"id": f"s{i}", "tool": "calculate", "args": {"expression": f"{i} + 1"}}
        for i in range(1000)
    ]
    journal = tmp_path / "j.jsonl"
    Engine().run(Task(goal="g", plan=StepGraph(steps=steps)), journal=journal)
    report = replay(journal)
    assert report.identical, report.divergences[:3]
    lines = journal.read_text().splitlines()
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join(line.replace('"value":500', '"value":-1') for line in lines) + "\n")
    found = compare_files(journal, forged)
    assert found == compare(read_journal(journal), read_journal(forged))
    assert [(d.event, d.step) for d in found] == [("observation", "s499")]


def test_a_line_the_text_parsers_refuse_is_read_as_before(tmp_path):
    """A byte that is not UTF-8 in the definition: read with a replacement, as every line is."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    first, rest = journal.read_bytes().split(b"\n", 1)
    assert first.count(b'"goal":"') == 3  # the event's, the definition's, its plan's
    spoilt = first.replace(b'"goal":"', b'"goal":"\xff', 2)  # the plan stays as it ran
    journal.write_bytes(spoilt + b"\n" + rest)
    recording = Recording.load(journal)
    assert recording.task.goal.startswith("\ufffd")
    assert recording.start.goal.startswith("\ufffd")
    assert recording.task.plan is not None and recording.start.definition is None
    assert replay(journal).identical
