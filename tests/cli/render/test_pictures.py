"""show, graph and gantt: the journal as a person reads it and as pictures."""

import re
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


def _svg_texts(path):
    import xml.etree.ElementTree as ET

    return ["".join(el.itertext()) for el in ET.parse(path).iter() if el.tag.endswith("}text")]


def _two_hundred(run_task):
    from benchmarks._common import noop, random_dag

    return run_task(Task(name="wide", goal="200 steps", plan=random_dag(200, 12, 7)), tools=[noop])


def test_the_svg_holds_every_step_id_as_text(run_task, tmp_path):
    """Ctrl-F finds a step: its id is a <text> element, not glyphs drawn as paths."""
    _, journal = _two_hundred(run_task)
    out = tmp_path / "graph.svg"
    assert invoke("graph", journal.path, "--format", "svg", "--out", out).exit_code == 0
    texts = set(_svg_texts(out))
    assert {f"s{i}" for i in range(200)} <= texts


def test_the_png_of_200_steps_is_of_a_readable_size(run_task, tmp_path):
    """Not 3600x12150: the size follows the layout, each side under 6,000 px, at full scale."""
    import matplotlib.image

    from stepgraph.cli.render._draw import HEADER_PX, MAX_SIDE_PX, draw

    _, journal = _two_hundred(run_task)
    out = tmp_path / "graph.png"
    layout = draw(load_picture(journal.path), out, "png")
    height, width = matplotlib.image.imread(out).shape[:2]
    assert max(width, height) <= MAX_SIDE_PX and width * height <= 12_000_000
    assert min(width, height) >= 400
    # Drawn one layout unit to a pixel (a 12 px id is 12 px on screen): the size is the
    # layout's and the header's, not a fixed height per step.
    assert abs(height - (layout.height + HEADER_PX)) <= 2
    assert width >= layout.width - 2


def test_an_unverified_run_is_not_drawn_verified(run_task, tmp_path):
    """A failed declared check: its step is drawn check failed, the title says unverified."""
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "6 * 7"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
        ],
        checks=[{"expression": "${b} == 44", "why": "wrong on purpose"}],
        answer="${b}",
    )
    result, journal = run_task(task)
    assert result.status.value == "unverified"
    picture = load_picture(journal.path)
    assert picture.outcomes["b"] == "check_failed"
    assert set(picture.outcomes.values()) != {"verified"}
    out = tmp_path / "graph.svg"
    assert invoke("graph", journal.path, "--format", "svg", "--out", out).exit_code == 0
    svg = out.read_text()
    from stepgraph.cli.render._palette import SWATCHES

    assert SWATCHES["check_failed"].fill in svg
    assert any("unverified" in text for text in _svg_texts(out))


def test_a_repaired_run_is_drawn_as_it_ended(tmp_path):
    """The first round's failed check does not stain the round that passed (as the run said)."""
    model = ScriptedLLM(
        [
            migration_plan("floor", answer="${nights} nights"),
            migration_plan("ceil", answer="${nights} nights"),
        ]
    )
    task = Task(name="t", goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    result = Engine(planner=Planner(model)).run(task, journal=tmp_path / "j.jsonl")
    assert result.status.value == "verified"
    assert load_picture(tmp_path / "j.jsonl").outcomes == result.step_states


def test_gantt_bars_last_what_show_prints(run_task):
    """A bar is the call: its length is the observation's duration, the time `show` prints."""
    import re

    _, journal = run_task(EXAMPLES / "links" / "links.yaml")
    bars = timeline(journal)
    printed = {
        m.group(1): float(m.group(2))
        for m in re.finditer(
            r"\[(\w+)\] observation: .*?\(([\d.]+) ms", flat(invoke("show", journal.path).output)
        )
    }
    assert printed and set(printed) <= {bar.step for bar in bars}
    for bar in bars:
        drawn = (bar.end - bar.start).total_seconds() * 1000
        if bar.start > bar.queued:
            assert abs(drawn - bar.duration_ms) < 0.01
        else:  # the timer began a moment before the action was journaled: the bar starts there
            assert drawn <= bar.duration_ms + 0.01
        if bar.step in printed:
            assert abs(bar.duration_ms - printed[bar.step]) <= 0.05 + 1e-9  # `show` rounds to 0.1
        assert bar.queued <= bar.start


def test_a_tall_gantt_has_its_axis_on_top_too_and_no_wide_blank_margins(run_task, tmp_path):
    import matplotlib.image
    import numpy as np

    _, journal = _two_hundred(run_task)
    svg = tmp_path / "gantt.svg"
    assert invoke("gantt", journal.path, "--out", svg).exit_code == 0
    texts = _svg_texts(svg)
    ticks = [t for t in texts if re.fullmatch(r"\d+(\.\d+)?", t)]
    assert ticks and all(ticks.count(t) == 2 for t in set(ticks))  # top and bottom
    png = tmp_path / "gantt.png"
    assert invoke("gantt", journal.path, "--out", png).exit_code == 0
    pixels = matplotlib.image.imread(png)[..., :3]
    ink = np.nonzero((pixels < 0.95).any(axis=2))
    rows, cols = ink
    height, width = pixels.shape[:2]
    assert rows.min() < 40 and height - rows.max() < 40
    assert cols.min() < 40 and width - cols.max() < 40
