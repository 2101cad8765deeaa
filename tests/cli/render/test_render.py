"""One renderer for `show` and the live display: the same line for the same event."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from stepgraph import Engine, Planner
from stepgraph.cli.render._lines import render_event
from stepgraph.cli.render._progress import LiveProgress
from stepgraph.journal import Action, JournalEvent, Listener, read_journal
from stepgraph.testing import ScriptedLLM
from stepgraph.units import Quantity, parse_quantity
from tests.conftest import EXAMPLES

PLANNED = EXAMPLES / "planned"


def _run(
    tmp_path: Path, task: Path, planner: Planner | None = None, *listeners: Listener
) -> list[JournalEvent]:
    """Run `task`, returning the events as listeners got them; the journal is j.jsonl."""
    heard: list[JournalEvent] = []
    everyone = [heard.append, *listeners]
    Engine(planner=planner).run(task, journal=tmp_path / "j.jsonl", listeners=everyone)
    return heard


def _text(event: JournalEvent) -> str | None:
    line = render_event(event)
    return None if line is None else line.plain


@pytest.mark.parametrize("example", ["migration", "planned"])
def test_an_event_renders_alike_from_a_listener_and_from_the_journal(tmp_path, example):
    if example == "planned":  # model exchanges, a rejected plan, a repair, kept steps
        model = ScriptedLLM.from_file(PLANNED / "migration.script.yaml")
        heard = _run(tmp_path, PLANNED / "migration.yaml", Planner(model))
    else:
        heard = _run(tmp_path, EXAMPLES / "migration.yaml")
    read = read_journal(tmp_path / "j.jsonl").events
    assert [e.seq for e in heard] == [e.seq for e in read]
    # the comparison means something only if the listener saw Python values
    assert any(
        isinstance(value, Quantity)
        for event in heard
        if isinstance(event, Action)
        for value in event.args.values()
    )
    assert [_text(e) for e in heard] == [_text(e) for e in read]


def test_every_kind_in_the_migration_journal_renders_to_a_line(tmp_path):
    _run(tmp_path, EXAMPLES / "migration.yaml")
    by_kind = {event.event: event for event in read_journal(tmp_path / "j.jsonl").events}
    assert {"run.start", "action", "observation", "check", "run.end"} <= by_kind.keys()
    empty = [kind for kind, event in by_kind.items() if not _text(event)]
    assert empty == []


def test_an_expression_action_shows_its_text_and_bound_values():
    nights = Action(
        step="nights",
        tool="calculate",
        attempt=1,
        args={
            "expression": {
                "$expression": "ceil(${total} / ${per_night})",
                "bindings": {
                    "${total}": {"$quantity": [2500, "GB"]},
                    "${per_night}": parse_quantity("962.28 GB"),
                },
            }
        },
    )
    assert _text(nights) == (
        "[nights] action: calculate(ceil(${total} / ${per_night}); "
        "total = 2,500 GB, per_night = 962.28 GB) attempt 1"
    )


def test_an_expression_beside_other_arguments_keeps_its_name():
    args = {"expression": {"$expression": "${n} + 1", "bindings": {"${n}": 2500}}, "x": 1}
    line = _text(Action(tool="f", attempt=2, args=args))
    assert line == "action: f(expression=${n} + 1; n = 2500, x=1) attempt 2"


def test_the_live_display_prints_the_shared_lines(tmp_path):
    console = Console(record=True, width=300, force_terminal=False)
    model = ScriptedLLM.from_file(PLANNED / "migration.script.yaml")
    with LiveProgress(console) as progress:
        heard = _run(tmp_path, PLANNED / "migration.yaml", Planner(model), progress)
    printed = console.export_text()
    for kind in ("llm.request", "plan.invalid", "plan.repair", "step.reused", "observation"):
        lines = [_text(e) for e in heard if e.event == kind]
        assert lines and all(line and line in printed for line in lines), kind
    kept = dict.fromkeys(["rate", "total", "per_night"], "reused")
    assert progress.states == {**kept, "nights": "ok"}


def test_a_scripted_planner_is_labelled_scripted_never_asking_the_model(tmp_path):
    """The README promises a scripted planner is clearly labelled: no model is asked."""
    from stepgraph.cli.render._lines import SCRIPTED_MODEL
    from tests.conftest import flat, invoke

    assert ScriptedLLM.model == SCRIPTED_MODEL
    result = invoke(
        "run", PLANNED / "migration.yaml", "--scripted", PLANNED / "migration.script.yaml",
        "--runs", tmp_path, "--journal", tmp_path / "j.jsonl",
    )  # fmt: skip
    output = flat(result.output)
    assert "asking the model" not in output
    assert "scripted answer (plan, attempt 1)" in output
    shown = flat(invoke("show", tmp_path / "j.jsonl").output)
    assert "scripted answer (plan, attempt 1)" in shown and "asking the model" not in shown
    [request, *_] = read_journal(tmp_path / "j.jsonl").of_kind("llm.request")
    other = request.model_copy(update={"model": "gpt-4o-mini"})
    assert _text(other) == "asking the model (plan, attempt 1)"
