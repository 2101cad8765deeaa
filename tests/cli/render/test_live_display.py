"""The live display of `stepgraph run`: what a person sees, and what it costs the run."""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path

from rich.console import Console

from stepgraph import Engine, tool
from stepgraph.cli.render._progress import LiveProgress, _levels
from stepgraph.journal import JournalEvent
from tests.conftest import flat, make_task


@tool
def instant(n: int) -> int:
    """Return `n` at once."""
    return n


@tool
def broken(n: int) -> int:
    """Fail on purpose."""
    raise RuntimeError(f"disk {n} on fire")


def _chain(count: int, tool_name: str = "instant") -> list[dict[str, object]]:
    """`count` steps, each after the one before: a critical path `count` levels long."""
    return [
        {
            "id": f"s{i}",
            "tool": tool_name,
            "args": {"n": i},
            "depends_on": [f"s{i - 1}"] if i else [],
        }
        for i in range(count)
    ]


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=200, color_system=None), out


def test_the_listener_draws_nothing_per_event(tmp_path: Path) -> None:
    """Hundreds of events reach the listener; the terminal is written only when a frame is due."""
    console, out = _terminal()
    written_during_run: list[int] = []

    def watch(_: JournalEvent) -> None:  # runs right after the display's listener
        written_during_run.append(len(out.getvalue()))

    # One frame a minute: within this run the only frame is the last one, at exit.
    progress = LiveProgress(console, refresh_per_second=1 / 60)
    with progress:
        written_before = len(out.getvalue())
        Engine(tools=[instant]).run(
            make_task(_chain(150)), journal=tmp_path / "j.jsonl", listeners=[progress, watch]
        )
    assert progress.board.recorded >= 3 * 150  # action, observation, ... for every step
    assert set(written_during_run) == {written_before}
    assert progress.frames == 1
    assert "150/150 steps done" in out.getvalue()
    assert "critical path 150/150 levels" in out.getvalue()
    # the plan table shows its head and says how much is left
    assert "... 110 more steps (`stepgraph plan` prints them all)" in flat(out.getvalue())


def test_the_final_summary_counts_steps_by_state_and_the_critical_path(tmp_path: Path) -> None:
    console, out = _terminal()
    steps = [*_chain(3), {"id": "bad", "tool": "broken", "args": {"n": 7}}]
    with LiveProgress(console) as progress:
        Engine(tools=[instant, broken]).run(
            make_task(steps), journal=tmp_path / "j.jsonl", listeners=[progress]
        )
    text = flat(out.getvalue())
    assert "[bad] observation: ERROR RuntimeError: disk 7 on fire" in text
    assert "4/4 steps done 3 ok 1 failed critical path 3/3 levels" in text


def test_many_routine_lines_are_elided_but_failures_always_print(tmp_path: Path) -> None:
    """A frame prints a few successes and says how many more; every failure is printed."""
    console, out = _terminal()
    steps = [
        *({"id": f"ok{i}", "tool": "instant", "args": {"n": i}} for i in range(60)),
        *({"id": f"bad{i}", "tool": "broken", "args": {"n": i}} for i in range(5)),
    ]
    progress = LiveProgress(console, refresh_per_second=1 / 60, lines_per_frame=10)
    with progress:
        Engine(tools=[instant, broken]).run(
            make_task(steps), journal=tmp_path / "j.jsonl", listeners=[progress]
        )
    text = flat(out.getvalue())
    assert text.count("observation: ERROR RuntimeError") == 5
    assert len(re.findall(r"\[ok\d+\] observation:", text)) == 10
    assert "... 50 more lines like these (all in the journal)" in text
    assert "65/65 steps done 60 ok 5 failed" in text


@tool
def hold(n: int) -> int:
    """Wait until the test has seen this step on screen (at most five seconds)."""
    deadline = time.monotonic() + 5
    while not SEEN.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    return n


SEEN = threading.Event()


def test_running_steps_are_on_screen_while_they_run(tmp_path: Path) -> None:
    console, out = _terminal()
    SEEN.clear()
    steps = [{"id": "slow_one", "tool": "hold", "args": {"n": 1}}]

    def look() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if "0/1 steps done  1 running" in out.getvalue() and "slow_one" in out.getvalue():
                SEEN.set()
                return
            time.sleep(0.01)

    looker = threading.Thread(target=look)
    with LiveProgress(console, refresh_per_second=50) as progress:
        looker.start()
        Engine(tools=[hold]).run(
            make_task(steps), journal=tmp_path / "j.jsonl", listeners=[progress]
        )
    looker.join()
    assert SEEN.is_set()
    assert progress.states == {"slow_one": "ok"}


def test_nothing_is_drawn_while_a_person_answers_a_prompt():
    console, out = _terminal()
    with LiveProgress(console, refresh_per_second=200) as progress:
        with progress.reviewing():
            frames, written = progress.frames, len(out.getvalue())
            time.sleep(0.1)  # twenty frames would be due
            assert (progress.frames, len(out.getvalue())) == (frames, written)
        deadline = time.monotonic() + 5
        while progress.frames == frames and time.monotonic() < deadline:
            time.sleep(0.01)
        assert progress.frames > frames  # and drawing resumes after the prompt


def test_each_step_sits_on_the_level_of_its_longest_chain_and_a_cycle_shows_none() -> None:
    """The display's critical path: a diamond with a shortcut, and a plan with a cycle."""
    diamond = [
        {"id": "a"},
        {"id": "b", "args": {"rows": [{"x": "${a}"}], "n": 2}},  # found however deep
        {"id": "c", "args": {"x": "${b.size}"}, "depends_on": ["a"]},
        {"id": "d", "depends_on": ["a", "c"]},
        {"id": "e", "args": {"x": "${nowhere}"}},  # a dangling reference waits for nothing
    ]
    assert _levels(diamond) == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 0}
    cycle = [{"id": "a", "depends_on": ["b"]}, {"id": "b", "args": {"x": "${a}"}}]
    assert _levels(cycle) == {}
