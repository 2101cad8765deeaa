"""Step signatures: what makes two steps of two plans the same call with the same inputs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import networkx as nx
import orjson

from stepgraph.model import Step, StepGraph
from stepgraph.references import REFERENCE_PATTERN


def step_signatures(graph: nx.DiGraph) -> dict[str, str]:
    """A hash per step of its tool, arguments, expected unit and its upstream signatures.

    Ids are left out on purpose: a repaired plan that renames a step but asks for the
    same call on the same inputs can still reuse the earlier observation.
    """
    signatures: dict[str, str] = {}
    # networkx's views cost microseconds a look-up; these plain dicts are what they wrap.
    nodes: dict[str, dict[str, Any]] = graph._node
    predecessors: dict[str, dict[str, Any]] = graph._pred
    for step_id in _upstream_first(graph):
        step: Step = nodes[step_id]["step"]
        # The graph's edges are the step's dependencies (`dependencies`), all signed by now.
        upstream = {dep: signatures[dep] for dep in predecessors[step_id]}
        payload = {
            "tool": step.tool,
            "args": _rename_references(step.args, upstream),
            "expect_unit": step.expect_unit,
            "order": sorted(upstream[dep] for dep in step.depends_on if dep in upstream),
        }
        signatures[step_id] = hashlib.sha256(_canonical(payload)).hexdigest()[:16]
    return signatures


_SLOW_CANONICAL = json.JSONEncoder(sort_keys=True, default=str).encode


def _canonical(payload: dict[str, Any]) -> bytes:
    """The payload as JSON with sorted keys; orjson's C encoder unless it refuses a value."""
    try:
        return orjson.dumps(payload, default=str, option=_CANONICAL)
    except TypeError:  # an int past 64 bits, say
        return _SLOW_CANONICAL(payload).encode()


_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _upstream_first(graph: nx.DiGraph) -> list[str]:
    """Every step after the steps it depends on (Kahn's order; the graph is acyclic)."""
    successors: dict[str, dict[str, Any]] = graph._succ
    waiting = {node: len(upstream) for node, upstream in graph._pred.items()}
    order = [node for node, count in waiting.items() if count == 0]
    for node in order:  # grows while it is walked
        for successor in successors[node]:
            waiting[successor] -= 1
            if waiting[successor] == 0:
                order.append(successor)
    return order


def _rename_references(value: Any, upstream: dict[str, str]) -> Any:
    if isinstance(value, str):
        if "${" not in value:  # most strings: no reference, no regex
            return value
        return REFERENCE_PATTERN.sub(
            lambda m: "${#" + upstream.get(m.group(1), m.group(1)) + m.group(2) + "}", value
        )
    if isinstance(value, dict):
        return {key: _rename_references(item, upstream) for key, item in value.items()}
    if isinstance(value, list):
        return [_rename_references(item, upstream) for item in value]
    return value


def plan_diff(old: StepGraph, new: StepGraph) -> dict[str, Any]:
    """Which steps a repair added, removed or changed (field by field)."""
    before = {step.id: step.model_dump(mode="json") for step in old.steps}
    after = {step.id: step.model_dump(mode="json") for step in new.steps}
    changed = {
        step_id: {
            name: [before[step_id].get(name), fields.get(name)]
            for name in sorted(before[step_id].keys() | fields.keys())
            if before[step_id].get(name) != fields.get(name)
        }
        for step_id, fields in after.items()
        if step_id in before and before[step_id] != fields
    }
    return {
        "added": sorted(after.keys() - before.keys()),
        "removed": sorted(before.keys() - after.keys()),
        "changed": changed,
        "checks_changed": old.checks != new.checks,
        "answer_changed": old.answer != new.answer,
    }
