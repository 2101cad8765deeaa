"""The journal keeps every value exactly, refuses what is not data, and fails clearly."""

import enum
import json
import math
import socket
import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepgraph import Engine, JournalError, StepgraphError, tool
from stepgraph.engine import replay
from stepgraph.journal import JournalEvent, JournalWriter, read_journal
from stepgraph.units import quantity
from stepgraph.values import check_data, decode_value, encode_value
from tests.conftest import EXAMPLES, make_task

BIG = 2**70  # beyond 64 bits: orjson alone refuses it
NAN, INF = float("nan"), float("inf")


def same(a, b):
    """Equality that counts NaN as equal to NaN and a tuple as the list it becomes."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "units") and hasattr(b, "units"):
        return a.units == b.units and same(a.magnitude, b.magnitude)
    return type(a) is type(b) and a == b


@tool
def extremes() -> object:
    """Numbers JSON cannot hold as they are."""
    return {
        "big": BIG,
        "negative": -BIG,
        "nan": NAN,
        "inf": INF,
        "minus_inf": -INF,
        "size": quantity(BIG, "B"),
        "unknown": quantity(NAN, "GB"),
    }


def extremes_task():
    return make_task(
        [
            {"id": "x", "tool": "extremes"},
            {"id": "power", "tool": "calculate", "args": {"expression": "2**70"}},
            {"id": "next", "tool": "calculate", "args": {"expression": "${power} + 1"}},
        ],
        answer="${next}",
    )


def test_big_integers_nan_and_infinities_survive_the_journal(tmp_path):
    path = tmp_path / "j.jsonl"
    result = Engine(tools=[extremes]).run(extremes_task(), journal=path)
    journal = read_journal(path)
    assert journal.of_kind("run.end"), "the run ended without run.end"
    observed = {e.step: decode_value(e.value) for e in journal.of_kind("observation") if e.ok}
    assert same(observed["x"], extremes.func())
    assert observed["power"] == BIG and observed["next"] == BIG + 1
    assert result.answer == f"{BIG + 1:,}"
    for line in path.read_text().splitlines():  # strict JSON: no NaN, no bare huge numbers
        json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in the journal"))


def test_a_replay_of_those_values_is_identical(tmp_path):
    path = tmp_path / "j.jsonl"
    Engine(tools=[extremes]).run(extremes_task(), journal=path)
    report = replay(path, tools=[extremes])
    assert report.identical, report.divergences or report.error


json_data = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
    | st.sampled_from(["$int", "$float", "$quantity", "$dict"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=5) | st.sampled_from(["$int", "$float", "$quantity", "$dict"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)


@given(json_data)
def test_any_plain_data_reads_back_as_it_was_written(value):
    """Through orjson and back, as the journal does; dicts that look tagged stay dicts."""
    check_data(value)
    assert same(decode_value(orjson.loads(orjson.dumps(encode_value(value)))), value)


def test_a_dict_shaped_like_an_encoded_number_stays_a_dict():
    for value in ({"$int": "5"}, {"$float": "nan"}, {"$quantity": [1, "GB"]}):
        assert decode_value(json.loads(json.dumps(encode_value(value)))) == value


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (lambda: 1, "function"),
        ({"rows": [1, {2, 3}]}, "value['rows'][1]: set"),
        ({1: "one"}, "dict keys must be strings"),
        (quantity(1, "GB") * 1j, "complex"),
    ],
)
def test_what_is_not_data_is_refused_by_type_and_place(value, named):
    with pytest.raises(StepgraphError, match="is not plain data|must be strings") as error:
        check_data(value)
    assert named in str(error.value)
    with pytest.raises(StepgraphError):
        encode_value(value)


def test_a_socket_is_refused_by_name():
    with socket.socket() as sock, pytest.raises(StepgraphError, match="socket.socket is not"):
        check_data({"connection": sock})


def test_a_value_that_contains_itself_or_nests_too_deep_is_refused():
    loop: list = [1]
    loop.append({"again": loop})
    with pytest.raises(StepgraphError, match="refers to itself"):
        check_data(loop)
    with pytest.raises(StepgraphError, match="refers to itself"):
        encode_value(loop)
    deep: list = []
    for _ in range(500):
        deep = [deep]
    with pytest.raises(StepgraphError, match="nested deeper than"):
        check_data(deep)
    shared = [1, 2]
    check_data({"a": shared, "b": shared})  # the same list twice is not a loop


def test_the_journal_writes_no_repr_of_an_object(tmp_path):
    path = tmp_path / "j.jsonl"
    with JournalWriter(path, "r") as writer:
        writer.emit(JournalEvent(event="first", value=1))
        with pytest.raises(JournalError, match="event 'observation' of step 's'.*function"):
            writer.emit(JournalEvent(event="observation", step="s", value=lambda: 1))
        writer.emit(JournalEvent(event="last", value=2))
    events = read_journal(path).events
    assert [(e.event, e.seq) for e in events] == [("first", 1), ("last", 2)]


full_disk = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux /dev/full")


@full_disk
def test_a_full_disk_is_a_journal_error_naming_the_file():
    with pytest.raises(JournalError) as error, JournalWriter(Path("/dev/full"), "r") as writer:
        writer.emit(JournalEvent(event="run.start", task="t"))
    assert str(error.value) == "/dev/full: cannot write the journal: No space left on device"
    with pytest.raises(JournalError, match="No space left on device"):  # and it stays broken
        writer.emit(JournalEvent(event="again"))


@full_disk
def test_a_run_on_a_full_disk_stops_with_a_journal_error():
    with pytest.raises(JournalError, match="/dev/full: cannot write the journal: No space left"):
        Engine().run(EXAMPLES / "migration.yaml", journal="/dev/full")


@full_disk
def test_a_full_disk_inside_a_batch_is_a_journal_error():
    writer = JournalWriter(Path("/dev/full"), "r")
    with pytest.raises(JournalError, match="No space left on device"), writer, writer.batch():
        writer.emit(
            JournalEvent(event="action", step="a")
        )  # buffered: the batch's one flush meets the full disk


@given(json_data)
def test_a_large_field_written_by_the_journal_reads_back_as_it_was(tmp_path_factory, value):
    """Fields past a few KB take the C encoders' path; what they cannot write exactly does not."""
    path = tmp_path_factory.mktemp("large") / "j.jsonl"
    large = {"padding": ["x" * 100] * 30, "value": value, "listed": [value, 1.5, None]}
    with JournalWriter(path, "run") as journal:
        journal.emit(JournalEvent(event="test.data", data=large))
    [event] = read_journal(path).events
    assert same(decode_value(event.data), large)


