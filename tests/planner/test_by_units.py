"""Readings of ambiguous literals: which one is taken, and when none is."""

from stepgraph.model import StepGraph
from stepgraph.planner._by_units import MAX_READINGS, read_by_units
from stepgraph.planner._lines import Ambiguous
from stepgraph.planner._parse import ParsedPlan

PLAN = StepGraph.model_validate(
    {"steps": [{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}]}
)


def _parse_valid_for(*valid: tuple[str, ...]):
    tried: list[tuple[str, ...]] = []

    def parse(choices):
        reading = tuple(choices[n] for n in sorted(choices))
        tried.append(reading)
        return ParsedPlan(PLAN if reading in valid else None, [], [])

    return parse, tried


def _two(value: float = 2.0) -> list[Ambiguous]:
    return [
        Ambiguous("line 1", value, ("count", "feet")),
        Ambiguous("line 2", value, ("count", "feet")),
    ]


def test_the_one_valid_reading_is_taken_and_said():
    parse, tried = _parse_valid_for(("feet", "count"))
    parsed = read_by_units(parse, _two(), plain={"count"})
    assert parsed is not None and parsed.plan is PLAN
    assert len(tried) == 4
    assert parsed.repairs == [
        "line 1: the goal's 2 is both count and feet; read as feet, where the units agree",
        "line 2: the goal's 2 is both count and feet; read as count, where the units agree",
    ]


def test_of_several_valid_readings_the_one_keeping_most_numbers_plain_is_taken():
    parse, _ = _parse_valid_for(("feet", "count"), ("feet", "feet"))
    parsed = read_by_units(parse, _two(), plain={"count"})
    assert parsed is not None and "read as count" in parsed.repairs[1]


def test_valid_readings_that_tie_are_no_reading():
    parse, _ = _parse_valid_for(("feet", "count"), ("count", "feet"))
    assert read_by_units(parse, _two(), plain={"count"}) is None


def test_no_valid_reading_is_none():
    parse, _ = _parse_valid_for()
    assert read_by_units(parse, _two(), plain={"count"}) is None


def test_too_many_readings_are_not_tried():
    many = [Ambiguous(f"line {n}", 2.0, ("a", "b")) for n in range(6)]  # 64 readings
    assert 2 ** len(many) > MAX_READINGS
    parse, tried = _parse_valid_for(("a",) * 6)
    assert read_by_units(parse, many, plain=set()) is None
    assert tried == []
