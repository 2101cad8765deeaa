"""Approval: policies, a person at the prompt (edit, revise), plan files approved offline."""

import io
import json

import pytest
from rich.console import Console

from stepgraph import ApprovalError, ApprovalPolicy, Engine, Planner, RunStatus, Task, tool
from stepgraph.cli import ExitCode
from stepgraph.cli.render._review import ConsoleApprover
from stepgraph.exceptions import TaskFileError
from stepgraph.executor import validate_plan
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, invoke
from tests.planner.conftest import migration_plan

SENT = []


@tool(side_effects=True)
def send_report(text: str) -> str:
    """Send a report to the team (changes the world)."""
    SENT.append(text)
    return "sent"


def report_task(**fields):
    steps = [
        {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
        {"id": "mail", "tool": "send_report", "args": {"text": "nights: ${n}"}},
    ]
    return Task(goal="report the nights", plan={"steps": steps}, **fields)


def run(task, tmp_path, **options):
    path = tmp_path / f"j{len(list(tmp_path.glob('*.jsonl')))}.jsonl"
    engine = Engine(tools=[send_report], planner=options.pop("planner", None))
    try:
        return engine.run(task, journal=path, **options), read_journal(path)
    except ApprovalError as error:
        return error, read_journal(path)


def test_without_a_terminal_a_plan_with_side_effects_is_refused_with_how_to_approve(tmp_path):
    SENT.clear()
    error, journal = run(report_task(), tmp_path)
    assert isinstance(error, ApprovalError)
    assert "send_report" in str(error) and "stepgraph approve plan.json" in str(error)
    assert SENT == [] and journal.of_kind("run.end")[0].status == "not_approved"


def test_a_plan_without_side_effects_is_approved_by_default(run_task):
    result, journal = run_task(EXAMPLES / "migration.yaml")
    [approved] = journal.of_kind("plan.approved")
    assert approved.how == "policy:auto" and approved.plan_hash == result.plan.plan_hash()
    assert approved.when.endswith("Z")


def test_readonly_refuses_side_effects_and_never_runs_nothing(tmp_path):
    error, _ = run(report_task(approval=ApprovalPolicy.READONLY), tmp_path)
    assert isinstance(error, ApprovalError)
    result, journal = run(report_task(approval=ApprovalPolicy.NEVER), tmp_path)
    assert result.status is RunStatus.NOT_RUN
    assert journal.of_kind("plan.rejected")[0].how == "policy:never"
    assert journal.of_kind("action") == []


def test_ask_without_a_person_never_waits_it_parks(tmp_path):
    """No terminal: the run returns at once, parked, with nothing run (see test_park.py)."""
    SENT.clear()
    result, journal = run(report_task(), tmp_path, approval=ApprovalPolicy.ASK)
    assert result.status is RunStatus.AWAITING_APPROVAL
    assert [e.event for e in journal.events][-1] == "plan.awaiting"
    assert SENT == [] and journal.of_kind("action") == []


def approver(answers, engine_tools=(send_report,)):
    output = io.StringIO()
    console = Console(file=output, width=120)
    engine = Engine(tools=list(engine_tools))

    def check(plan):
        validate_plan(plan, engine.tools, {}, [])

    return ConsoleApprover(console, check, stream=io.StringIO(answers), who="alice"), output


def test_a_person_sees_the_plan_and_approves_it(tmp_path):
    SENT.clear()
    person, output = approver("a\n")
    result, journal = run(report_task(), tmp_path, approver=person)
    # The answer is what send_report returned, which nothing checks: it ran, unchecked.
    assert result.status is RunStatus.UNCHECKED and SENT == ["nights: 3"]
    shown = output.getvalue()
    assert "send_report (side effects)" in shown
    assert "2 steps. Critical path: n -> mail" in shown
    assert "Tools with side effects: send_report" in shown
    [approved] = journal.of_kind("plan.approved")
    assert (approved.who, approved.how) == ("alice", "person")


def test_a_person_rejects_the_plan(tmp_path):
    SENT.clear()
    person, _ = approver("r\n")
    result, journal = run(report_task(), tmp_path, approver=person)
    assert result.status is RunStatus.NOT_RUN and SENT == []
    assert journal.of_kind("plan.rejected")[0].who == "alice"


def test_a_person_edits_the_plan_in_their_editor(tmp_path, monkeypatch):
    """$EDITOR changes the report text; the edit is validated, shown again, then approved."""
    SENT.clear()
    monkeypatch.setenv("EDITOR", "sed -i 's/nights:/Nights needed:/'")
    person, output = approver("e\na\n")
    result, journal = run(report_task(), tmp_path, approver=person)
    assert SENT == ["Nights needed: 3"]
    [edited] = journal.of_kind("plan.edited")
    assert edited.diff["changed"]["mail"]["args"][1] == {"text": "Nights needed: ${n}"}
    assert output.getvalue().count("Critical path") == 2


def test_an_invalid_edit_is_refused_and_the_person_asked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITOR", "sed -i s/send_report/send_fax/")
    person, output = approver("e\nr\n")
    result, journal = run(report_task(), tmp_path, approver=person)
    assert "unknown tool 'send_fax'" in output.getvalue()
    assert result.status is RunStatus.NOT_RUN and not journal.of_kind("plan.edited")


def test_a_person_asks_the_planner_to_revise(tmp_path):
    person, _ = approver("v\nround up, not down\na\n", engine_tools=())
    model = ScriptedLLM(
        [migration_plan("floor", answer="${nights}"), migration_plan("ceil", answer="${nights}")]
    )
    task = Task(
        goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"}, approval=ApprovalPolicy.ASK
    )
    result, journal = run(task, tmp_path, approver=person, planner=Planner(model))
    assert result.answer == "3" and result.status is RunStatus.VERIFIED
    assert "round up, not down" in model.requests[1][-1]["content"]
    assert journal.of_kind("plan.revise")[0].comment == "round up, not down"


def test_offline_approval_write_approve_run(tmp_path):
    plan_file = tmp_path / "plan.json"
    assert invoke("plan", EXAMPLES / "migration.yaml", "--out", plan_file).exit_code == 0
    unapproved = invoke("run", "--plan", plan_file, "--journal", tmp_path / "a.jsonl")
    assert unapproved.exit_code == ExitCode.NOT_RUN and "not approved" in unapproved.output
    assert invoke("approve", plan_file, "--by", "bob").exit_code == 0
    assert json.loads(plan_file.read_text())["approval"]["by"] == "bob"
    approved = invoke("run", "--plan", plan_file, "--journal", tmp_path / "b.jsonl")
    assert approved.exit_code == ExitCode.OK, approved.output
    [event] = read_journal(tmp_path / "b.jsonl").of_kind("plan.approved")
    assert (event.who, event.how) == ("bob", "file")


def test_a_plan_changed_after_approval_does_not_run(tmp_path):
    plan_file = tmp_path / "plan.json"
    invoke("plan", EXAMPLES / "migration.yaml", "--out", plan_file)
    invoke("approve", plan_file)
    data = json.loads(plan_file.read_text())
    data["plan"]["steps"][2]["args"]["expression"] += " * 2"
    plan_file.write_text(json.dumps(data))
    result = invoke("run", "--plan", plan_file, "--journal", tmp_path / "c.jsonl")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH
    assert "changed after it was written" in " ".join(result.output.split())


@pytest.mark.parametrize("answer", ["a", "r"])
def test_the_prompt_in_a_real_pseudo_terminal(tmp_path, answer):
    """A person at a terminal: the default policy asks because the plan has side effects."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    (tmp_path / "mail.py").write_text(
        "from stepgraph import tool\n\n@tool(side_effects=True)\n"
        "def send_report(text: str) -> str:\n    '''Send a report.'''\n    return 'sent'\n"
    )
    (tmp_path / "task.yaml").write_text(
        "goal: report\nplugins: [mail.py]\nplan:\n  steps:\n"
        "    - {id: mail, tool: send_report, args: {text: hello}}\n"
    )
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stepgraph",
            "run",
            str(tmp_path / "task.yaml"),
            "--journal",
            str(tmp_path / "j.jsonl"),
        ],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
        env={**os.environ, "COLUMNS": "120", "TERM": "dumb"},
    )
    os.close(secondary)
    seen, deadline = b"", time.monotonic() + 60
    while b"[a]pprove" not in seen and time.monotonic() < deadline:
        if select.select([primary], [], [], 0.5)[0]:
            seen += os.read(primary, 4096)
    assert b"[a]pprove" in seen, seen.decode(errors="replace")
    os.write(primary, f"{answer}\n".encode())
    try:
        while select.select([primary], [], [], 5)[0]:
            if not os.read(primary, 4096):
                break
    except OSError:
        pass  # the terminal closes when the process exits
    code = process.wait(timeout=60)
    os.close(primary)
    journal = read_journal(tmp_path / "j.jsonl")
    if answer == "a":
        assert code == ExitCode.UNCHECKED and journal.of_kind("plan.approved")[0].how == "person"
    else:
        assert code == ExitCode.NOT_RUN and journal.of_kind("plan.rejected")[0].how == "person"


def test_a_person_at_the_prompt_sees_the_plan_once_with_the_live_display(tmp_path):
    """The display printed the plan's table and the review printed it again: two plans?"""
    import time

    from stepgraph.cli.render._progress import LiveProgress

    SENT.clear()
    output = io.StringIO()
    console = Console(file=output, width=160, force_terminal=True)
    progress = LiveProgress(console, refresh_per_second=200)

    def pause():
        # The worst timing: the display has drawn a frame since the plan arrived.
        drawn, deadline = progress.frames, time.monotonic() + 5
        while progress.frames < drawn + 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        return progress.reviewing()

    engine = Engine(tools=[send_report])
    person = ConsoleApprover(
        console,
        lambda plan: validate_plan(plan, engine.tools, {}, []),
        stream=io.StringIO("a\n"),
        who="alice",
        pause=pause,
    )
    with progress:
        result, journal = run(report_task(), tmp_path, approver=person, listeners=[progress])
    shown = output.getvalue()
    assert result.status is RunStatus.UNCHECKED and SENT == ["nights: 3"]
    assert shown.count("ceil(2500 GB / (962.28 GB))") == 1  # the review's table only
    assert "send_report (side effects)" in shown and "[mail] observation: sent" in shown


def test_a_plan_nobody_reviews_is_still_shown_by_the_live_display(tmp_path):
    from stepgraph.cli.render._progress import LiveProgress

    output = io.StringIO()
    console = Console(file=output, width=160, force_terminal=True)
    with LiveProgress(console, refresh_per_second=200) as progress:
        Engine().run(
            EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl", listeners=[progress]
        )
    shown = output.getvalue()
    assert shown.count("ceil(${total} / ${per_night})") == 1 and "arguments and thought" in shown


def test_a_policy_named_as_text_is_that_policy_and_a_wrong_name_is_refused(tmp_path):
    """`approval="readonly"` from Python reads as the policy; a typo is an error, not a crash."""
    SENT.clear()
    error, journal = run(report_task(), tmp_path, approval="readonly")
    assert isinstance(error, ApprovalError) and SENT == []
    assert journal.of_kind("run.end")[0].status == "not_approved"
    with pytest.raises(ApprovalError, match="'readonyl' is no approval policy; choose auto"):
        Engine(tools=[send_report]).run(report_task(), approval="readonyl", journal=False)


def test_a_goal_passed_where_a_task_file_goes_says_how_to_pass_a_goal():
    with pytest.raises(TaskFileError, match=r"to plan a goal, pass Task\(name=..., goal=...\)"):
        Engine().run("How many nights does it take to move 2.5 TB?")
