"""Bad inputs get a clear message and a documented exit code, never an internal error."""

import json
from pathlib import Path

import pytest
import yaml

from stepgraph import Engine
from stepgraph.cli import ExitCode
from stepgraph.exceptions import JournalError
from stepgraph.journal import read_journal
from stepgraph.model import RunStatus
from stepgraph.task import MAX_TASK_FILE_BYTES
from tests.conftest import EXAMPLES, flat, invoke

DEEP = 10_000
VALID_PLAN = json.dumps(
    {"steps": [{"id": "total", "tool": "unit_convert", "args": {"value": "2 TB", "to_unit": "GB"}}]}
)


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A journal of a verified run of the migration example."""
    path = tmp_path / "run.jsonl"
    assert invoke("run", EXAMPLES / "migration.yaml", "--journal", path).exit_code == ExitCode.OK
    return path


# 1. Deep nesting and size


@pytest.mark.parametrize(
    "nested",
    ["[" * DEEP + "]" * DEEP, "\n  " + "- " * DEEP + "1", "[" * 150 + "]" * 150],
    ids=["flow", "block", "past-the-limit"],
)
def test_a_deeply_nested_task_file_is_invalid_not_a_crash(tmp_path, nested):
    path = tmp_path / "deep.yaml"
    path.write_text(f"goal: x\ninputs:\n  a: {nested}\n")
    result = invoke("validate", path)
    assert result.exit_code == ExitCode.INVALID
    assert "nest" in flat(result.output) and "internal error" not in result.output


def test_a_task_file_over_the_size_limit_is_refused_naming_size_and_limit(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("goal: x\n" + "#" * MAX_TASK_FILE_BYTES + "\n")
    result = invoke("run", path)
    assert result.exit_code == ExitCode.INVALID
    assert "the file is 10,000,009 bytes; a task file may be at most 10,000,000 bytes" in flat(
        result.output
    )


def test_deeply_nested_planner_output_is_fed_back_and_the_next_answer_runs(tmp_path):
    deep = '{"steps": [' * DEEP
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"scripted": True, "responses": [deep, VALID_PLAN]}))
    journal = tmp_path / "plan.jsonl"
    result = invoke("plan", "convert 2 TB", "--scripted", script, "--journal", journal)
    assert result.exit_code == ExitCode.OK, result.output
    assert '"id": "total"' in result.stdout
    [invalid] = read_journal(journal).of_kind("plan.invalid")
    assert "the JSON nests 20,000 levels deep; the limit is 100" in str(invalid.model_dump())


# 2. Files that are not journals


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b"", "the file is empty"),
        (b"\n\n", "the file is empty"),
        ((EXAMPLES / "migration.yaml").read_bytes(), "line 1 is '# How many nights"),
        (b"hello world\n", "line 1 is 'hello world'"),
        (b'{"hello": 1}\n', """line 1 is '{"hello": 1}'"""),
        (bytes(range(256)) * 8, "binary data, not text"),
        (b"\0\0\0\0", "binary data, not text"),
    ],
    ids=["empty", "blank", "task-file", "text", "json", "binary", "nul"],
)
@pytest.mark.parametrize("command", ["show", "replay", "resume"])
def test_a_file_that_is_not_a_journal_is_invalid_and_says_what_it_holds(
    tmp_path, command, content, found
):
    path = tmp_path / "not.jsonl"
    path.write_bytes(content)
    result = invoke(command, path)
    assert result.exit_code == ExitCode.INVALID
    assert "not a stepgraph journal" in flat(result.output)
    assert found in flat(result.output)


def test_replay_names_the_truncated_last_line(journal):
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])  # killed mid-write
    result = invoke("replay", journal)
    assert result.exit_code == ExitCode.DIVERGED  # the record stops before run.end
    assert f"line {len(lines)}: truncated last line" in flat(result.output)
    assert "stepgraph resume" in flat(result.output)


# 3. Outputs that would destroy a record


def test_replay_out_onto_its_own_journal_is_a_usage_error_and_writes_nothing(journal):
    before = journal.read_bytes()
    result = invoke(
        "replay", journal, "--out", journal.parent / ".." / journal.parent.name / "run.jsonl"
    )
    assert result.exit_code == ExitCode.USAGE
    assert "is the journal being replayed" in flat(result.output)
    assert journal.read_bytes() == before


def test_run_refuses_a_journal_that_already_holds_a_run(journal):
    before = journal.read_bytes()
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", journal)
    assert result.exit_code == ExitCode.INVALID
    assert "the journal already holds a run" in flat(result.output)
    assert "--replace-journal" in flat(result.output)
    assert "Goal:" not in result.output  # refused before anything ran
    assert journal.read_bytes() == before


def test_replace_journal_overwrites_it_with_one_run(journal):
    first = read_journal(journal).events[0].run_id
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", journal, "--replace-journal")
    assert result.exit_code == ExitCode.OK
    run_ids = {event.run_id for event in read_journal(journal).events}
    assert len(run_ids) == 1 and first not in run_ids


def test_engine_run_refuses_an_occupied_journal_unless_told_to_replace(journal):
    with pytest.raises(JournalError, match="already holds a run"):
        Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    result = Engine().run(EXAMPLES / "migration.yaml", journal=journal, replace_journal=True)
    assert result.status == RunStatus.VERIFIED


def test_an_empty_journal_file_may_be_used(tmp_path):
    path = tmp_path / "j.jsonl"
    path.touch()
    assert invoke("run", EXAMPLES / "migration.yaml", "--journal", path).exit_code == ExitCode.OK


# 4. Mistyped task paths


@pytest.mark.parametrize("target", ["missing.yaml", "missing.yml", "missing.json", "tasks/nightly"])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_missing_task_file_is_not_taken_for_a_goal(command, target):
    result = invoke(command, target)
    assert result.exit_code == ExitCode.INVALID
    assert f"{target}: no such task file" in flat(result.output)
    assert "Goal:" not in result.output


def test_a_goal_with_a_slash_and_spaces_is_still_a_goal():
    result = invoke("run", "what is 5/2 of 10 TB?")
    assert result.exit_code == ExitCode.INVALID
    assert "has no plan and no planner is configured" in flat(result.output)


def test_a_goal_longer_than_a_file_name_is_still_a_goal():
    # A GSM8K question is longer than NAME_MAX (255 bytes): it once ended as an internal error.
    goal = "Janet's ducks lay 16 eggs per day. " * 12 + "How much does she make?"
    result = invoke("run", goal)
    assert result.exit_code == ExitCode.INVALID
    assert "has no plan and no planner is configured" in flat(result.output)


# 5. --set values


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("utilisation=$$%^&*", "'$$%^&*' is not a quantity ('utilisation' is a number)"),
        ("data=$$%^&*", "'$$%^&*' is not a quantity ('data' is [information])"),
        ("data=", "'' is not a quantity ('data' is [information])"),
        ("data=10Gbps", "'data' is [information], but '10Gbps' is [information] / [time]"),
        ("utilisation=5 TB", "'utilisation' is dimensionless, but '5 TB' is [information]"),
    ],
)
def test_set_messages_describe_the_value_given(assignment, message):
    result = invoke("validate", EXAMPLES / "migration.yaml", "--set", assignment)
    assert result.exit_code == ExitCode.INVALID
    assert message in flat(result.output)


def test_a_huge_integer_set_value_does_not_end_in_an_internal_error(tmp_path):
    result = invoke(
        "run",
        EXAMPLES / "migration.yaml",
        "--set",
        f"utilisation={2**70}",
        "--journal",
        tmp_path / "j.jsonl",
    )
    assert "internal error" not in result.output
    # accepted (the number is exact) or refused with a message; either way not a crash
    assert result.exit_code in (ExitCode.OK, ExitCode.INVALID), result.output
