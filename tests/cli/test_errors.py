"""Exit codes come from one enum, errors from one decorator, model settings from typer's envvar."""

import socket

import pytest
import typer

from stepgraph.cli import ExitCode
from stepgraph.cli._errors import handle_errors
from stepgraph.exceptions import (
    ApprovalError,
    ApprovalMismatchError,
    CalculationError,
    DecisionConflictError,
    JournalError,
    JournalWriteError,
    LLMError,
    SideEffectsInFlightError,
)
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES, flat, invoke

MODEL_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "STEPGRAPH_MODEL")


def test_the_help_epilog_lists_every_exit_code_with_its_meaning():
    result = invoke("--help")
    assert result.exit_code == ExitCode.OK
    output = flat(result.output)
    for code in ExitCode:
        assert f"{int(code)} {code.meaning}" in output


def test_run_help_names_the_environment_variables_literally():
    output = invoke("run", "--help").output  # the panel may break "[env var:" from the name
    for name in MODEL_VARIABLES:
        assert f"{name}]" in output


@pytest.fixture
def no_model_environment(monkeypatch):
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _unused_port() -> int:
    with socket.socket() as probe:  # bound then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_model_variables_are_read_from_the_environment(tmp_path, no_model_environment):
    journal = tmp_path / "j.jsonl"
    env = {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{_unused_port()}/v1",
        "STEPGRAPH_MODEL": "env-model",
    }
    result = invoke("run", "nights to move 2.5 TB", "--journal", journal, env=env)
    assert result.exit_code == ExitCode.MODEL_FAILED
    assert "cannot reach the model endpoint" in flat(result.output)
    [request] = read_journal(journal).of_kind("llm.request")
    assert request.model == "env-model"


def test_without_the_variables_there_is_no_planner(tmp_path, no_model_environment):
    result = invoke("run", "nights to move 2.5 TB", "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.INVALID
    assert "no planner is configured. Three ways forward" in flat(result.output)


def _raising(error: BaseException) -> None:
    @handle_errors
    def command() -> None:
        raise error

    command()


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "interrupted; what was observed"),
        (ZeroDivisionError("boom"), ExitCode.INTERNAL, "internal error: ZeroDivisionError: boom"),
        (JournalError("unreadable"), ExitCode.INVALID, "unreadable"),
        (ApprovalError("not approved"), ExitCode.NOT_RUN, "not approved"),
        (SideEffectsInFlightError("in flight", steps=["p"]), ExitCode.SIDE_EFFECTS_IN_FLIGHT, "in"),
        (ApprovalMismatchError("other plan"), ExitCode.APPROVAL_MISMATCH, "other plan"),
        (DecisionConflictError("decided"), ExitCode.DECISION_CONFLICT, "decided"),
        (JournalWriteError("disk full"), ExitCode.INVALID, "disk full"),
        (JournalWriteError("full", tools_started=True), ExitCode.JOURNAL_INCOMPLETE, "full"),
        (LLMError("HTTP 503"), ExitCode.MODEL_FAILED, "HTTP 503"),
        (CalculationError("bad expression"), ExitCode.INVALID, "bad expression"),
    ],
)
def test_the_decorator_maps_errors_to_exit_codes(capsys, monkeypatch, error, code, message):
    monkeypatch.delenv("STEPGRAPH_DEBUG", raising=False)
    with pytest.raises(typer.Exit) as exited:
        _raising(error)
    assert exited.value.exit_code == code
    assert message in flat(capsys.readouterr().err)


def test_the_decorator_lets_exits_pass_and_keeps_the_signature():
    with pytest.raises(typer.Exit) as exited:
        _raising(typer.Exit(8))
    assert exited.value.exit_code == 8

    def command(name: str, count: int = 1) -> str:
        return name * count

    wrapped = handle_errors(command)
    assert wrapped("ab", count=2) == "abab" and wrapped.__wrapped__ is command


def test_stepgraph_debug_shows_the_real_exception(monkeypatch):
    monkeypatch.setenv("STEPGRAPH_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        _raising(ZeroDivisionError("boom"))


def test_model_options_reach_the_client_from_flags_and_the_environment():
    """--response-format, --timeout and --max-retries (or their variables) set the client."""
    from stepgraph.cli._model_options import ModelOptions

    planner = ModelOptions(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        plan_retries=1,
        response_format="json_object",
        timeout=600,
        max_retries=0,
    ).planner()
    settings = planner.client.settings
    assert (settings.response_format, settings.timeout, settings.max_retries) == (
        "json_object",
        600,
        0,
    )
    output = invoke("run", "--help", env={"COLUMNS": "200"}).output
    for name in ("STEPGRAPH_RESPONSE_FORMAT", "STEPGRAPH_TIMEOUT", "STEPGRAPH_MAX_RETRIES"):
        assert f"{name}]" in output


def test_an_unknown_response_format_is_a_usage_error():
    result = invoke("run", "a goal", "--response-format", "yaml")
    assert result.exit_code == 2


def test_graph_out_a_folder_is_a_usage_error_and_svg_is_written_as_named(tmp_path):
    """`graph --out DIR` was an internal error; `--out noext --format svg` wrote noext.png."""
    task = EXAMPLES / "migration.yaml"
    result = invoke("graph", task, "--out", tmp_path, "--format", "dot")
    assert result.exit_code == ExitCode.USAGE and "is a folder" in flat(result.output)
    assert invoke("graph", task, "--out", tmp_path / "noext", "--format", "svg").exit_code == 0
    assert (tmp_path / "noext").read_text().startswith("<?xml")
    assert not (tmp_path / "noext.png").exists()


def test_a_binary_scripted_file_is_a_clear_error_not_an_internal_one(tmp_path):
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)))
    result = invoke("run", "How many MB/s is 450 Mbps?", "--scripted", binary)
    assert result.exit_code == ExitCode.INVALID and "not a scripted-responses file" in flat(
        result.output
    )


def test_version_prints_the_installed_version_and_exits_0():
    import importlib.metadata

    result = invoke("--version")
    assert result.exit_code == ExitCode.OK
    assert result.stdout.strip() == f"stepgraph {importlib.metadata.version('stepgraph')}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "--no-such-option"), "No such option: --no-such-option"),
        (("replay",), "Missing argument"),
        (("run", "a goal", "--repair-rounds", "99"), "Invalid value for '--repair-rounds'"),
        (("run", EXAMPLES / "migration.yaml", "--set", "data"), "--set expects name=value"),
        (("validate", EXAMPLES / "migration.yaml", "-s", "=1"), "--set expects name=value"),
        (("run", EXAMPLES / "migration.yaml", "--tools", "calculate"), "--tools is for goals"),
        (("run",), "give a task file or a goal, or --plan"),
        (("eval", EXAMPLES / "eval" / "suite.yaml"), "eval needs a model"),
    ],
)
def test_usage_errors_exit_2_not_3(tmp_path, no_model_environment, args, message):
    """Wrong command-line usage is 2; 3 stays for task files, plans and journals."""
    result = invoke(*args, "--runs", tmp_path) if args[0] == "run" else invoke(*args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert message in flat(result.output)
