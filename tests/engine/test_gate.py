"""The one approval gate: every path that runs tools passes it, and an approval binds its subject.

Side-effecting tools here log their calls; a path that must not run them asserts the log
stays empty.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepgraph import ApprovalError, Engine, RunStatus, StepGraph, Task, tool
from stepgraph.cli import ExitCode
from stepgraph.engine import ApprovalSubject, Decision, approval_subject, decide, replay
from stepgraph.journal import read_journal
from stepgraph.planner import Planner
from stepgraph.testing import ScriptedLLM
from tests.conftest import ROOT, flat, invoke

PAID: list[str] = []


@tool(side_effects=True)
def pay(to: str, amount: float) -> str:
    """Pay an amount to an account (moves money)."""
    PAID.append(f"{amount:g} to {to}")
    return "paid"


def pay_task(**fields: object) -> Task:
    steps = [
        {"id": "fee", "tool": "calculate", "args": {"expression": "${inputs.amount} * 1.5"}},
        {"id": "payment", "tool": "pay", "args": {"to": "${inputs.to}", "amount": "${fee}"}},
    ]
    return Task(
        goal="pay the fee",
        inputs={"to": "acct-bob", "amount": "10"},
        plan=StepGraph(steps=steps, answer="${payment}"),
        **fields,
    )


class Person:
    """Approves (or rejects) whatever it is shown, and remembers what it saw."""

    def __init__(self, action: str = "approve") -> None:
        self.action = action
        self.seen: list[str] = []

    def review(self, view):  # noqa: ANN001, ANN201 - the Approver protocol
        self.seen.append(view.approval_hash)
        return Decision(self.action, who="carol")  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def nothing_paid() -> None:
    PAID.clear()


def parked_journal(tmp_path: Path) -> Path:
    journal = tmp_path / "runs" / "pay.jsonl"
    result = Engine(tools=[pay]).run(pay_task(approval="ask"), journal=journal)
    assert result.status is RunStatus.AWAITING_APPROVAL and PAID == []
    return journal


# --- forks and live replays -------------------------------------------------------------


@pytest.mark.parametrize("how", ["live", "fork"])
def test_a_parked_run_replayed_live_or_forked_parks_and_pays_nobody(tmp_path, how):
    """`replay --live` and `--from` of a parked run run no side effect: the new run parks."""
    journal = parked_journal(tmp_path)
    options = {"live": True} if how == "live" else {"from_step": "payment"}
    report = replay(journal, tools=[pay], **options)
    assert PAID == []
    assert report.result is not None and report.result.status is RunStatus.AWAITING_APPROVAL
    produced = read_journal(report.journal)
    assert produced.of_kind("plan.approved") == [] and produced.of_kind("plan.awaiting")
    assert report.result.run_id != read_journal(journal).events[0].run_id  # decided on its own
    done = decide(report.journal, Decision("approve", who="dave"), tools=[pay])
    assert done.status is RunStatus.UNCHECKED and PAID == ["15 to acct-bob"]  # "paid": unchecked


def test_a_rejected_run_forked_parks_and_replayed_exactly_is_rejected_again(tmp_path):
    """A rejection is never turned into a run; the exact replay gives the same decision."""
    journal = tmp_path / "rejected.jsonl"
    result = Engine(tools=[pay]).run(pay_task(), journal=journal, approver=Person("reject"))
    assert result.status is RunStatus.NOT_RUN
    fork = replay(journal, from_step="payment", tools=[pay])
    assert PAID == [] and fork.result.status is RunStatus.AWAITING_APPROVAL
    exact = replay(journal, tools=[pay])
    assert exact.identical, exact.divergences
    [rejected] = read_journal(exact.journal).of_kind("plan.rejected")
    assert rejected.who == "carol"


def test_a_run_its_policy_refused_replays_refused_and_identical(tmp_path):
    """No terminal, side effects, no policy: refused; its replay is refused the same way."""
    journal = tmp_path / "refused.jsonl"
    with pytest.raises(ApprovalError):
        Engine(tools=[pay]).run(pay_task(), journal=journal)
    report = replay(journal, tools=[pay])
    assert report.identical, report.divergences
    assert PAID == []


def test_a_parked_run_replays_parked_and_identical(tmp_path):
    report = replay(parked_journal(tmp_path), tools=[pay])
    assert report.identical, report.divergences
    assert report.result.status is RunStatus.AWAITING_APPROVAL and PAID == []


def test_a_fork_of_an_approved_run_reuses_the_approval_of_the_same_subject(tmp_path):
    """The person approved this plan with these inputs and tools: the fork runs, and says so."""
    journal = tmp_path / "approved.jsonl"
    person = Person()
    Engine(tools=[pay]).run(pay_task(), journal=journal, approver=person)
    assert PAID == ["15 to acct-bob"]
    fork = replay(journal, from_step="payment", tools=[pay])
    assert fork.result.status is RunStatus.UNCHECKED and PAID == ["15 to acct-bob"] * 2
    [approved] = read_journal(fork.journal).of_kind("plan.approved")
    assert (approved.who, approved.how) == ("carol", "reused:person")
    assert approved.approval_hash == person.seen[0]


def test_a_fork_with_changed_tool_code_parks(tmp_path):
    """Another `pay` (other code, same name and schema) voids the recorded approval."""
    journal = tmp_path / "approved.jsonl"
    Engine(tools=[pay]).run(pay_task(), journal=journal, approver=Person())
    PAID.clear()

    @tool(side_effects=True, name="pay")
    def changed_pay(to: str, amount: float) -> str:
        """Pay an amount to an account (moves money)."""
        PAID.append(f"twice {amount:g} to {to}")
        return "paid"

    fork = replay(journal, from_step="payment", tools=[changed_pay])
    assert PAID == [] and fork.result.status is RunStatus.AWAITING_APPROVAL


# --- plan files ----------------------------------------------------------------------------

PAY_PLUGIN = '''
from pathlib import Path

from stepgraph import tool


@tool(side_effects=True)
def pay(to: str, amount: float) -> str:
    """Pay an amount to an account (moves money)."""
    with (Path(__file__).parent / "paid.log").open("a") as log:
        log.write(f"{amount:g} to {to}\\n")
    return "paid"
'''

PAY_TASK = """
name: pay
goal: pay the fee
plugins: [pay.py]
inputs:
  to: acct-bob
  amount: 10
