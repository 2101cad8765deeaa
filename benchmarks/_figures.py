"""The figures of the three-way benchmark: per method per source, and the table that shows them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks._baselines import UNSUPPORTED, Answer
from benchmarks._common import table


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)] if ordered else 0.0


def summarize(answers: Sequence[Answer], unsupported: str | None = None) -> dict[str, Any]:
    """The figures of one method on one source, from its answers."""
    asked = [a for a in answers if a.skipped is None]
    walls = [a.wall_s for a in asked]
    verifies = any(a.verified is not None for a in asked)
    figures: dict[str, Any] = {
        "questions": len(answers),
        "asked": len(asked),
        "correct": sum(a.correct for a in asked),
        "accuracy": round(sum(a.correct for a in asked) / len(asked), 4) if asked else 0.0,
        "errors": sum(a.error is not None for a in asked),
        "model_calls": sum(a.model_calls for a in asked),
        "prompt_tokens": sum(a.prompt_tokens for a in asked),
        "completion_tokens": sum(a.completion_tokens for a in asked),
        "median_s": round(statistics.median(walls), 3) if walls else 0.0,
        "p90_s": round(percentile(walls, 0.9), 3),
        "unsupported": unsupported,
    }
    if verifies:
        figures["verified_correct"] = sum(bool(a.verified) and a.correct for a in asked)
        figures["verified_wrong"] = sum(bool(a.verified) and not a.correct for a in asked)
        figures["unverified_right"] = sum(not a.verified and a.correct for a in asked)
    if any(a.method == "react" for a in asked):
        figures["tool_calls"] = sum(a.tool_calls for a in asked)
        figures["calls_as_text"] = sum(a.calls_as_text for a in asked)
    return figures


def render(source: str, figures: dict[str, dict[str, Any]]) -> str:
    """One table per source: a row per method, the wall-time ratio against `alone`."""
    base = figures.get("alone", {}).get("median_s") or 0.0
    header = [
        "method",
        "asked",
        "accuracy",
        "verified-correct",
        "verified-wrong",
        "unverified-but-right",
        "model calls",
        "prompt tokens",
        "completion tokens",
        "median s",
        "p90 s",
        "median / alone",
    ]
    rows = []
    notes = []
    for method, f in figures.items():
        if f["unsupported"]:
            notes.append(f"{method}: {f['unsupported']}")
        if f["unsupported"]:
            rows.append([method, f["asked"], UNSUPPORTED] + ["-"] * (len(header) - 3))
            continue
        if f.get("calls_as_text"):
            notes.append(
                f"{method}: {f['tool_calls']} calculator calls, {f['calls_as_text']} of them "
                "written as text instead of tool_calls (run by the loop all the same)"
            )
        accuracy = f"{f['correct']}/{f['asked']} ({f['accuracy']:.0%})"
        if f["errors"]:  # a run that raised (a timeout, no valid plan) counts as wrong: say so
            accuracy += f", {f['errors']} failed"
        ratio = f"{f['median_s'] / base:.2f}x" if base and f["asked"] else "-"
        rows.append(
            [
                method,
                f["asked"],
                accuracy,
                f.get("verified_correct", "-"),
                f.get("verified_wrong", "-"),
                f.get("unverified_right", "-"),
                f["model_calls"],
                f["prompt_tokens"],
                f["completion_tokens"],
                f["median_s"],
                f["p90_s"],
                ratio,
            ]
        )
    text = table(f"{source}: the model alone, as a ReAct loop, and through stepgraph", header, rows)
    return text + "".join(f"\n{note}" for note in notes) + ("\n" if notes else "")


def progress(number: int, total: int, answer: Answer) -> str:
    """One line per question per method, for stderr."""
    if answer.skipped:
        verdict = "skipped (not supported by this server)"
    else:
        verdict = "right" if answer.correct else "wrong"
        if answer.verified is not None:
            verdict = f"{'verified' if answer.verified else 'unverified'}, {verdict}"
        if answer.error:
            verdict += f" ({' '.join(answer.error.split())[:100]})"
    got = "" if answer.got is None else f"got {answer.got:g}, "
    return (
        f"[{number}/{total}] {answer.question} {answer.method}: {verdict} "
        f"({got}{answer.model_calls} calls, {answer.wall_s:.1f} s)"
    )
