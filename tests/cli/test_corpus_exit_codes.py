"""Every file the command line reads, fed to the command that reads it: never exit 1.

Exit 1 means an internal error, a bug; a bad input must get one of the documented
codes with a message instead. The corpus is the repository's own files (task files,
planner outputs, scripts, SQL) plus journals recorded from the examples and their
truncated copies.
"""

from pathlib import Path

import pytest
import yaml
from typer.testing import Result

from stepgraph.cli import ExitCode
from tests.conftest import EXAMPLES, ROOT, invoke
from tests.planner.test_corpus import load_case

TESTS = ROOT / "tests"
CASES = sorted((TESTS / "planner" / "cases").glob("*.yaml"))
FILES = sorted(
    path
    for folder in (EXAMPLES, TESTS)
    for path in folder.rglob("*")
    if path.is_file() and path.suffix not in (".py", ".pyc")
)
EXAMPLE_RUNS = {
    "migration": ["run", EXAMPLES / "migration.yaml"],
    "planned": [
        "run",
        EXAMPLES / "planned" / "migration.yaml",
        "--scripted",
        EXAMPLES / "planned" / "migration.script.yaml",
    ],
    "company": ["run", EXAMPLES / "company" / "company.yaml"],
}


def assert_no_internal_error(result: Result) -> None:
    assert result.exit_code != ExitCode.INTERNAL, result.output
    assert "internal error" not in result.output


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", [p for p in FILES if p.suffix in (".yaml", ".yml")], ids=name)
def test_validate_every_yaml_file(path):
    """Task files validate (trusted: they are ours); scripts and planner cases are refused."""
    result = invoke("validate", path, "--trust-plugins")
    assert_no_internal_error(result)
    assert result.exit_code in (ExitCode.OK, ExitCode.INVALID)


# Journals of real runs kept as regression cases (tests/engine/test_recorded_memory.py)
RECORDED_JOURNALS = sorted((TESTS / "engine" / "recorded_memory").glob("*.jsonl"))


@pytest.mark.parametrize("path", [p for p in FILES if p not in RECORDED_JOURNALS], ids=name)
def test_show_refuses_every_file_that_is_not_a_journal(path):
    result = invoke("show", path)
    assert_no_internal_error(result)
    assert result.exit_code == ExitCode.INVALID
    assert "not a stepgraph journal" in " ".join(result.output.split())


@pytest.mark.parametrize("path", RECORDED_JOURNALS, ids=name)
def test_show_reads_every_recorded_journal(path):
    result = invoke("show", path)
    assert result.exit_code == ExitCode.OK, result.output
    assert "run ended: verified" in result.output


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A journal of each example run, and a copy of each cut off mid-line."""
    folder = tmp_path_factory.mktemp("journals")
    paths = []
    for label, args in EXAMPLE_RUNS.items():
        journal = folder / f"{label}.jsonl"
        assert invoke(*args, "--journal", journal).exit_code == ExitCode.OK
        text = journal.read_text()
        cut = folder / f"{label}.cut.jsonl"
        cut.write_text(text[: len(text) * 2 // 3])
        paths += [journal, cut]
    return paths


@pytest.mark.parametrize("command", ["show", "replay", "graph"])
def test_journal_commands_on_recorded_and_cut_off_journals(journals, command, tmp_path):
    for journal in journals:
        extra = ["--out", tmp_path / f"{journal.stem}.out.jsonl"] if command == "replay" else []
        extra += ["--trust-plugins"] if command == "replay" else []  # our own examples' plugins
        result = invoke(command, journal, *extra)
        assert_no_internal_error(result)
        if ".cut" not in journal.name:
            assert result.exit_code == ExitCode.OK, result.output


@pytest.fixture(scope="module")
def planner_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A goal-only task with the inputs the planner cases refer to."""
    path = tmp_path_factory.mktemp("task") / "move.yaml"
    path.write_text("goal: move the data\ninputs: {data: 2.5 TB, link: 450 Mbps}\n")
    return path


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_plan_with_every_planner_case_as_the_model_answer(case, planner_task, tmp_path):
    """A repaired answer is a plan (exit 0); a rejected one, with no retries, exits 3."""
    data = load_case(case)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"scripted": True, "responses": [data["output"]]}))
    result = invoke(
        "plan",
        planner_task,
        "--scripted",
        script,
        "--plan-retries",
        0,
        "--journal",
        tmp_path / "plan.jsonl",
    )
    assert_no_internal_error(result)
    expected = ExitCode.OK if data["expect"] == "repaired" else ExitCode.INVALID
    assert result.exit_code == expected, result.output
