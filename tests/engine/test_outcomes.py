"""No outcome misleads: no made-up answers, no unverified values passed off as results,
the final failure named, and numbers printed as people read them."""

import json

import pytest

from stepgraph import RunStatus, StepExecutionError, tool
from stepgraph.units import (
    convert,
    format_pair,
    format_value,
    parse_quantity,
    parse_unit,
    quantity,
)
from tests.conftest import EXAMPLES, make_task


@tool
def lookup(name: str) -> int:
    """Fail for every name but 'known'."""
    if name != "known":
        raise LookupError(f"no entry named {name!r}")
    return 7


@tool
def record() -> object:
    """A record with two fields."""
    return {"a": 1, "b": 2}


def test_an_answer_that_needs_a_failed_step_says_so(run_task):
    task = make_task(
        [
            {"id": "n", "tool": "lookup", "args": {"name": "missing"}},
            {"id": "twice", "tool": "calculate", "args": {"expression": "${n} * 2"}},
            {"id": "other", "tool": "calculate", "args": {"expression": "6 * 7"}},
        ],
        answer="${twice} items",
    )
    result, journal = run_task(task, tools=[lookup])
    assert result.status is RunStatus.STEP_FAILED and not result.verified
    assert result.answer == (
        "no answer: step 'twice' was skipped: step 'n' failed: "
        "LookupError: no entry named 'missing'"
    )
    assert journal.of_kind("answer")[0].text == result.answer
    assert result.values == {}  # nothing is passed off as a result
    assert result.unverified_values == {"other": 42}
    data = json.loads(result.to_json())
    assert data["values"] == {} and data["unverified_values"] == {"other": 42}


def test_an_answer_names_each_failure_once(run_task):
    task = make_task(
        [
            {"id": "n", "tool": "lookup", "args": {"name": "x"}},
            {"id": "m", "tool": "calculate", "args": {"expression": "${n} + 1"}},
        ],
        answer="${m} and ${n}",
    )
    result, _ = run_task(task, tools=[lookup])
    assert result.answer == (
        "no answer: step 'm' was skipped: step 'n' failed: LookupError: no entry named 'x'; "
        "step 'n' failed"
    )
    assert [v for v in result.verdicts if not v.passed] == []  # the status says it failed


def test_an_answer_that_cannot_be_rendered_is_never_verified(run_task):
    """Every step ran and verified, but the template asks for a field the value lacks."""
    task = make_task([{"id": "r", "tool": "record"}], answer="total ${r.c}")
    result, _ = run_task(task, tools=[record])
    assert result.status is RunStatus.UNVERIFIED
    assert result.answer.startswith("no answer: ${r.c}: no field 'c'")
    [verdict] = [v for v in result.verdicts if not v.passed]
    assert verdict.kind.value == "answer" and verdict.description == result.answer
    assert result.values == {} and result.unverified_values == {"r": {"a": 1, "b": 2}}


