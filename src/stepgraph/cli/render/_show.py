"""`stepgraph show`: a journal as a person reads it, event by event."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from stepgraph.journal import Journal
from stepgraph.units import Quantity, decode_value, display_data, format_value


def _value(data: Any) -> str:
    return format_value(decode_value(data))


def _argument(data: Any) -> str:
    """Quantities as people write them (450 Mbps), everything else as JSON (no float noise).

    JSON rather than `format_value` for numbers: ``x=2,500`` would read as two arguments.
    """
    value = decode_value(data)
    if isinstance(value, Quantity):
        return format_value(value)
    return json.dumps(display_data(value), ensure_ascii=False)


def _line(event: str, data: dict[str, Any]) -> Text | None:  # one branch per event kind
    step = f"[{data.get('step')}] " if data.get("step") else ""
    if event == "run.start":
        return Text(
            f"run {data['run_id']} of task '{data['task']}': {data['goal'].strip()}", style="bold"
        )
    if event == "run.resume":
        return Text(
            f"resumed after event {data['after_seq']}; running again: {data['rerun']}", style="bold"
        )
    if event == "llm.response":
        usage = ", ".join(f"{k} {v}" for k, v in data.get("usage", {}).items())
        took = f"{data['latency_ms']:.0f} ms"
        return Text(
            f"model ({data['purpose']}, attempt {data['attempt']}): {usage}; {took}", style="dim"
        )
    if event == "plan.proposed":
        count = len(data["plan"]["steps"])
        return Text(
            f"plan {data['plan_hash'][:12]} from {data['source']}: {count} steps", style="bold"
        )
    if event == "plan.invalid":
        return Text("plan rejected: " + "; ".join(data["problems"]), style="yellow")
    if event in ("plan.approved", "plan.rejected", "plan.edited"):
        verb, when = event.split(".")[1], data.get("when", data["ts"])
        who = f"by {data['who']} ({data['how']}) at {when}"
        return Text(f"plan {data['plan_hash'][:12]} {verb} {who}", style="cyan")
    if event == "plan.repair":
        changed = ", ".join([*data["diff"]["added"], *data["diff"]["changed"]])
        failures = "; ".join(data["failures"])
        return Text(
            f"repair round {data['round']}: {failures} -> changed {changed}", style="bold yellow"
        )
    if event == "thought":
        return Text(f"{step}thought: {data['text']}") if data["text"] else None
    if event == "action":
        args = ", ".join(f"{name}={_argument(value)}" for name, value in data["args"].items())
        return Text(f"{step}action: {data['tool']}({args}) attempt {data['attempt']}")
    if event == "observation":
        took = f"{data['duration_ms']:.1f} ms, attempt {data['attempt']}"
        if data["ok"]:
            return Text(f"{step}observation: {_value(data['value'])} ({took})", style="green")
        return Text(f"{step}observation: ERROR {data['error']} ({took})", style="red")
    if event == "step.reused":
        return Text(f"{step}kept from an earlier round: {_value(data['value'])}", style="cyan")
    if event == "step.skipped":
        return Text(f"{step}skipped: {data['reason']}", style="magenta")
    if event == "check":
        mark = "pass" if data["passed"] else "FAIL"
        return Text(
            f"{step}{mark} {data['kind']}: {data['description']}",
            style="green" if data["passed"] else "bold red",
        )
    if event == "answer":
        return Text(f"answer: {data['text']}", style="bold")
    if event == "run.end":
        return Text(f"run ended: {data['status']} after {data['duration_ms']:.0f} ms", style="bold")
    return None


def show_journal(console: Console, journal: Journal) -> None:
    """Print every event a person cares about, in order, then the reading problems."""
    for event in journal.events:
        line = _line(event.event, event.model_dump())
        if line is not None:
            console.print(line, highlight=False)
    for problem in journal.problems:
        console.print(Text(f"journal: {problem}", style="yellow"))
