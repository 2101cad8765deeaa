"""The colours of step states, the same in every picture and on the run page (style.css).

Light fills with dark text and a strong border, so a label is readable on every state
(no black on dark green); a timeline's bars, which carry no text, take the border colour.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Swatch:
    """How one state is drawn: a box's fill and border; a bar takes the border."""

    fill: str
    stroke: str


TEXT = "#1d232a"
MUTED = "#495057"
EDGE = "#868e96"
SWATCHES = {
    "verified": Swatch("#d4f5dd", "#2f9e44"),  # a verdict checked its value
    "unchecked": Swatch("#fff8c5", "#b08800"),  # it ran; nothing checked it: never green
    "check_failed": Swatch("#ffe3c2", "#d9480f"),
    "failed": Swatch("#ffdcdc", "#e03131"),
    "skipped": Swatch("#eeeeee", "#999999"),
    "running": Swatch("#d9ecff", "#1c7ed6"),  # an action without its observation
    "planned": Swatch("#f1f3f5", "#adb5bd"),  # not run (a plan, not a journal)
}
LABELS = {
    "verified": "verified",
    "unchecked": "unchecked (ran, nothing checked it)",
    "check_failed": "check failed",
    "failed": "failed",
    "skipped": "skipped",
    "running": "started, no result",
    "planned": "not run",
}
