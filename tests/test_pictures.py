"""show, graph and gantt: the journal as a person reads it and as pictures."""

from datetime import datetime

from stepgraph import Engine, Planner, Task
from stepgraph.cli import ExitCode
from stepgraph.cli.render._gantt import timeline
from stepgraph.cli.render._pictures import load_picture
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, flat, invoke, make_task
from tests.planner.conftest import migration_plan


def test_show_tells_the_run_in_order(tmp_path):
    model = ScriptedLLM(
        [
            migration_plan("floor", answer="${nights} nights"),
            migration_plan("ceil", answer="${nights} nights"),
        ]
    )
    task = Task(name="t", goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    output = flat(invoke("show", tmp_path / "j.jsonl").output)
    order = [
        "run ",
        "model (plan, attempt 1)",
        "from planner: 4 steps",
        "approved by",
        "[rate] action: unit_convert",
        "[rate] observation: 56.25 MB/s",
        "[nights] observation: 2",
        "FAIL check",
        "repair round 1",
        "[rate] kept from an",
        "[nights] observation: 3",
        "answer: 3 nights",
        "run ended: verified",
    ]
    positions = [output.index(part) for part in order]
    assert positions == sorted(positions)


def test_graph_of_a_task_in_mermaid_and_dot():
    mermaid = invoke("graph", EXAMPLES / "migration.yaml").stdout
    assert "flowchart LR" in mermaid and "rate --> per_night" in mermaid
    dot = invoke("graph", EXAMPLES / "migration.yaml", "--format", "dot").stdout
    assert '"total" -> "nights";' in dot


def test_graph_of_a_journal_is_coloured_by_outcome(run_task):
    from stepgraph import tool

    @tool
    def broken() -> int:
        """Fail."""
        raise RuntimeError("no")

    task = make_task(
        [
            {"id": "ok", "tool": "calculate", "args": {"expression": "6 * 7"}},
            {"id": "bad", "tool": "broken"},
            {"id": "after", "tool": "calculate", "args": {"expression": "${bad} + 1"}},
        ]
    )
    _, journal = run_task(task, tools=[broken])
    picture = load_picture(journal.path)
    assert picture.outcomes == {"ok": "verified", "bad": "failed", "after": "skipped"}


def test_graph_and_gantt_write_pictures(run_task, tmp_path):
    _, journal = run_task(EXAMPLES / "links" / "links.yaml")
    for fmt in ("png", "svg"):
        out = tmp_path / f"graph.{fmt}"
        assert invoke("graph", journal.path, "--format", fmt, "--out", out).exit_code == 0
        assert out.read_bytes()[:4] in (b"\x89PNG", b"<?xm")
    assert invoke("graph", journal.path, "--format", "png").exit_code == ExitCode.USAGE
    out = tmp_path / "run.png"
    assert invoke("gantt", journal.path, "--out", out).exit_code == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_gantt_bars_of_independent_steps_overlap(run_task):
    """The parallel example's three probes are drawn side by side in time, not one after another."""
    _, journal = run_task(EXAMPLES / "links" / "links.yaml")
    bars = {bar.step: bar for bar in timeline(journal)}
    probes = [bars[name] for name in ("probe_a", "probe_b", "probe_c")]
    assert max(bar.start for bar in probes) < min(bar.end for bar in probes)
    assert isinstance(probes[0].start, datetime)


def test_replay_and_resume_from_the_command_line(tmp_path):
    journal = tmp_path / "j.jsonl"
    invoke("run", EXAMPLES / "migration.yaml", "--journal", journal)
    replayed = invoke("replay", journal)
    assert replayed.exit_code == 0 and "identical" in replayed.output
    resumed = invoke("resume", journal)
    assert resumed.exit_code == ExitCode.INVALID and "already ended" in flat(resumed.output)


def test_replay_reports_the_first_divergence_and_exits_8(tmp_path):
    """A journal edited by hand (3 nights made 4): the reverse check no longer agrees."""
    journal = tmp_path / "j.jsonl"
    invoke("run", EXAMPLES / "migration.yaml", "--journal", journal)
    lines = journal.read_text().splitlines()
    tampered = [line.replace('"value":3,', '"value":4,') for line in lines]
    journal.write_text("\n".join(tampered) + "\n")
    events = read_journal(journal)
    assert any(e.event == "observation" and e.step == "nights" for e in events.events)
    result = invoke("replay", journal)
    assert result.exit_code == ExitCode.DIVERGED
    output = flat(result.output)
    assert (
        "divergence: check of step 'nights': recorded {'kind': 'reverse', 'passed': True" in output
    )
    assert "produced {'kind': 'reverse', 'passed': False" in output


def test_gantt_writes_next_to_the_journal_by_default_and_says_where(
    run_task, tmp_path, monkeypatch
):
    """It wrote run.png into the current folder, wherever the journal was."""
    _, journal = run_task(EXAMPLES / "links" / "links.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = invoke("gantt", journal.path)
    expected = journal.path.with_suffix(".gantt.png")
    assert result.exit_code == 0, result.output
    assert expected.name.endswith(".gantt.png") and expected.read_bytes()[:4] == b"\x89PNG"
    assert list(elsewhere.iterdir()) == []
    assert f"written to {expected}" in flat(result.output)
