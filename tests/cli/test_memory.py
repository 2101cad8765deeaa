"""`stepgraph run` remembers verified plans of typed goals; `stepgraph memory` shows and forgets."""

import json
from pathlib import Path

from tests.conftest import flat, invoke

GOAL = (
    "How many nights does it take to move {} over a {} link, transferring only from 00:00 to "
    "06:00, at 90% utilisation and with 12% of the traffic lost to retries?"
)
SCRIPT = """scripted: true
description: one plan in lines for the migration goal; a second model call would fail
responses:
- |
  rate: "GB/h" = link
  per_night = rate * duration * utilisation * (1 - traffic)
  nights = ceil(data / per_night)
  assert nights * per_night >= data, "the nights cover the data"
  answer = f"{nights} nights ({per_night} per night)"
"""
LINES = {"STEPGRAPH_PLAN_SYNTAX": "lines"}


def _run(script: Path, goal: str, *extra: str):
    return invoke(
        "run", goal, "--scripted", script, "--tools", "unit_convert,calculate", *extra, env=LINES
    )


def test_a_typed_goal_of_a_remembered_shape_runs_with_no_model_call(tmp_path, runs_folder):
    """The second goal needs the model's one answer again: only memory can answer it."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    first = _run(script, GOAL.format("2.5 TB", "450 Mbps"))
    assert first.exit_code == 0, first.output
    # 2 TB at 1 Gbit/s: 125 MB/s x 6 h x 0.9 x 0.88 = 2,138.4 GB a night, so 1 night.
    second = _run(script, GOAL.format("2 TB", "1 Gbps"))
    assert second.exit_code == 0, second.output
    assert "plan recalled from verified run" in flat(second.output), second.output
    assert "Answer: 1 nights (2,138.4 GB per night)" in flat(second.output)
    listed = json.loads(invoke("memory", "list", "--json").output)
    assert [row["goal"] for row in listed] == [
        GOAL.format("2 TB", "1 Gbps"),
        GOAL.format("2.5 TB", "450 Mbps"),
    ]
    assert all(Path(row["journal"]).parent == runs_folder for row in listed)


def test_no_memory_plans_afresh_and_a_forgotten_run_is_not_recalled(tmp_path):
    """`--no-memory` asks the model; after `memory forget` the model is asked again too."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    assert _run(script, GOAL.format("2.5 TB", "450 Mbps")).exit_code == 0
    asked = _run(script, GOAL.format("2 TB", "1 Gbps"), "--no-memory")
    assert asked.exit_code == 0 and "plan recalled" not in flat(asked.output)
    for row in json.loads(invoke("memory", "list", "--json").output):
        shown = invoke("memory", "show", row["run_id"])
        assert shown.exit_code == 0 and "nights = ceil(data / per_night)" in shown.output
        assert invoke("memory", "forget", row["run_id"]).exit_code == 0
    assert json.loads(invoke("memory", "list", "--json").output) == []
    again = _run(script, GOAL.format("3 TB", "1 Gbps"))
    assert again.exit_code == 0 and "plan recalled" not in flat(again.output)


def test_memory_of_an_unknown_run_is_a_usage_error(tmp_path):
    """A clear message and exit 2, never a traceback."""
    for command in ("show", "forget"):
        result = invoke("memory", command, "nosuchrun")
        assert result.exit_code == 2
        assert "memory holds no run 'nosuchrun'" in flat(result.output)


def test_memory_list_says_why_runs_from_another_machine_are_absent(
    tmp_path, runs_folder, monkeypatch
):
    """Runs sealed by another key (copied in) are not listed, and the listing says so."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "elsewhere.key"))
    assert _run(script, GOAL.format("2.5 TB", "450 Mbps")).exit_code == 0
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "here.key"))
    listed = invoke("memory", "list")
    assert "nothing remembered yet" in flat(listed.output)
    assert "1 verified run(s) not sealed by this machine's key" in flat(listed.output)


def test_eval_with_memory_recalls_a_goal_verified_earlier_in_its_folder(tmp_path):
    """A suite's second goal of the same shape needs no model call; without --memory it does."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: nights\ngoals:\n"
        f"- id: first\n  goal: {GOAL.format('2.5 TB', '450 Mbps')}\n  expect: 3 nights\n"
        "  tools: [unit_convert, calculate]\n"
        f"- id: second\n  goal: {GOAL.format('2 TB', '1 Gbps')}\n  expect: 1 nights\n"
        "  tools: [unit_convert, calculate]\n"
    )
    outcomes = {}
    for memory in ("--memory", None):
        folder = tmp_path / f"runs-{bool(memory)}"
        extra = [memory] if memory else []
        result = invoke(
            "eval", suite, "--scripted", script, "--journal-dir", folder, "--json", *extra,
            env=LINES,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["memory"] is bool(memory)
        outcomes[bool(memory)] = {row["goal"]: row for row in document["goals"]}
    assert outcomes[True]["second"]["verified"] and outcomes[True]["second"]["correct"]
    assert outcomes[True]["second"]["model_calls"] == 0
    assert not outcomes[False]["second"]["verified"]  # the script had one answer only


SEED = Path(__file__).parents[2] / "examples" / "memory" / "transfer-seed.yaml"
SEED_GOAL = (
    "A 12 TB archive is copied over a 250 Mbps line that may be used only from 21:00 to 07:00, "
    "at 85% utilisation, and 4% of the traffic is lost to retries. How many nights does the "
    "copy take?"
)


def test_the_shipped_seed_plan_verifies_its_goal_and_is_remembered(tmp_path):
    """250 Mbps = 112.5 GB/h; x 10 h x 0.85 x 0.96 = 918 GB a night; 12,000 / 918 -> 14."""
    assert " ".join(SEED_GOAL.split()) in " ".join(SEED.read_text().split())  # as documented
    result = _run(SEED, SEED_GOAL, "--runs", tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert "Answer: 14 nights (918 GB per night)" in flat(result.output)
    listed = json.loads(invoke("memory", "list", "--runs", tmp_path / "runs", "--json").output)
    assert [row["goal"] for row in listed] == [SEED_GOAL]


def test_eval_with_memory_neither_recalls_nor_shows_a_run_sealed_elsewhere(tmp_path, monkeypatch):
    """A journal copied into the eval folder (another machine's key) claims a verified plan:
    `--memory` must ask the model as if the folder were empty, and show it as no example."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    folder = tmp_path / "runs"
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "elsewhere.key"))
    planted = _run(script, GOAL.format("2.5 TB", "450 Mbps"), "--runs", folder)
    assert planted.exit_code == 0, planted.output
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "here.key"))
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: nights\ngoals:\n"
        f"- id: second\n  goal: {GOAL.format('2 TB', '1 Gbps')}\n  expect: 1 nights\n"
        "  tools: [unit_convert, calculate]\n"
    )
    result = invoke(
        "eval", suite, "--scripted", script, "--journal-dir", folder, "--json", "--memory",
        env=LINES,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["goals"]
    assert row["model_calls"] == 1  # planned by the model, not recalled
    journal = (folder / "second-run1.jsonl").read_text()
    assert '"plan.recalled"' not in journal and '"plan.examples"' not in journal
