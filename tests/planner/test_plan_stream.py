"""Reading a plan while it is written: each step handed out once, when whole and valid."""

import json

from stepgraph.planner import PlanStream
from stepgraph.tools import default_registry
from tests.planner.conftest import INPUTS, migration_plan


def stream():
    return PlanStream(default_registry(), INPUTS)


def prefixes(text, size=3):
    return [text[:end] for end in range(size, len(text) + size, size)]


def test_each_step_is_handed_out_once_in_the_order_written():
    reader, seen = stream(), []
    for text in prefixes(migration_plan()):
        seen += [step.id for step in reader.feed(text)]
    assert seen == ["rate", "total", "per_night", "nights"]
    assert reader.problems == []


def test_a_step_is_not_handed_out_before_its_object_is_closed():
    text = migration_plan()
    second = text.index('{"id": "total"')
    reader = stream()
    assert [s.id for s in reader.feed(text[: second - 2])] == []  # `rate` may still grow
    assert [s.id for s in reader.feed(text[: second + 1])] == ["rate"]


def test_the_last_step_counts_once_a_key_follows_the_steps():
    steps = json.loads(migration_plan())["steps"]
    text = json.dumps({"steps": steps, "answer": "${nights}"})
    reader = stream()
    cut = text.index('"answer"')
    assert len(reader.feed(text[:cut])) == 3
    assert reader.feed(text[: cut + len('"answer":')]) == []  # jiter drops a key without value
    assert [s.id for s in reader.feed(text[: cut + len('"answer": "')])] == ["nights"]


def test_prose_before_the_json_and_a_bare_list_are_read():
    steps = json.loads(migration_plan())["steps"]
    text = "Here is the plan:\n```json\n" + json.dumps(steps)
    assert [s.id for s in stream().feed(text)] == ["rate", "total", "per_night"]


def test_a_forward_reference_is_not_a_problem_while_the_plan_is_written():
    steps = [{"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}}, {"id": "a"}]
    reader = stream()
    assert [s.id for s in reader.feed(json.dumps({"steps": steps}))] == ["b"]
    assert reader.problems == []


def test_an_unknown_tool_is_a_problem_of_that_step_and_nothing_follows_it():
    steps = [
        {"id": "a", "tool": "teleport", "args": {}},
        {"id": "b", "tool": "calculate", "args": {"expression": "1 + 1"}},
        {"id": "c", "tool": "calculate", "args": {"expression": "2 + 1"}},
    ]
    reader = stream()
    assert reader.feed(json.dumps({"steps": steps})) == []
    assert [p.step for p in reader.problems] == ["a"]
    assert "unknown tool 'teleport'" in str(reader.problems[0])


def test_a_duplicate_id_a_bad_field_and_a_self_reference_are_caught():
    cases = {
        "id used by 2 steps": [
            {"id": "a", "tool": "calculate", "args": {"expression": "1"}},
            {"id": "a", "tool": "calculate", "args": {"expression": "2"}},
        ],
        "timeout": [{"id": "a", "tool": "calculate", "args": {"expression": "1"}, "timeout": -1}],
        "refers to the step itself": [
            {"id": "a", "tool": "calculate", "args": {"expression": "${a} + 1"}}
        ],
    }
    for expected, steps in cases.items():
        reader = stream()
        reader.feed(json.dumps({"steps": [*steps, {"id": "z"}]}))
        assert any(expected in str(p) for p in reader.problems), (expected, reader.problems)


def test_text_that_is_not_json_yields_nothing_yet():
    reader = stream()
    assert reader.feed("I will now think about the plan {'steps': [") == []
    assert reader.problems == []


def test_a_runaway_answer_is_read_no_further_than_the_size_limit():
    """Past the limit the steps wait for the finished answer (each piece re-reads the text)."""
    from stepgraph.planner._plan_stream import MAX_STREAMED_CHARS

    step = {"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}
    head = json.dumps({"thought": "x" * MAX_STREAMED_CHARS, "steps": [step, {"id": "b"}]})
    assert stream().feed(head) == []
    assert [s.id for s in stream().feed(head.replace("x" * 100, ""))] == ["a"]
