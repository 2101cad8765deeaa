from datetime import datetime

import pytest

from stepgraph import RunStatus
from tests.conftest import EXAMPLES


def test_migration_needs_three_nights_of_962_28_gb(run_task):
    """The canonical example: 2.5 TB over 450 Mbps, 6 h nights, 90%, 12% retries."""
    result, _ = run_task(EXAMPLES / "migration.yaml")
    assert result.status is RunStatus.VERIFIED
    assert result.values["nights"] == 3
    per_night = result.values["per_night"]
    assert f"{per_night.units:~}" == "GB"
    assert per_night.magnitude == pytest.approx(450e6 / 8 * 6 * 3600 * 0.9 * 0.88 / 1e9)
    assert result.answer == "3 nights (962.28 GB per night; 2,500 GB in all)"
    assert all(v.passed for v in result.verdicts) and len(result.verdicts) == 7


def test_parallel_example_probes_overlap_in_the_journal(run_task):
    result, journal = run_task(EXAMPLES / "links" / "links.yaml")
    assert result.status is RunStatus.VERIFIED
    assert result.values["best"] == 1

    def interval(step):
        events = journal.for_step(step)
        start = next(e.ts for e in events if e.event == "action")
        end = next(e.ts for e in events if e.event == "observation")
        return datetime.fromisoformat(start), datetime.fromisoformat(end)

    spans = [interval(step) for step in ("probe_a", "probe_b", "probe_c")]
    latest_start = max(start for start, _ in spans)
    earliest_end = min(end for _, end in spans)
    assert latest_start < earliest_end, "the three probes did not overlap"


def test_company_example_follows_the_id_from_one_tool_to_the_next(run_task):
    result, journal = run_task(EXAMPLES / "company" / "company.yaml")
    assert result.status is RunStatus.VERIFIED
    [action] = [e for e in journal.of_kind("action") if e.step == "holders"]
    assert action.args == {"company_id": 42}
    assert result.answer.startswith(
        "Acme Data Systems (id 42, DE): largest shareholder Founders Trust"
    )


def test_company_example_reports_an_unknown_company(run_task):
    result, journal = run_task(
        EXAMPLES / "company" / "company.yaml", overrides={"company": "Nope Inc"}
    )
    assert result.status is RunStatus.STEP_FAILED
    assert (
        "no company named 'Nope Inc'; registered: Acme Data Systems" in result.observations[0].error
    )
    assert set(result.skipped) == {"holders", "unaccounted"}
