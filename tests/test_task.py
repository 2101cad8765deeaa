import pytest

from stepgraph import TaskFileError, load_task
from stepgraph.task import parse_assignments, resolve_inputs
from tests.conftest import EXAMPLES


def load(tmp_path, text):
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return load_task(path)


def test_an_empty_file_is_refused(tmp_path):
    with pytest.raises(TaskFileError, match="the file is empty; a task needs at least a 'goal'"):
        load(tmp_path, "")


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(TaskFileError, match="must be a mapping .* not a list"):
        load(tmp_path, "- goal: x\n")


def test_unknown_keys_are_named(tmp_path):
    with pytest.raises(TaskFileError) as error:
        load(tmp_path, "goal: x\nplna: {}\ninputs: {a: {value: 1, unit: GB}}\n")
    message = str(error.value)
    assert "- plna: unknown key (check the spelling)" in message
    assert "- inputs.a.unit: unknown key" in message


def test_invalid_yaml_is_refused(tmp_path):
    with pytest.raises(TaskFileError, match="not valid YAML"):
        load(tmp_path, "goal: [unclosed\n")


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(TaskFileError, match="no such task file"):
        load_task(tmp_path / "nope.yaml")


def test_inputs_accept_a_shorthand_value(tmp_path):
    task = load(tmp_path, "goal: x\ninputs: {data: 2.5 TB, factor: 0.9}\n")
    assert task.inputs["data"].value == "2.5 TB"


def test_set_overrides_an_input_with_a_unit_of_the_same_dimension():
    task = load_task(EXAMPLES / "migration.yaml")
    values = resolve_inputs(task, parse_assignments(["data=10TiB", "link = 1Gbps"]))
    assert f"{values['data'].units:~}" == "TiB" and values["link"].magnitude == 1


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("data=10Gbps", "'data' is [information], but '10Gbps' is [information] / [time]"),
        ("data=10", "'data' is [information], but '10' is dimensionless"),
        ("utilisation=90 zorks", "'utilisation' is dimensionless, but '90 zorks' is [count_zork]"),
        ("size=1GB", "the task has no input 'size'"),
        # a number no float holds: `1e999 TB` was reported verified (inf converted back
        # is inf), a 400-digit one ended the run with an OverflowError
        ("data=1e999 TB", "inf TB is not a finite number the engine can compute with"),
        ("data=1" + "0" * 400 + " TB", r"\(404 characters\) is not a finite number"),
    ],
)
def test_set_refuses_values_that_do_not_fit(assignment, message):
    task = load_task(EXAMPLES / "migration.yaml")
    pattern = message if "\\(" in message else message.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(TaskFileError, match=pattern):
        resolve_inputs(task, parse_assignments([assignment]))


def test_set_needs_name_equals_value():
    with pytest.raises(TaskFileError, match="--set expects name=value"):
        parse_assignments(["data"])


def test_a_task_file_input_no_float_holds_is_refused_by_name(tmp_path):
    task = load(tmp_path, "name: t\ngoal: Convert the data\ninputs:\n  data: 1e999 TB\n")
    with pytest.raises(TaskFileError, match="input 'data': inf TB is not a finite number"):
        resolve_inputs(task)


@pytest.mark.parametrize("value", ["inf GB", "-infinity TB", "NaN", "nan MB/s"])
def test_a_task_input_written_as_inf_or_nan_is_refused(tmp_path, value):
    """'inf GB' is text to the input reader but a number to unit_convert: it was converted
    into 'inf TB' and reported verified."""
    task = load(tmp_path, f"name: t\ngoal: Convert the data\ninputs:\n  data: {value}\n")
    with pytest.raises(TaskFileError, match=r"input 'data': .* is not a finite number"):
        resolve_inputs(task)


@pytest.mark.parametrize("value", ["Inf Ltd", "Nancy", "infosys"])
def test_a_name_that_begins_like_inf_or_nan_stays_text(tmp_path, value):
    task = load(tmp_path, f"name: t\ngoal: Look it up\ninputs:\n  company: {value}\n")
    assert resolve_inputs(task) == {"company": value}
