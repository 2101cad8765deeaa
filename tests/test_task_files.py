"""Task files as programs write them (JSON) and as large as a setting allows."""

from __future__ import annotations

import json

import pytest
import yaml

from stepgraph.cli import ExitCode
from stepgraph.exceptions import TaskFileError
from stepgraph.task import MAX_BYTES_VARIABLE, load_task
from tests.conftest import EXAMPLES, flat, invoke


def test_a_json_task_file_reads_as_the_same_task_as_its_yaml(tmp_path):
    data = yaml.safe_load((EXAMPLES / "migration.yaml").read_text())
    path = tmp_path / "migration.yaml"  # JSON is YAML: the suffix does not decide
    path.write_text(json.dumps(data, indent=1))
    assert load_task(path) == load_task(EXAMPLES / "migration.yaml")
    assert invoke("validate", path).exit_code == ExitCode.OK


def test_a_yaml_flow_mapping_that_is_not_json_still_reads(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_text("{goal: move the data, inputs: {data: {value: 2 TB}}}\n")
    task = load_task(path)
    assert task.goal == "move the data" and task.inputs["data"].value == "2 TB"


def test_broken_json_is_reported_as_a_bad_task_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"goal": "x", "plan": {"steps": [}\n')
    with pytest.raises(TaskFileError, match="not valid YAML"):
        load_task(path)


def test_the_size_limit_is_raised_by_a_setting_the_error_names(tmp_path, monkeypatch):
    path = tmp_path / "task.yaml"
    path.write_text("goal: x\n" + "# padding\n" * 200)
    size = path.stat().st_size
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(size - 1))
    result = invoke("validate", path)
    assert result.exit_code == ExitCode.INVALID
    text = flat(result.output)
    assert f"a task file may be at most {size - 1:,} bytes" in text
    assert f"{MAX_BYTES_VARIABLE}={size}" in text
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(size))
    assert load_task(path).goal == "x"


@pytest.mark.parametrize("value", ["ten", "-5", "0", "1e6"])
def test_a_size_setting_that_is_not_a_byte_count_is_a_clear_error(tmp_path, monkeypatch, value):
    path = tmp_path / "task.yaml"
    path.write_text("goal: x\n")
    monkeypatch.setenv(MAX_BYTES_VARIABLE, value)
    result = invoke("validate", path)
    assert result.exit_code == ExitCode.INVALID
    assert f"{MAX_BYTES_VARIABLE}={value!r}: give the largest task file" in flat(result.output)
