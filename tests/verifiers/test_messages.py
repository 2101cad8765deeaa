"""What a verdict says: the values it compared, every quantity of one kind in one unit."""

import re

import pytest
import yaml

from stepgraph import RunStatus, Task, VerdictKind
from stepgraph.exceptions import UnitError
from stepgraph.model import Check
from stepgraph.tools import reverse_convert
from stepgraph.units import parse_quantity, quantity
from stepgraph.verifiers import check_verdict
from tests.conftest import EXAMPLES, invoke

_QUANTITY = re.compile(r"(\d[\d,]*(?:\.\d+)?) ([A-Za-z][A-Za-z/]*)")


def migration(**changes: dict) -> Task:
    """The canonical example (2.5 TB, 450 Mbps, 00:00-06:00, 90%, 12%) with steps changed."""
    data = yaml.safe_load((EXAMPLES / "migration.yaml").read_text())
    steps = {step["id"]: step for step in data["plan"]["steps"]}
    for step, fields in changes.items():
        steps[step].update(fields)
    return Task.model_validate(data)


def descriptions(result) -> dict[str, str]:
    """Each reverse check's text by its step, each declared check's by its expression."""
    return {
        v.step if v.kind is VerdictKind.REVERSE else v.description.partition(":")[0]: v.description
        for v in result.verdicts
        if v.kind in (VerdictKind.REVERSE, VerdictKind.CHECK)
    }


def units_by_kind(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for _, unit in _QUANTITY.findall(text):
        try:
            value = parse_quantity(f"1 {unit}")
        except UnitError:  # a word, not a unit
            continue
        found.setdefault(str(value.dimensionality), set()).add(unit)
    return found


def test_the_canonical_run_states_its_checks_with_their_values_in_one_unit(run_task):
    """3 x 962.28 GB = 2,886.84 GB >= 2,500 GB: not `= 2.88684 TB >= 2.5 TB` beside GB."""
    result, _ = run_task(migration())
    assert result.status is RunStatus.VERIFIED and result.answer.startswith("3 nights")
    said = descriptions(result)
    assert said["nights"] == (
        "ceil: 3 x 962.28 GB = 2,886.84 GB >= 2,500 GB, and one fewer (1,924.56 GB) falls short"
    )
    assert said["per_night"] == "962.28 GB / 0.88 = 1,093.5 GB, expected 1,093.5 GB"
    assert said["${nights} * ${per_night} >= ${total}"] == (
        "${nights} * ${per_night} >= ${total}: 3 x 962.28 GB = 2,886.84 GB >= 2,500 GB "
        "(the nights move all the data)"
    )
    assert said["(${nights} - 1) * ${per_night} < ${total}"] == (
        "(${nights} - 1) * ${per_night} < ${total}: (3 - 1) x 962.28 GB = 1,924.56 GB < "
        "2,500 GB (one night fewer would not be enough)"
    )


def test_a_failed_declared_check_shows_its_values_and_what_holds_instead(run_task):
    """Rounded down, 2 nights: the check says 2 x 962.28 GB = 1,924.56 GB < 2,500 GB."""
    result, _ = run_task(
        migration(nights={"args": {"expression": "floor(${total} / ${per_night})"}})
    )
    assert result.status is RunStatus.UNVERIFIED
    said = descriptions(result)
    expected = (
        "${nights} * ${per_night} >= ${total}: 2 x 962.28 GB = 1,924.56 GB < 2,500 GB "
        "(the nights move all the data)"
    )
    assert said["${nights} * ${per_night} >= ${total}"] == expected
    assert expected in result.answer  # "no answer: verification failed (check): ..."


def test_the_failed_check_reads_the_same_in_show(run_task):
    """`stepgraph show` prints the journaled verdict: the same values, the same unit."""
    _, journal = run_task(
        migration(nights={"args": {"expression": "floor(${total} / ${per_night})"}})
    )
    shown = invoke("show", journal.path)
    assert "2 x 962.28 GB = 1,924.56 GB < 2,500 GB" in " ".join(shown.output.split())


def test_a_count_of_megabits_is_checked_in_megabits_throughout(run_task):
    """Not `3 x 7,698,240 Mbit = 23.0947 Tbit >= 20 Tbit, and one fewer (1.92456 TB) ...`."""
    result, _ = run_task(migration(per_night={"expect_unit": "Mbit"}))
    assert result.status is RunStatus.VERIFIED
    assert descriptions(result)["nights"] == (
        "ceil: 3 x 7,698,240 Mbit = 23,094,720 Mbit >= 20,000,000 Mbit, and one fewer "
        "(15,396,480 Mbit) falls short"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"per_night": {"expect_unit": "Mbit"}},
        {"total": {"args": {"value": "${inputs.data}", "to_unit": "Tbit"}}},
        {"rate": {"args": {"value": "${inputs.link}", "to_unit": "Mbit/s"}}},
        {"nights": {"args": {"expression": "floor(${total} / ${per_night})"}}},
    ],
)
def test_no_verdict_of_the_canonical_run_mixes_units_of_one_kind(run_task, changes):
    """Conversions aside (their result is in the unit converted to), one unit per dimension."""
    result, _ = run_task(migration(**changes))
    for verdict in result.verdicts:
        compared = verdict.description.partition(" converted back is ")
        text = compared[2] or compared[0]
        mixed = {kind: units for kind, units in units_by_kind(text).items() if len(units) > 1}
        assert not mixed, verdict.description


def test_a_conversion_is_compared_back_in_the_unit_it_came_from():
    """2,500 GB to TB is checked against 2,500 GB, not restated as 2.5 TB on both sides."""
    verdict = reverse_convert("t", {"value": "2500 GB", "to_unit": "TB"}, quantity(2.5, "TB"))
    assert verdict.passed
    assert verdict.description == "2.5 TB converted back is 2,500 GB, expected 2,500 GB"


def test_a_check_against_a_literal_writes_the_literal_in_the_value_unit():
    scope = {"total": quantity(2500, "GB")}
    verdict = check_verdict(Check(expression="${total} <= 3 TB"), scope)
    assert verdict.description == "${total} <= 3 TB: 2,500 GB <= 3,000 GB"
    failed = check_verdict(Check(expression="${total} > 3 TB", why="big"), scope)
    assert failed.description == "${total} > 3 TB: 2,500 GB <= 3,000 GB (big)"
