"""The step graph as a PNG or SVG: the run page's layered layout, drawn with matplotlib.

The picture is drawn in pixels at 100 dpi, one layout unit to a pixel, so its size
follows the graph (a column per dependency depth, a row per step of the busiest
column) instead of a fixed height per step. SVG keeps its text as text (searchable,
selectable); a picture that would pass `MAX_SIDE_PX` is drawn at a lower resolution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepgraph.cli.render._palette import EDGE, LABELS, MUTED, SWATCHES, TEXT
from stepgraph.cli.render._pictures import Picture
from stepgraph.executor import GraphLayout, layered_layout, natural_key

DPI = 100
MAX_SIDE_PX = 6_000  # past this a PNG is drawn smaller (fewer dots per inch), never cut
NODE_H, GAP_X, GAP_Y = 38, 44, 12
ID_PX, TOOL_PX, TITLE_PX = 12, 10, 14
HEADER_PX = 58  # the title line and the legend line above the graph
_CHAR_PX = 0.62  # a character's width, in font sizes (DejaVu Sans, bold ids)
_MAX_LABEL = 28  # characters of an id or a tool name drawn in a box; longer ones end in "…"


def _pt(px: float) -> float:
    return px * 72 / DPI


def _label(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def node_width(picture: Picture) -> float:
    """Wide enough for the longest id and tool name drawn (both cut at `_MAX_LABEL`)."""
    longest = max(
        (max(len(_label(s.id)) * ID_PX, len(_label(s.tool)) * TOOL_PX) for s in picture.plan.steps),
        default=0,
    )
    return max(96.0, longest * _CHAR_PX + 18)


def picture_layout(picture: Picture) -> GraphLayout:
    """The layout the picture draws (the page's, with boxes sized for these labels)."""
    return layered_layout(
        picture.graph, node_w=node_width(picture), node_h=NODE_H, gap_x=GAP_X, gap_y=GAP_Y
    )


def title_of(picture: Picture) -> str:
    """The picture's first line: which run, and how it ended (a plan: not run)."""
    steps = f"{len(picture.plan.steps):,} steps"
    if picture.run_id is None:
        return f"plan · {steps} · not run"
    status = picture.status or "not ended"
    return f"run {picture.run_id} · {steps} · {status}"


def draw(picture: Picture, out: Path, format_: str | None = None) -> GraphLayout:
    """Draw the graph to a PNG or SVG file; returns the layout it drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layout = picture_layout(picture)
    present = [s for s in SWATCHES if any(picture.outcome(n) == s for n in picture.graph)]
    legend_px = 16 + sum(26 + len(LABELS[s]) * 11 * _CHAR_PX for s in present)
    width = max(layout.width, legend_px, len(title_of(picture)) * TITLE_PX * _CHAR_PX + 20)
    height = layout.height + HEADER_PX
    dpi = DPI * min(1.0, MAX_SIDE_PX / max(width, height))
    with matplotlib.rc_context({"svg.fonttype": "none", "font.family": "DejaVu Sans"}):
        figure = plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI)
        axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
        axes.set_xlim(0, width)
        axes.set_ylim(height, 0)
        axes.set_axis_off()
        _header(axes, picture, present)
        _graph(axes, picture, layout, HEADER_PX)
        figure.savefig(out, format=format_, dpi=dpi)
        plt.close(figure)
    return layout


def _header(axes: Any, picture: Picture, present: list[str]) -> None:
    from matplotlib.patches import Rectangle

    axes.text(10, 20, title_of(picture), fontsize=_pt(TITLE_PX), weight="bold", color=TEXT)
    x = 10.0
    for state in present:
        swatch = SWATCHES[state]
        axes.add_patch(Rectangle((x, 33), 16, 14, facecolor=swatch.fill, edgecolor=swatch.stroke))
        axes.text(x + 21, 44, LABELS[state], fontsize=_pt(11), color=TEXT)
        x += 26 + len(LABELS[state]) * 11 * _CHAR_PX


def _graph(axes: Any, picture: Picture, layout: GraphLayout, top: float) -> None:
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path as CurvePath

    for route in layout.routes:
        points = [(x, y + top) for x, y in route.points]
        codes = [CurvePath.MOVETO] + [CurvePath.CURVE4] * (len(points) - 1)
        arrow = FancyArrowPatch(
            path=CurvePath(points, codes),
            arrowstyle="-|>,head_length=5,head_width=3",
            color=EDGE,
            linewidth=0.9,
            shrinkA=0,
            shrinkB=0,
        )
        arrow.set_gid(f"edge-{route.source}-{route.target}")
        axes.add_patch(arrow)
    tools = {step.id: step.tool for step in picture.plan.steps}
    for sid in sorted(layout.boxes, key=natural_key):
        box = layout.boxes[sid]
        swatch = SWATCHES[picture.outcome(sid)]
        y = box.y + top
        patch = FancyBboxPatch(
            (box.x, y),
            layout.node_w,
            layout.node_h,
            boxstyle="round,pad=0,rounding_size=5",
            facecolor=swatch.fill,
            edgecolor=swatch.stroke,
            linewidth=1.3,
        )
        patch.set_gid(f"node-{sid}")
        axes.add_patch(patch)
        axes.text(box.x + 8, y + 16, _label(sid), fontsize=_pt(ID_PX), weight="bold", color=TEXT)
        axes.text(box.x + 8, y + 31, _label(tools.get(sid, "")), fontsize=_pt(TOOL_PX), color=MUTED)
