"""Every command that may call a model takes the same model options, and they reach the model."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
import typer

from stepgraph.cli import app
from stepgraph.cli._model_options import ModelOptions
from tests.conftest import EXAMPLES, invoke

# The commands that plan, repair or revise: each builds a planner from its options.
MODEL_COMMANDS = {"run", "plan", "eval", "resume", "approve", "serve", "mcp"}
OPTION_NAMES = {field.name for field in fields(ModelOptions)}


def _commands() -> dict[str, Any]:
    """The command objects typer builds from the app (typer carries its own click)."""
    return dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _model_options(command: Any) -> dict[str, tuple[Any, ...]]:
    """What a person sees of each model option: flags, variable, help, default, type, range."""
    return {
        param.name: (
            tuple(param.opts),
            param.envvar,
            param.show_envvar,
            param.help,
            param.default,
            repr(param.type_descriptor.annotation),
            getattr(param, "min", None),
            getattr(param, "max", None),
        )
        for param in command.params
        if param.name in OPTION_NAMES
    }


def test_the_commands_that_may_call_a_model_take_one_and_the_same_set_of_model_options():
    """`stepgraph resume --timeout` exists, with the help and variable `run --timeout` has."""
    commands = _commands()
    assert set(commands) >= MODEL_COMMANDS
    taken = {name: _model_options(commands[name]) for name in sorted(MODEL_COMMANDS)}
    reference = taken["run"]
    assert set(reference) == OPTION_NAMES  # run takes every field of ModelOptions
    assert {name: options for name, options in taken.items() if options != reference} == {}


def test_no_other_command_takes_a_model_option():
    """A command outside the list above that grew a model option belongs in it.

    Known by its variable or its help: `otel --timeout` is the collector's, not the model's.
    """
    commands = _commands()
    model = _model_options(commands["run"]).values()
    variables = {envvar for _, envvar, *_ in model if envvar}
    helps = {text for _, _, _, text, *_ in model}
    grown = {
        name: sorted(p.name for p in command.params if p.envvar in variables or p.help in helps)
        for name, command in commands.items()
        if name not in MODEL_COMMANDS
    }
    assert variables and helps
    assert {name: found for name, found in grown.items() if found} == {}


def test_resume_hands_its_timeout_and_retries_to_the_model_client(monkeypatch, tmp_path):
    """The flags (or STEPGRAPH_TIMEOUT) of `resume` set the client that repairs the run."""
    import stepgraph.engine

    seen: dict[str, Any] = {}

    def fake_resume(journal: Any, *, planner: Any, **_: Any) -> Any:
        seen["planner"] = planner
        raise typer.Exit(0)

    monkeypatch.setattr(stepgraph.engine, "resume", fake_resume)
    journal = tmp_path / "run.jsonl"
    journal.write_text("")
    result = invoke(
        "resume",
        journal,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--max-retries",
        "0",
        env={"STEPGRAPH_TIMEOUT": "7"},
    )
    assert result.exit_code == 0, result.output
    settings = seen["planner"].client.settings
    assert (settings.base_url, settings.timeout, settings.max_retries) == (
        "http://127.0.0.1:9/v1",
        7,
        0,
    )


@pytest.mark.parametrize("flag", ["--plan-syntax", "--timeout"])
def test_a_bad_model_option_is_a_usage_error_on_every_command(flag):
    """The new options are checked as run checks them: exit 2 before anything starts."""
    value = {"--plan-syntax": "yaml", "--timeout": "0"}[flag]
    for name in ("resume", "approve", "serve"):
        result = invoke(
            name, *([] if name == "serve" else [EXAMPLES / "migration.yaml"]), flag, value
        )
        assert result.exit_code == 2, (name, result.output)
