import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepgraph.cli import ExitCode
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES, flat, invoke


def test_run_prints_the_verified_answer_and_the_journal_path(tmp_path):
    journal = tmp_path / "j.jsonl"
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", journal)
    assert result.exit_code == ExitCode.OK
    assert "Answer: 3 nights (962.28 GB per night; 2,500 GB in all)" in result.output
    assert "Status: verified  (7/7 verdicts passed)" in result.output
    assert f"Journal: {journal}" in result.output.replace("\n", "")
    assert read_journal(journal).of_kind("run.end")[0].status == "verified"


def test_run_writes_the_journal_under_runs_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("run", EXAMPLES / "migration.yaml").exit_code == ExitCode.OK
    [journal] = (tmp_path / "runs").glob("*-migration.jsonl")
    assert journal.name[:8].isdigit()


def test_json_output_is_the_run_result(tmp_path):
    result = invoke("run", EXAMPLES / "migration.yaml", "--json", "--journal", tmp_path / "j.jsonl")
    data = json.loads(result.stdout)
    assert data["status"] == "verified"
    assert data["values"]["nights"] == 3
    magnitude, unit = data["values"]["per_night"]["$quantity"]
    assert unit == "GB" and round(magnitude, 6) == 962.28


def test_set_answers_for_another_migration(tmp_path):
    """10 TiB over 1 Gbps: computed here independently with plain floats."""
    total_gb = 10 * 2**40 / 1e9
    per_night_gb = 1e9 / 8 * 6 * 3600 * 0.9 * 0.88 / 1e9
    nights = -(-total_gb // per_night_gb)
    result = invoke(
        "run",
        EXAMPLES / "migration.yaml",
        "--set",
        "data=10TiB",
        "--set",
        "link=1Gbps",
        "--json",
        "--journal",
        tmp_path / "j.jsonl",
    )
    data = json.loads(result.stdout)
    assert data["values"]["nights"] == nights == 6
    assert data["values"]["per_night"]["$quantity"][0] == pytest.approx(per_night_gb)


def test_a_set_value_of_the_wrong_dimension_exits_invalid():
    result = invoke("run", EXAMPLES / "migration.yaml", "--set", "data=10Gbps")
    assert result.exit_code == ExitCode.INVALID
    assert "'data' is [information], but '10Gbps' is [information] / [time]" in flat(result.output)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("[1, 2]", "must be a mapping"),
        ("goal: x\nsteps: []\n", "steps: unknown key"),
        ("goal: x\n", "has no plan"),
    ],
)
def test_bad_task_files_exit_invalid_with_a_clear_message(tmp_path, text, message):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    result = invoke("run", path)
    assert result.exit_code == ExitCode.INVALID
    assert message in flat(result.output)


def write_plan(tmp_path, steps, checks=""):
    path = tmp_path / "plan.yaml"
    path.write_text(f"goal: test\nplan:\n  steps: {json.dumps(steps)}\n{checks}")
    return path


def test_an_invalid_plan_exits_invalid_and_is_journaled(tmp_path):
    steps = [
        {"id": "a", "tool": "calculate", "args": {"expression": "${b}"}},
        {"id": "b", "tool": "calculate", "args": {"expression": "${a}"}},
    ]
    journal = tmp_path / "j.jsonl"
    result = invoke("run", write_plan(tmp_path, steps), "--journal", journal)
    assert result.exit_code == ExitCode.INVALID
    assert "cycle a -> b -> a" in result.output
    [invalid] = read_journal(journal).of_kind("plan.invalid")
    assert invalid.problems == ["step 'a': cycle a -> b -> a; remove one of these dependencies"]


def test_validate_runs_only_the_static_checks(tmp_path):
    assert invoke("validate", EXAMPLES / "migration.yaml").exit_code == ExitCode.OK
    bad = write_plan(tmp_path, [{"id": "a", "tool": "nope", "args": {}}])
    result = invoke("validate", bad)
    assert result.exit_code == ExitCode.INVALID and "unknown tool 'nope'" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_tool_that_raises_exits_step_failed_and_keeps_other_observations(tmp_path):
    (tmp_path / "tools.py").write_text(
        "from stepgraph import tool\n\n"
        "@tool\ndef fragile(x: int) -> int:\n"
        '    """Fail on purpose."""\n'
        "    raise RuntimeError('disk on fire')\n"
    )
    steps = [
        {"id": "a", "tool": "fragile", "args": {"x": 1}},
        {"id": "b", "tool": "calculate", "args": {"expression": "6 * 7"}},
    ]
    path = write_plan(tmp_path, steps)
    path.write_text(path.read_text() + "plugins: [tools.py]\n")
    journal = tmp_path / "j.jsonl"
    result = invoke("run", path, "--journal", journal)
    assert result.exit_code == ExitCode.STEP_FAILED
    assert "[a] observation: ERROR RuntimeError: disk on fire" in flat(result.output)
    observed = {e.step: e.ok for e in read_journal(journal).of_kind("observation")}
    assert observed == {"a": False, "b": True}


def test_a_failed_check_exits_unverified(tmp_path):
    steps = [{"id": "n", "tool": "calculate", "args": {"expression": "1 + 1"}}]
    path = write_plan(tmp_path, steps, "  checks: [{expression: '${n} > 2'}]\n")
    result = invoke("run", path, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.UNVERIFIED
    assert "FAIL" in result.output


def test_approve_never_plans_but_runs_nothing(tmp_path):
    journal = tmp_path / "j.jsonl"
    result = invoke("run", EXAMPLES / "migration.yaml", "--approve", "never", "--journal", journal)
    assert result.exit_code == ExitCode.NOT_RUN
    events = read_journal(journal)
    assert events.of_kind("plan.rejected") and not events.of_kind("action")


def test_tools_lists_schemas_including_a_task_s_custom_tools():
    data = json.loads(invoke("tools", "--json").stdout)
    assert [t["name"] for t in data] == ["calculate", "unit_convert"]
    custom = json.loads(
        invoke("tools", EXAMPLES / "company" / "company.yaml", "--json", "--trust-plugins").stdout
    )
    assert {t["name"] for t in custom} == {"calculate", "find_company", "list_shareholders"}


SCRIPT = Path(sys.executable).with_name("stepgraph")


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed next to python")
def test_the_installed_console_script_runs_the_example(tmp_path):
    """What the README's first command does, in a real process."""
    proc = subprocess.run(
        [
            str(SCRIPT),
            "run",
            str(EXAMPLES / "migration.yaml"),
            "--journal",
            str(tmp_path / "j.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 nights (962.28 GB per night" in proc.stdout


def test_module_entry_point_reports_its_usage():
    proc = subprocess.run(
        [sys.executable, "-m", "stepgraph", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and "run" in proc.stdout


def test_an_unwritable_journal_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", blocker / "j.jsonl")
    assert result.exit_code == ExitCode.INVALID
    assert "cannot write the journal" in flat(result.output)