def test_a_failed_verification_gives_no_answer_from_the_template(run_task):
    task = make_task(
        [{"id": "n", "tool": "calculate", "args": {"expression": "floor(2500 / 962.28)"}}],
        checks=[{"expression": "${n} * 962.28 >= 2500", "why": "the nights move all the data"}],
        answer="${n} nights",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.UNVERIFIED
    assert result.answer.startswith("no answer: verification failed")
    assert "2 nights" not in result.answer
    assert result.values == {} and result.unverified_values == {"n": 2}


def test_raise_for_status_names_the_final_failure_not_a_retried_attempt(run_task):
    """A step that failed once and then worked is no failure; the last attempt's error counts."""
    calls: dict[str, int] = {"flaky": 0, "broken": 0}

    @tool
    def flaky() -> int:
        """Fail the first time only."""
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise ConnectionError("first attempt of flaky")
        return 1

    @tool
    def broken() -> int:
        """Fail differently each time."""
        calls["broken"] += 1
        raise RuntimeError(f"attempt {calls['broken']} of broken")

    task = make_task(
        [
            {"id": "f", "tool": "flaky", "retries": 1},
            {"id": "b", "tool": "broken", "depends_on": ["f"], "retries": 1},
        ]
    )
    result, _ = run_task(task, tools=[flaky, broken])
    assert result.status is RunStatus.STEP_FAILED
    assert result.failed == {"b": "RuntimeError: attempt 2 of broken"}
    with pytest.raises(StepExecutionError) as error:
        result.raise_for_status()
    assert error.value.step == "b"
    assert str(error.value) == "step 'b': RuntimeError: attempt 2 of broken"


def test_json_output_has_no_float_noise_but_the_journal_keeps_exact_values(run_task):
    noisy = 0.1 + 0.2  # 0.30000000000000004 in binary floating point

    @tool
    def sums() -> object:
        """Values with float noise."""
        return {"fraction": noisy, "size": quantity(2.5 * 1000 + 1e-12 * 0.5, "GB")}

    result, journal = run_task(make_task([{"id": "s", "tool": "sums"}], answer="${s}"), [sums])
    data = json.loads(result.to_json())
    values = data["unverified_values"]  # `sums` has no reverse check: unchecked
    assert values["s"] == {"fraction": 0.3, "size": {"$quantity": [2500.0, "GB"]}}
    [observation] = journal.of_kind("observation")
    assert observation.value["fraction"] == noisy != 0.3
    assert json.loads(result.answer) == {"fraction": 0.3, "size": "2,500 GB"}


@pytest.mark.parametrize(
    ("magnitude", "unit", "shown"),
    [
        (450, "Mb/s", "450 Mbit/s"),
        (56.25, "MB/s", "56.25 MB/s"),
        (2.5, "TB", "2.5 TB"),
        (6, "h", "6 h"),
        (8, "bit", "8 bit"),
        (1, "Gbps", "1 Gbps"),
    ],
)
def test_units_print_as_people_write_them_and_read_back(magnitude, unit, shown):
    value = quantity(magnitude, unit)
    assert format_value(value) == shown
    assert parse_quantity(shown) == value


def test_dicts_and_lists_print_as_json():
    value = {"sizes": [quantity(962.2800000000001, "GB"), 3], "name": "x", "ok": True}
    assert json.loads(format_value(value)) == {
        "sizes": ["962.28 GB", 3],
        "name": "x",
        "ok": True,
    }


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (quantity(2.5, "TB"), quantity(2500, "GB")),
        (quantity(3 * 962.28, "GB"), quantity(2500, "GB")),
        (quantity(450, "Mbps"), quantity(56.25, "MB/s")),
        (quantity(20, "MB"), quantity(0.5, "GB")),
        (quantity(1, "h"), quantity(30, "min")),
    ],
)
def test_a_pair_is_stated_in_one_unit(left, right):
    shown_left, shown_right = format_pair(left, right)
    a, b = parse_quantity(shown_left), parse_quantity(shown_right)
    assert a.units == b.units
    assert convert(a, str(left.units)).magnitude == pytest.approx(left.magnitude, rel=1e-5)
    assert convert(b, str(right.units)).magnitude == pytest.approx(right.magnitude, rel=1e-5)


def test_a_pair_of_byte_counts_uses_a_readable_prefix():
    shown = format_pair(quantity(2.5e12, "B"), quantity(2500, "GB"))
    assert shown == ("2.5 TB", "2.5 TB")
    assert parse_unit("TB") == parse_quantity(shown[0]).units


def test_a_pair_that_cannot_share_a_unit_is_shown_as_it_is():
    assert format_pair(quantity(1, "GB"), quantity(3, "h")) == ("1 GB", "3 h")
    assert format_pair(3, 4.5) == ("3", "4.5")


def test_the_migration_example_still_needs_three_nights_of_962_28_gb(run_task):
    result, _ = run_task(EXAMPLES / "migration.yaml")
    per_night_gb = 450e6 / 8 * 6 * 3600 * 0.9 * 0.88 / 1e9
    total_gb = 2500
    nights = -(-total_gb // per_night_gb)
    assert result.verified and result.values["nights"] == nights == 3
    assert f"{nights:.0f} nights ({per_night_gb:.2f} GB per night" in result.answer


def test_a_run_without_a_journal_writes_no_file_and_still_tells_listeners(tmp_path):
    """`journal=False`: nothing on disk, the same verified result, events still seen live."""
    from stepgraph import Engine

    seen = []
    result = Engine(journal_dir=tmp_path).run(
        EXAMPLES / "migration.yaml", journal=False, listeners=[seen.append]
    )
    assert result.verified and result.answer.startswith("3 nights")
    assert list(tmp_path.iterdir()) == []
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    assert seen[0].event == "run.start" and seen[-1].event == "run.end"
