"""A run's timeline: one bar per attempt, the length the CLI prints for it.

A bar is the tool call itself: it ends at its observation and lasts the observation's
`duration_ms`, the time `stepgraph show` prints. The time from the action to the call's
start (a quick call queued behind the threads' other calls, the dispatch) is drawn as a
thin grey line before the bar: it is waiting, not the step's own time. Bars take their
step's state colour, and a tall chart has its time axis at the top as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from stepgraph.cli.render._palette import LABELS, MUTED, SWATCHES, TEXT
from stepgraph.cli.render._states import journal_step_states
from stepgraph.exceptions import StepgraphError
from stepgraph.journal import Journal

DPI = 100
ROW_PX, TRACK_PX = 16, 780
TOP_PX, BOTTOM_PX = 70, 44  # the title, legend and top axis; the bottom axis and its label
TALL_ROWS = 30  # a chart of more rows has its axis at the top too
_CHAR_PX = 0.6 * 10  # a 10 px label's characters
WAITING = "#adb5bd"


@dataclass
class Bar:
    """One attempt of one step: queued at its action, ran from `start` to `end`."""

    step: str
    queued: datetime  # when its action was journaled
    start: datetime  # when the call began: its end less its duration
    end: datetime  # when its observation was journaled
    duration_ms: float  # the observation's own measure, as `show` prints it
    ok: bool


def timeline(journal: Journal) -> list[Bar]:
    """Every attempt, from its action to its observation, in the order they ended."""
    actions: dict[tuple[str, int], datetime] = {}
    bars: list[Bar] = []
    for event in journal.events:
        if event.step is None or event.event not in ("action", "observation"):
            continue
        data = event.model_dump()
        at = datetime.fromisoformat(event.ts)
        if event.event == "action":
            actions[(event.step, data["attempt"])] = at
            continue
        queued = actions.get((event.step, data["attempt"]))
        if queued is None:
            continue
        duration = float(data["duration_ms"])
        start = max(queued, at - timedelta(milliseconds=duration))
        bars.append(Bar(event.step, queued, start, at, duration, bool(data["ok"])))
    return bars


def gantt(journal: Journal, out: Path) -> None:
    """A timeline picture: one bar per attempt, so overlap and slow steps show at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    bars = timeline(journal)
    if not bars:
        raise StepgraphError("the journal has no completed step to draw")
    states = journal_step_states(journal)
    origin = min(bar.queued for bar in bars)
    order = list(dict.fromkeys(bar.step for bar in sorted(bars, key=lambda b: b.start)))
    row = {step: i for i, step in enumerate(order)}
    label_px = 16 + max(len(step) for step in order) * _CHAR_PX
    width, height = label_px + TRACK_PX + 24, TOP_PX + BOTTOM_PX + ROW_PX * len(order)
    with matplotlib.rc_context({"svg.fonttype": "none", "font.family": "DejaVu Sans"}):
        figure = plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI)
        axes = figure.add_axes(
            (label_px / width, BOTTOM_PX / height, TRACK_PX / width, ROW_PX * len(order) / height)
        )

        def ms(at: datetime) -> float:
            return (at - origin).total_seconds() * 1000

        for bar in bars:
            y = row[bar.step]
            if bar.start > bar.queued:
                axes.plot([ms(bar.queued), ms(bar.start)], [y, y], color=WAITING, linewidth=1)
            state = states.get(bar.step, "unchecked") if bar.ok else "failed"
            colour = SWATCHES.get(state, SWATCHES["unchecked"]).stroke
            # An edge of the bar's own colour keeps a call of a few microseconds visible.
            axes.barh(y, bar.duration_ms, left=ms(bar.start), height=0.7, color=colour,
                      edgecolor=colour, linewidth=0.6)  # fmt: skip
        axes.set_ylim(len(order) - 0.5, -0.5)
        axes.set_yticks(range(len(order)), labels=order, fontsize=7.2)
        axes.set_xlim(left=0)
        axes.margins(x=0.01)
        axes.tick_params(axis="x", labelsize=7.2, top=len(order) > TALL_ROWS,
                         labeltop=len(order) > TALL_ROWS)  # fmt: skip
        axes.set_xlabel("milliseconds since the first action", fontsize=7.2, color=MUTED)
        axes.grid(axis="x", color="#e9ecef", linewidth=0.6)
        axes.set_axisbelow(True)
        total = max(bar.end for bar in bars) - origin
        title = f"run {journal.events[0].run_id} · {len(order):,} steps · {_ms(total)}"
        figure.text(10 / width, 1 - 18 / height, title, fontsize=10, weight="bold", color=TEXT)
        shown = [s for s in SWATCHES if s in {states.get(b.step, "") for b in bars}]
        if any(not bar.ok for bar in bars) and "failed" not in shown:
            shown.append("failed")
        handles = [Patch(color=SWATCHES[s].stroke, label=LABELS[s]) for s in shown]
        handles.append(Patch(color=WAITING, label="waiting to start"))
        figure.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(10 / width, 1 - 24 / height),
            ncol=len(handles),
            fontsize=7.2,
            frameon=False,
            handlelength=1.2,
            columnspacing=1.0,
            borderaxespad=0,
        )
        figure.savefig(out, dpi=DPI)
        plt.close(figure)


def _ms(span: timedelta) -> str:
    ms = span.total_seconds() * 1000
    return f"{ms:,.1f} ms" if ms < 10_000 else f"{ms / 1000:,.1f} s"
