"""What a run keeps per step, made small, still behaves as the data it stands for."""

from __future__ import annotations

import hashlib
import json

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepgraph import Engine, Step, StepGraph, tool
from stepgraph.executor import validate_plan
from stepgraph.executor._backend import resolve_args
from stepgraph.journal import read_journal
from stepgraph.model import canonical_json
from stepgraph.tools import default_registry
from tests.conftest import make_task

PLAN = [
    {"id": "a", "tool": "calculate", "args": {"expression": "6 * 7"}},
    {"id": "b", "tool": "calculate", "args": {"expression": "6 * 8"}},
    {"id": "total", "tool": "calculate", "args": {"expression": "${a} + ${b}"}},
]


def test_the_edges_of_a_step_graph_refuse_data_and_still_copy():
    graph = validate_plan(StepGraph.model_validate({"steps": PLAN}), default_registry())
    with pytest.raises(TypeError, match="carry no data"):
        graph.edges["a", "total"]["weight"] = 1
    with pytest.raises(TypeError, match="carry no data"):
        graph.add_edge("a", "b", weight=1)
    copy = graph.copy()
    copy.add_edge("a", "b")
    assert sorted(copy.edges) == [("a", "b"), ("a", "total"), ("b", "total")]
    assert sorted(graph.edges) == [("a", "total"), ("b", "total")], "the copy is its own graph"


def test_observations_are_frozen_and_say_which_fields_were_given():
    result = Engine().run(make_task(PLAN, answer="${total}"))
    first, *_ = result.observations
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        first.value = 0
    assert [o.model_dump(exclude_unset=True) for o in result.observations] == [
        {"step": o.step, "ok": True, "value": o.value, "duration_ms": o.duration_ms}
        for o in result.observations
    ]
    assert [o.value for o in result.observations] == [42, 48, 90]


def test_steps_are_changed_by_making_new_ones():
    step = Step(id="a", tool="calculate", args={"expression": "1 + 1"})
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        step.retries = 2
    assert step.model_copy(update={"retries": 2}).retries == 2


@tool
def scale(x: float, by: float = 2.0) -> float:
    """Multiply."""
    return x * by


def test_arguments_without_references_are_the_steps_own_and_with_them_a_new_dict():
    plain = {"x": 1.5, "by": 3.0}
    assert resolve_args(scale, plain, {}) is plain
    referring = {"x": "${a}", "by": 3.0}
    assert resolve_args(scale, referring, {"a": 41}) == {"x": 41, "by": 3.0}
    assert referring == {"x": "${a}", "by": 3.0}, "the step's own arguments are left as they were"


def test_a_given_plan_is_journaled_as_proposed_before_it_is_refused(tmp_path):
    journal = tmp_path / "j.jsonl"
    bad = make_task([{"id": "a", "tool": "no_such_tool"}])
    with pytest.raises(Exception, match="no_such_tool"):
        Engine().run(bad, journal=journal)
    kinds = [e.event for e in read_journal(journal).events]
    assert kinds.index("plan.proposed") < kinds.index("plan.invalid")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@given(json_values)
def test_the_canonical_pieces_join_to_the_standard_librarys_sorted_text(value):
    """Plan hashes in journals written before the pieces must stay what they were."""
    assert "".join(canonical_json(value)) == json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("length", [0, 1, 256, 257, 700])
def test_long_lists_cut_in_slices_still_join_to_the_same_text(length):
    value = {"steps": [{"id": f"s{i}", "args": {"x": [i, None, "é"]}} for i in range(length)]}
    value["z"] = [[i] for i in range(length)]
    assert "".join(canonical_json(value)) == json.dumps(value, sort_keys=True)


def test_a_plan_hash_is_the_sha256_of_its_sorted_json():
    plan = StepGraph.model_validate({"steps": PLAN, "answer": "${total}"})
    content = plan.model_dump(mode="json")
    for empty in ("inputs", "constants", "unused"):  # left out when empty: hashes of old plans
        if not content[empty]:
            del content[empty]
    expected = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
    assert plan.plan_hash() == expected


def test_a_nodes_data_holds_its_step_and_other_keys_like_a_dict():
    graph = validate_plan(StepGraph.model_validate({"steps": PLAN}), default_registry())
    data = graph.nodes["a"]
    assert data["step"].id == "a" and dict(data) == {"step": data["step"]}
    data["layer"] = 0
    assert dict(graph.nodes(data="layer")) == {"a": 0, "b": None, "total": None}
    del data["layer"]
    with pytest.raises(KeyError):
        data["layer"]
    copy = graph.copy()
    assert copy.nodes["total"]["step"] is graph.nodes["total"]["step"]


def test_the_proposed_plan_of_a_task_is_its_plan_as_written_in_run_start(tmp_path):
    """The task's plan is dumped once for both events; both must still say the same."""
    task = make_task(PLAN, answer="${total}")
    Engine().run(task, journal=tmp_path / "j.jsonl")
    journal = read_journal(tmp_path / "j.jsonl")
    [start], [proposed] = journal.of_kind("run.start"), journal.of_kind("plan.proposed")
    assert proposed.plan == start.definition["plan"] == task.plan.model_dump(mode="json")
    assert proposed.plan_hash == task.plan.plan_hash()