@pytest.mark.parametrize("deep", [False, True], ids=["at the top", "deep in a step"])
@pytest.mark.parametrize("value", [NAN, INF, BIG, {"$int": "5"}, (1, 2)])
def test_a_plan_sized_field_keeps_each_value_that_json_cannot_hold(tmp_path, value, deep):
    """The check for NaN runs piece by piece on a big field: it must still reach every level."""
    path = tmp_path / "j.jsonl"
    plan: dict[str, object] = {"steps": [{"id": f"s{i}", "args": {"x": i}} for i in range(600)]}
    if deep:
        plan["steps"][450]["args"]["rows"] = [{"cells": [1, value]}]  # type: ignore[index]
    else:
        plan["odd"] = value
    with JournalWriter(path, "run") as journal:
        journal.emit(JournalEvent(event="test.data", data=plan))
    json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(f"{name} written"))
    [event] = read_journal(path).events
    assert same(decode_value(event.data), plan)


class Colour(enum.Enum):
    RED = 1


@pytest.mark.parametrize("value", [Colour.RED, uuid.UUID(int=7)], ids=["enum", "uuid"])
def test_a_plan_sized_field_refuses_what_is_not_data_however_deep(tmp_path, value):
    """orjson would write an enum's value or a UUID's text; the journal refuses them by name."""
    path = tmp_path / "j.jsonl"
    plan = {"steps": [{"id": f"s{i}", "args": {"x": i}} for i in range(600)]}
    plan["steps"][450]["args"]["deep"] = [{"cells": [value]}]
    with JournalWriter(path, "run") as journal, pytest.raises(JournalError, match="not plain data"):
        journal.emit(JournalEvent(event="test.data", data=plan))
    assert path.read_bytes() == b"", "a refused event leaves no line"
