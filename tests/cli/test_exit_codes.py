"""Every exit code means one thing: each meaning, through the real command line."""

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stepgraph.cli import ExitCode
from stepgraph.engine import _park
from stepgraph.journal import read_journal
from tests.conftest import CRASHING_TOOLS, EXAMPLES, ROOT, crash_calls, flat, invoke, run_killed

LINUX_DEVICES = pytest.mark.skipif(
    not (Path("/dev/full").exists() and Path("/proc/self/fd").is_dir()),
    reason="needs /dev/full and /proc/self/fd",
)


def test_no_two_meanings_share_a_number_and_the_cli_guide_lists_each():
    assert len(ExitCode.__members__) == len({int(code) for code in ExitCode})  # no aliases
    rows = re.findall(r"^\| (\d+) \| ", (ROOT / "docs" / "cli.md").read_text(), re.MULTILINE)
    assert sorted(map(int, rows)) == sorted(int(code) for code in ExitCode)


PAY_TASK = """
name: pay
goal: pay twice x
plugins: [crash_tools.py]
approval: auto
plan:
  steps:
    - {id: base, tool: calculate, args: {expression: "1 + 2"}}
    - {id: pay, tool: pays, args: {x: "${base}"}}
  answer: "paid ${pay}"
"""


@pytest.fixture
def paying(tmp_path: Path) -> Path:
    task = tmp_path / "pay.yaml"
    task.write_text(PAY_TASK)
    (tmp_path / "crash_tools.py").write_text(CRASHING_TOOLS)
    return task


def test_a_policy_that_refuses_the_plan_exits_not_run(paying, tmp_path):
    """6: `readonly` does not run a side effect unasked; nothing runs."""
    result = invoke("run", paying, "--approve", "readonly", "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.NOT_RUN
    assert "side effects (pays)" in flat(result.output) and crash_calls(tmp_path) == 0


def test_a_resume_with_a_side_effect_in_flight_exits_12_and_pays_nobody(paying, tmp_path):
    """12: the killed run's payment may have happened; resume does not pay again unasked."""
    journal = tmp_path / "j.jsonl"
    run_killed(paying, journal)
    assert crash_calls(tmp_path) == 1
    refused = invoke("resume", journal)
    assert refused.exit_code == ExitCode.SIDE_EFFECTS_IN_FLIGHT
    assert "step(s) pay started" in flat(refused.output)
    assert "--rerun-side-effects" in flat(refused.output)
    assert crash_calls(tmp_path) == 1 and read_journal(journal).of_kind("run.resume") == []
    rerun = invoke("resume", journal, "--rerun-side-effects")
    assert rerun.exit_code == ExitCode.UNCHECKED, rerun.output  # ran; a payment is unchecked
    assert crash_calls(tmp_path) == 2


def test_a_resume_after_the_tools_changed_exits_approval_mismatch(tmp_path):
    """13: the run was approved with other tool code than would finish it."""
    task = tmp_path / "crash.yaml"
    task.write_text(PAY_TASK.replace("tool: pays", "tool: crashes"))
    journal = tmp_path / "j.jsonl"
    run_killed(task, journal)
    plugin = tmp_path / "crash_tools.py"
    plugin.write_text(plugin.read_text().replace("return x * 2", "return x * 3"))
    result = invoke("resume", journal)
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH
    assert "the tools changed since the run started" in flat(result.output)
    assert crash_calls(tmp_path) == 1


def test_a_decision_while_another_process_decides_exits_decision_conflict(tmp_path, monkeypatch):
    """14: `approve` while the run's journal is locked by another decider."""
    runs = tmp_path / "runs"
    journal = runs / "m.jsonl"
    parked = invoke("run", EXAMPLES / "migration.yaml", "--approve", "ask", "--journal", journal)
    assert parked.exit_code == ExitCode.AWAITING
    run_id = read_journal(journal).events[0].run_id
    monkeypatch.setattr(_park, "LOCK_WAIT", 0.01)
    with journal.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = invoke("approve", run_id, "--by", "alice", "--runs", runs)
    assert result.exit_code == ExitCode.DECISION_CONFLICT
    assert "another process is deciding" in flat(result.output)
    assert read_journal(journal).of_kind("plan.approved") == []


FULL_DISK_TOOLS = '''
import os
from pathlib import Path

from stepgraph import tool


@tool(side_effects=True)
def pay_then_fill_disk(x: float) -> float:
    """Pay x; then the disk fills: the journal's descriptor writes to /dev/full from now on."""
    Path(__file__).with_name("paid").write_text(str(x))
    journal = str(Path(os.environ["STEPGRAPH_TEST_JOURNAL"]).resolve())
    full = os.open("/dev/full", os.O_WRONLY)
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == journal:
                os.dup2(full, int(fd))
        except OSError:
            continue
    os.close(full)
    return x
'''

FULL_DISK_TASK = """
name: full
goal: pay, then the disk is full
plugins: [full_tools.py]
approval: auto
plan:
  steps:
    - {id: pay, tool: pay_then_fill_disk, args: {x: 10}}
    - {id: after, tool: calculate, args: {expression: "${pay} + 1"}}
"""


@LINUX_DEVICES
def test_a_journal_that_fails_after_a_tool_ran_exits_journal_incomplete(tmp_path):
    """15: the payment happened, its observation could not be written: not 'nothing ran'."""
    (tmp_path / "full_tools.py").write_text(FULL_DISK_TOOLS)
    (tmp_path / "full.yaml").write_text(FULL_DISK_TASK)
    journal = tmp_path / "j.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["STEPGRAPH_TEST_JOURNAL"] = str(journal)
    result = subprocess.run(
        [sys.executable, "-m", "stepgraph", "run", str(tmp_path / "full.yaml"),
         "--journal", str(journal)],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == ExitCode.JOURNAL_INCOMPLETE, result.stdout + result.stderr
    message = flat(result.stderr)
    assert "cannot write the journal: No space left on device" in message
    assert "does not record all the run did" in message and "Traceback" not in message
    assert (tmp_path / "paid").read_text() == "10.0"
    assert [e.step for e in read_journal(journal).of_kind("action")] == ["pay"]


@LINUX_DEVICES
def test_a_journal_that_cannot_be_written_before_any_tool_exits_invalid(paying, tmp_path):
    """3: with the disk full from the start, nothing ran; that is still 'invalid'."""
    result = invoke("run", paying, "--journal", "/dev/full")
    assert result.exit_code == ExitCode.INVALID
    assert "No space left on device" in flat(result.output)
    assert "does not record" not in flat(result.output) and crash_calls(tmp_path) == 0


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("STEPGRAPH_CROSS_ROUTE", "bogus", "'plan', 'worked', 'worked-code' or 'auto'"),
        ("STEPGRAPH_REASON_FIRST", "maybe", "valid boolean"),
        # two kinds (a boolean or auto): named once, with both
        ("STEPGRAPH_PROGRAM_ONLY", "sometimes", "valid boolean, unable to interpret input or"),
    ],
)
def test_a_wrong_planner_setting_in_the_environment_is_a_usage_error(
    tmp_path, variable, value, said
):
    """Variables with no flag of their own were an 'internal error' (exit 70)."""
    script = tmp_path / "s.yaml"
    script.write_text("scripted: true\nresponses: ['x']\n")
    result = invoke("run", EXAMPLES / "migration.yaml", "--scripted", script, env={variable: value})
    assert result.exit_code == ExitCode.USAGE
    assert f"{variable}='{value}'" in flat(result.output) and said in flat(result.output)
    assert flat(result.output).count(value) == 1, result.output  # one line per variable
    assert "internal error" not in result.output
