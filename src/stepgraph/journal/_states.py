"""Each step's state, folded event by event from a journal: one rule for pages and pictures.

It is the rule of `stepgraph.verifiers.step_states`, applied in journal order: a step is
`verified` only where a passing verdict looked at its value, and a step run again in a
repair round starts over from its new observation, so a check that failed in an earlier
round does not stain the round that passed. A unit check looks at a value's dimension,
not its number: it can fail a step, never verify one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stepgraph.references import find_references

# A unit check passes on 120 min where 180 min was due: it never makes a step green.
_ONLY_FAILS = frozenset({"unit"})


def covered_steps(data: Mapping[str, Any]) -> set[str]:
    """The steps a `check` event looked at: its step, or the steps its expression names."""
    step = data.get("step")
    if isinstance(step, str):
        return {step}
    values = data.get("values")
    if data.get("kind") != "check" or not isinstance(values, dict):
        return set()
    names = {ref.step for key in values for ref in find_references(str(key))}
    return names - {"inputs"}


def take_state(states: dict[str, str], data: Mapping[str, Any]) -> None:
    """Fold one event, as its JSON data, into `states` (step id -> state)."""
    kind, step = data.get("event"), data.get("step")
    if kind == "check":
        passed = bool(data.get("passed"))
        if passed and data.get("kind") in _ONLY_FAILS:
            return
        for name in covered_steps(data):
            if states.get(name) in ("unchecked", "verified"):
                states[name] = "verified" if passed else "check_failed"
        return
    if not isinstance(step, str):
        return
    if kind == "action":
        states[step] = "running"
    elif kind == "step.skipped":
        states[step] = "skipped"
    elif kind == "step.reused":
        states[step] = "unchecked"
    elif kind == "observation" and data.get("final"):
        states[step] = "unchecked" if data.get("ok") else "failed"


def fold_states(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each step's state after these events (running, verified, unchecked, failed, ...)."""
    states: dict[str, str] = {}
    for data in events:
        take_state(states, data)
    return states