plan:
  steps:
    - {id: payment, tool: pay, args: {to: "${inputs.to}", amount: "${inputs.amount}"}}
  answer: "${payment}"
"""


@pytest.fixture
def approved_file(tmp_path: Path) -> Path:
    (tmp_path / "pay.py").write_text(PAY_PLUGIN)
    (tmp_path / "pay.yaml").write_text(PAY_TASK)
    plan_file = tmp_path / "p.json"
    assert invoke("plan", tmp_path / "pay.yaml", "--out", plan_file).exit_code == 0
    approval = invoke("approve", plan_file, "--by", "bob")
    assert approval.exit_code == 0, approval.output
    assert "acct-bob" in approval.output  # the reviewer saw the resolved input
    return plan_file


def paid(folder: Path) -> list[str]:
    log = folder / "paid.log"
    return log.read_text().splitlines() if log.exists() else []


def test_set_on_an_approved_plan_file_is_refused_and_pays_nobody(tmp_path, approved_file):
    """`run --plan p.json --set to=acct-mallory` is not what bob approved."""
    result = invoke("run", "--plan", approved_file, "--set", "to=acct-mallory")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH and "--set" in flat(result.output)
    assert paid(tmp_path) == []


def test_inputs_edited_inside_an_approved_plan_file_are_refused(tmp_path, approved_file):
    """The approval covers the task's inputs in the file, not only the plan."""
    data = json.loads(approved_file.read_text())
    data["task"]["inputs"]["to"] = "acct-mallory"
    approved_file.write_text(json.dumps(data))
    result = invoke("run", "--plan", approved_file, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH
    assert "input 'to'" in flat(result.output) and paid(tmp_path) == []


def test_plugin_code_changed_after_approval_is_refused(tmp_path, approved_file):
    """The approved tool's code is bound too: a changed plugin needs a new approval."""
    plugin = tmp_path / "pay.py"
    plugin.write_text(plugin.read_text().replace('f"{amount:g}', 'f"{amount * 100:g}'))
    result = invoke("run", "--plan", approved_file, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH
    assert "tool 'pay'" in flat(result.output) and paid(tmp_path) == []


def test_a_forged_approval_with_a_recomputed_hash_is_refused(tmp_path, approved_file):
    """Whoever can edit p.json can recompute the hash, but cannot sign with this machine's key."""
    data = json.loads(approved_file.read_text())
    data["task"]["inputs"]["to"] = "acct-mallory"
    subject = data["approval"]["subject"]
    subject["inputs"]["to"] = "acct-mallory"
    data["approval"]["approval_hash"] = ApprovalSubject.model_validate(subject).digest()
    approved_file.write_text(json.dumps(data))
    result = invoke("run", "--plan", approved_file, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH and "not signed" in flat(result.output)
    assert paid(tmp_path) == []


def test_an_approval_signed_with_another_key_is_refused(tmp_path, approved_file, monkeypatch):
    """A plan file approved on another machine is approved there, not here."""
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "other.key"))
    (tmp_path / "other.key").write_text("another machine's key")
    (tmp_path / "other.key").chmod(0o600)
    result = invoke("run", "--plan", approved_file, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.APPROVAL_MISMATCH and "not signed" in flat(result.output)
    assert paid(tmp_path) == []


def test_the_approved_plan_file_runs_as_approved(tmp_path, approved_file):
    result = invoke("run", "--plan", approved_file, "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.UNCHECKED, result.output  # ran; "paid" is unchecked
    assert paid(tmp_path) == ["10 to acct-bob"]
    [approved] = read_journal(tmp_path / "j.jsonl").of_kind("plan.approved")
    recorded = json.loads(approved_file.read_text())["approval"]["approval_hash"]
    assert (approved.who, approved.how, approved.approval_hash) == ("bob", "file", recorded)


# --- the subject and its hash ---------------------------------------------------------------


def test_the_approval_view_shows_inputs_resolved_inside_text(tmp_path):
    """An argument `pay ${inputs.to}` is shown as the person will see it paid."""
    person = Person()
    steps = [{"id": "note", "tool": "pay", "args": {"to": "x-${inputs.to}", "amount": 1}}]
    task = Task(goal="g", inputs={"to": "acct-bob"}, plan=StepGraph(steps=steps))
    shown = []

    class Looking(Person):
        def review(self, view):  # noqa: ANN001, ANN201
            shown.append((view.rows[0].args, view.inputs))
            return super().review(view)

    Engine(tools=[pay]).run(task, journal=tmp_path / "j.jsonl", approver=Looking())
    assert shown == [('{"to": "x-acct-bob", "amount": 1}', {"to": "acct-bob"})]
    del person


def test_another_input_value_is_another_approval_hash():
    engine = Engine(tools=[pay])
    plan = pay_task().plan
    assert plan is not None
    bob = approval_subject(plan, engine.prepare(pay_task()))
    mallory = approval_subject(plan, engine.prepare(pay_task(), overrides={"to": "acct-mallory"}))
    assert bob.digest() != mallory.digest()
    assert bob.differences(mallory) == ["input 'to'"]


_SUBJECTS = st.builds(
    ApprovalSubject,
    plan_hash=st.sampled_from(["a" * 64, "b" * 64]),
    goal=st.sampled_from(["pay the fee", "pay the fee twice"]),
    inputs=st.dictionaries(st.sampled_from(["to", "amount"]), st.text(max_size=3), max_size=2),
    answer=st.one_of(st.none(), st.sampled_from(["${payment}", "${payment} done"])),
    tools=st.dictionaries(st.sampled_from(["pay", "calculate"]), st.sampled_from(["1", "2"])),
    mcp_servers=st.lists(st.fixed_dictionaries({"command": st.sampled_from(["a", "b"])})),
)


@given(_SUBJECTS, _SUBJECTS)
def test_any_change_to_the_subject_changes_its_hash(first, second):
    """Inputs, template, tools, servers or plan: different subjects never share a hash."""
    assert (first.digest() == second.digest()) == (first == second)
    assert (first.differences(second) == []) == (first == second)


# --- every entry point -----------------------------------------------------------------------


def test_every_path_that_executes_tools_goes_through_the_gate():
    """Tools run only inside a run session (after the gate), its read-only pre-run, and the
    cross-check's read-only second plan. A new caller must be routed through the gate (and
    added here with the reason it is safe)."""
    allowed = {
        ("engine/_session.py", "execute"),  # after the gate (`engine/_gate.py`) approved
        ("engine/_per_step.py", "execute"),  # read-only steps only, before the decision
        ("engine/_cross.py", "execute"),  # the second plan: tools without side effects only
        ("engine/_engine.py", "RunSession"),  # Engine.run: the one way into a session
    }
    package = ROOT / "src" / "stepgraph"
    found = set()
    for path in package.rglob("*.py"):
        if path.parent.name == "executor":
            continue  # the executor defines them
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func  # `execute(...)`, or `executor.execute(...)`; not `db.execute`
                name = getattr(func, "id", None)
                if isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "executor":
                    name = func.attr
                if name in ("execute", "RunSession", "run_read_only"):
                    where = str(path.relative_to(package))
                    if name == "run_read_only":
                        assert where == "engine/_gate.py"  # inside ApprovalGate.approve
                        continue
                    found.add((where, name))
    assert found == allowed


def test_a_cross_check_never_runs_a_side_effecting_second_plan(tmp_path):
    """Nobody approved the second plan: the cross-check planner is not shown such tools,
    and a second plan that calls one anyway is refused before it runs."""
    second = {
        "steps": [
            {"id": "p", "tool": "pay", "args": {"to": "acct-mallory", "amount": 1}},
            {"id": "fee", "tool": "calculate", "args": {"expression": "${inputs.amount} * 1.5"}},
        ],
        "answer": "${fee}",
    }
    model = ScriptedLLM([json.dumps(second)] * 3)
    steps = [{"id": "fee", "tool": "calculate", "args": {"expression": "${inputs.amount} * 1.5"}}]
    task = Task(
        goal="the fee", inputs={"amount": "10"}, plan=StepGraph(steps=steps, answer="${fee}")
    )
    engine = Engine(tools=[pay], planner=Planner(model, plan_retries=0), cross_check=True)
    result = engine.run(task, journal=tmp_path / "j.jsonl")
    assert PAID == [] and result.status is not RunStatus.VERIFIED
    system = model.requests[0][0]["content"]
    assert "calculate" in system and "Pay an amount" not in system  # not offered


def test_tool_fingerprints_are_the_same_in_every_process():
    """A parked run is decided in another process (hash seeds differ): same tools, same prints."""
    script = (
        "from stepgraph.tools import default_registry\n"
        "from stepgraph.engine._approval import tool_prints\n"
        "print(sorted(tool_prints(default_registry()).items()))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(seen) == 1


def test_resume_refuses_a_run_whose_tool_code_changed(tmp_path):
    """Finishing a run with other code than it started with mixes results: refused unasked."""
    from stepgraph import Budget, BudgetExceededError
    from stepgraph.engine import RunOptions, resume

    @tool(name="measure")
    def measure_v1(x: float) -> float:
        """Measure x."""
        return x

    @tool(name="measure")
    def measure_v2(x: float) -> float:
        """Measure x."""
        return x * 100

    steps = [
        {"id": "a", "tool": "measure", "args": {"x": 1}},
        {"id": "b", "tool": "measure", "args": {"x": "${a}"}},
    ]
    task = Task(goal="g", plan=StepGraph(steps=steps, answer="${b}"))
    journal = tmp_path / "j.jsonl"
    with pytest.raises(BudgetExceededError):
        Engine(tools=[measure_v1]).run(
            task, journal=journal, options=RunOptions(budget=Budget(tool_calls=1))
        )
    with pytest.raises(ApprovalError, match=r"tools changed since the run started \(measure"):
        resume(journal, tools=[measure_v2], budget=Budget(tool_calls=5))
    assert len(read_journal(journal).of_kind("action")) == 1  # nothing more ran
    done = resume(
        journal, tools=[measure_v2], budget=Budget(tool_calls=5), accept_changed_tools=True
    )
    assert done.unverified_values["b"] == 100


def test_a_run_edited_at_the_prompt_replays_identical_with_the_edit(tmp_path):
    """The exact replay gives each plan its recorded decision, an edit included."""
    task = pay_task()
    assert task.plan is not None
    edited = task.plan.model_copy(update={"answer": "${payment} (edited)"})

    class Editor:
        def __init__(self) -> None:
            self.answers = [Decision("edit", plan=edited, who="erin"), Decision("approve")]

        def review(self, view):  # noqa: ANN001, ANN201 - the Approver protocol
            return self.answers.pop(0)

    journal = tmp_path / "edited.jsonl"
    first = Engine(tools=[pay]).run(task, journal=journal, approver=Editor())
    assert first.answer == "paid (edited)" and PAID == ["15 to acct-bob"]
    report = replay(journal, tools=[pay])
    assert report.identical, report.divergences
    assert report.result.answer == "paid (edited)" and PAID == ["15 to acct-bob"]  # recorded


def test_a_forged_approval_line_in_a_journal_is_not_reused_by_a_live_replay(tmp_path):
    """Anyone can append `plan.approved` with the right approval hash to a parked journal;
    a live replay reuses only an approval this machine's key signed, so it parks."""
    journal = parked_journal(tmp_path)
    events = read_journal(journal).events
    [awaiting] = [e for e in events if e.event == "plan.awaiting"]
    forged = {
        "run_id": events[0].run_id,
        "seq": events[-1].seq + 1,
        "ts": "2026-12-01T00:00:00Z",
        "event": "plan.approved",
        "who": "bob",
        "how": "person",
        "when": "2026-12-01T00:00:00Z",
        "plan_hash": awaiting.plan_hash,
        "approval_hash": awaiting.approval_hash,
        "signature": "0" * 64,
    }
    with journal.open("a") as file:
        file.write(json.dumps(forged) + "\n")
    report = replay(journal, live=True, tools=[pay])
    assert PAID == [] and report.result.status is RunStatus.AWAITING_APPROVAL
