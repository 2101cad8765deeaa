import json

from stepgraph.journal import Action, ObservationEvent, RunStart, read_journal
from stepgraph.units import quantity
from stepgraph.values import decode_value
from tests.conftest import EXAMPLES


def test_every_step_has_a_thought_an_action_and_an_observation(run_task):
    result, journal = run_task(EXAMPLES / "migration.yaml")
    assert not journal.problems
    steps = {"rate", "total", "per_night", "nights"}
    for kind in ("thought", "action", "observation"):
        assert {e.step for e in journal.of_kind(kind)} == steps, kind
    kinds = [e.event for e in journal.events]
    assert kinds[:3] == ["run.start", "plan.proposed", "plan.approved"]
    assert kinds[-2:] == ["answer", "run.end"]
    assert kinds.count("check") == len(result.verdicts)


def test_events_carry_run_id_seq_and_timestamp_in_order(run_task):
    result, journal = run_task(EXAMPLES / "migration.yaml")
    assert {e.run_id for e in journal.events} == {result.run_id}
    assert [e.seq for e in journal.events] == list(range(1, len(journal.events) + 1))
    assert all(e.ts.endswith("Z") for e in journal.events)


def test_events_read_back_typed_with_values_and_units(run_task):
    _, journal = run_task(EXAMPLES / "migration.yaml")
    assert isinstance(journal.events[0], RunStart)
    [action] = [e for e in journal.of_kind("action") if e.step == "per_night"]
    assert isinstance(action, Action)
    expression = decode_value(action.args["expression"])
    assert expression["$expression"] == (
        "${rate} * ${inputs.window} * ${inputs.utilisation} * ${inputs.retry_factor}"
    )
    bound = expression["bindings"]
    assert bound["${rate}"] == quantity(56.25, "MB/s") and bound["${inputs.window}"] == quantity(
        6, "h"
    )
    assert (bound["${inputs.utilisation}"], bound["${inputs.retry_factor}"]) == (0.9, 0.88)
    [observation] = [e for e in journal.of_kind("observation") if e.step == "per_night"]
    assert isinstance(observation, ObservationEvent)
    value = decode_value(observation.value)
    assert f"{value.units:~}" == "GB" and round(value.magnitude, 6) == 962.28


def test_a_truncated_last_line_is_reported_and_skipped(run_task, tmp_path):
    _, journal = run_task(EXAMPLES / "migration.yaml")
    text = journal.path.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 40])  # as if the process died mid-write
    read = read_journal(cut)
    assert len(read.events) == len(journal.events) - 1
    assert read.problems == [
        f"line {len(journal.events)}: truncated last line "
        "(Unterminated string starting at); skipped"
    ] or read.problems[0].startswith(f"line {len(journal.events)}: truncated last line")


def test_unknown_event_kinds_are_kept(tmp_path):
    path = tmp_path / "j.jsonl"
    line = {"run_id": "r", "seq": 1, "ts": "2026-01-01T00:00:00Z", "event": "future.kind", "x": 1}
    path.write_text(json.dumps(line) + "\n")
    [event] = read_journal(path).events
    assert event.event == "future.kind" and event.model_extra == {"x": 1}


def test_a_line_that_is_not_an_event_is_reported(tmp_path):
    path = tmp_path / "j.jsonl"
    event = {"run_id": "r", "seq": 1, "ts": "2026-01-01T00:00:00Z", "event": "future.kind"}
    path.write_text(json.dumps(event) + '\n{"hello": 1}\n')
    journal = read_journal(path)
    assert len(journal.events) == 1
    assert journal.problems[0].startswith("line 2: not a journal event")


def test_model_exchanges_and_repairs_read_back_typed(tmp_path):
    from stepgraph import Engine, Planner, Task
    from stepgraph.journal import LLMResponse, PlanRepair, StepReused
    from stepgraph.testing import ScriptedLLM
    from tests.planner.conftest import migration_plan

    model = ScriptedLLM([migration_plan("floor", answer="x"), migration_plan("ceil", answer="x")])
    path = tmp_path / "j.jsonl"
    task = Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(model)).run(task, journal=path)
    journal = read_journal(path)
    assert all(isinstance(e, LLMResponse) for e in journal.of_kind("llm.response"))
    assert isinstance(journal.of_kind("plan.repair")[0], PlanRepair)
    assert {e.step for e in journal.of_kind("step.reused")} == {"rate", "total", "per_night"}
    assert all(isinstance(e, StepReused) for e in journal.of_kind("step.reused"))


def test_a_garbage_line_in_the_middle_is_reported_with_its_number(run_task, tmp_path):
    _, journal = run_task(EXAMPLES / "migration.yaml")
    lines = journal.path.read_text().splitlines()
    lines.insert(3, "%%% not json %%%")
    path = tmp_path / "garbage.jsonl"
    path.write_text("\n".join(lines) + "\n")
    read = read_journal(path)
    assert len(read.events) == len(journal.events)
    assert read.problems == ["line 4: line is not JSON (Expecting value); skipped"]


def test_a_journal_with_another_run_mixed_in_is_refused(run_task, tmp_path):
    import pytest

    from stepgraph import JournalError

    _, first = run_task(EXAMPLES / "migration.yaml")
    _, second = run_task(EXAMPLES / "migration.yaml")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(first.path.read_text() + second.path.read_text())
    with pytest.raises(JournalError, match="belongs to run .* journals of two runs are mixed"):
        read_journal(mixed)


def test_a_journal_from_a_newer_format_is_refused(tmp_path):
    import pytest

    from stepgraph import JournalError

    path = tmp_path / "new.jsonl"
    event = {
        "run_id": "r",
        "seq": 1,
        "ts": "t",
        "event": "run.start",
        "task": "t",
        "goal": "g",
        "version": 99,
    }
    path.write_text(json.dumps(event) + "\n")
    with pytest.raises(JournalError, match="newer stepgraph"):
        read_journal(path)


def test_a_journal_path_given_as_text_reads_the_same(run_task):
    """Python callers pass a str as often as a Path: neither is an AttributeError."""
    _, journal = run_task(EXAMPLES / "migration.yaml")
    again = read_journal(str(journal.path))
    assert again.path == journal.path and [e.event for e in again.events] == [
        e.event for e in journal.events
    ]
