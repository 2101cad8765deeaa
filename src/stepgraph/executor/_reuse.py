"""Step signatures: what makes two steps of two plans the same call with the same inputs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import networkx as nx

from stepgraph.executor._validate import dependencies
from stepgraph.model import Step, StepGraph
from stepgraph.references import REFERENCE_PATTERN


def step_signatures(graph: nx.DiGraph) -> dict[str, str]:
    """A hash per step of its tool, arguments, expected unit and its upstream signatures.

    Ids are left out on purpose: a repaired plan that renames a step but asks for the
    same call on the same inputs can still reuse the earlier observation.
    """
    signatures: dict[str, str] = {}
    for step_id in nx.topological_sort(graph):
        step: Step = graph.nodes[step_id]["step"]
        upstream = {dep: signatures[dep] for dep in dependencies(step) if dep in signatures}
        payload = {
            "tool": step.tool,
            "args": _rename_references(step.args, upstream),
            "expect_unit": step.expect_unit,
            "order": sorted(upstream[dep] for dep in step.depends_on if dep in upstream),
        }
        text = json.dumps(payload, sort_keys=True, default=str)
        signatures[step_id] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return signatures


def _rename_references(value: Any, upstream: dict[str, str]) -> Any:
    if isinstance(value, str):
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
