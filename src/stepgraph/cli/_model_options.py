"""The options that say which model plans: one `ModelOptions` for every command that may call one.

Each option is declared once, as a field of `ModelOptions`; `with_model_options` puts the
whole set on a command in place of its `model_options` parameter, so `run`, `plan`, `eval`,
`resume`, `approve`, `serve` and `mcp` take the same flags with the same help and variables
(a test compares them across the commands).

typer reads the variables and lists them in --help as plain text ("[env var: ...]"),
which a "[env: ...]" inside help= is not: rich takes it for markup and drops it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, get_type_hints

import click
import typer
from pydantic import ValidationError

if TYPE_CHECKING:  # imported when a command builds its planner, not for --help
    from stepgraph.planner import Planner, PlannerSettings

# The planner's `ResponseFormat`, spelled here so the options exist before the planner is
# imported (a test keeps the two equal).
ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]
PlanSyntax = Literal["json", "lines"]
Preset = Literal["none", "small-model"]  # the planner's `Preset` (a test keeps them equal)

ScriptedOpt = Annotated[
    Path | None,
    typer.Option(help="Answer as the model from a scripted responses file (offline, no API key)."),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(envvar="OPENAI_BASE_URL", show_envvar=True, help="OpenAI-compatible endpoint."),
]
ModelOpt = Annotated[
    str | None, typer.Option(envvar="STEPGRAPH_MODEL", show_envvar=True, help="Model name.")
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        envvar="OPENAI_API_KEY",
        show_envvar=True,  # the name only; click never shows an environment value
        help="API key; prefer the environment, flags show in ps.",
    ),
]
PlanRetriesOpt = Annotated[
    int, typer.Option(min=0, max=10, help="Times a rejected plan is sent back to the model.")
]
ResponseFormatOpt = Annotated[
    ResponseFormat | None,
    typer.Option(
        envvar="STEPGRAPH_RESPONSE_FORMAT",
        show_envvar=True,
        help="auto (default: json_schema, then JSON mode with the schema, then JSON mode, "
        "then text), json_schema, json_object or text.",
    ),
]
PlanSyntaxOpt = Annotated[
    PlanSyntax | None,
    typer.Option(
        envvar="STEPGRAPH_PLAN_SYNTAX",
        show_envvar=True,
        help="How the model writes plans: json (default; the schema) or lines (one "
        "Python-like line a step, read with ast, never run; for small code models).",
    ),
]
PresetOpt = Annotated[
    Preset | None,
    typer.Option(
        envvar="STEPGRAPH_PRESET",
        show_envvar=True,
        help="small-model: the settings measured best with a 1.5B model on a CPU (plans in "
        "lines, numbered names, fresh retries, programs where the words check them, the "
        "cross-check, 1024 tokens an answer); a flag or variable given as well wins.",
    ),
]
CrossCheckOpt = Annotated[
    bool | None,
    typer.Option(
        "--cross-check/--no-cross-check",
        help="Verified only if a second plan, by its own route, agrees (about twice the "
        "calls). Default: off, on with --preset small-model.",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        min=1,
        envvar="STEPGRAPH_TIMEOUT",
        show_envvar=True,
        help="Seconds one model request may take (default 300: a CPU server is slow).",
    ),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        envvar="STEPGRAPH_MAX_TOKENS",
        show_envvar=True,
        help="Tokens one model answer may take (default: the server's limit); ends a small "
        "model that repeats itself before the timeout does.",
    ),
]
MaxRetriesOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=10,
        envvar="STEPGRAPH_MAX_RETRIES",
        show_envvar=True,
        help="Retries of HTTP 429/5xx and refused connections (default 2; never a timeout).",
    ),
]


R = TypeVar("R")


@dataclass(frozen=True)
class ModelOptions:
    """Which model plans, as the command line (or the environment) said."""

    scripted: ScriptedOpt = None
    base_url: BaseUrlOpt = None
    model: ModelOpt = None
    api_key: ApiKeyOpt = None
    plan_retries: PlanRetriesOpt = 2
    response_format: ResponseFormatOpt = None
    plan_syntax: PlanSyntaxOpt = None
    timeout: TimeoutOpt = None
    max_tokens: MaxTokensOpt = None
    max_retries: MaxRetriesOpt = None
    preset: PresetOpt = None

    def cross_checks(self, asked: bool | None) -> bool:
        """Whether runs are cross-checked: as the flag said, else as the preset says.

        The small-model preset cross-checks: its words are what verify an answer.
        """
        return asked if asked is not None else self.settings().small_model

    def settings(self) -> PlannerSettings:
        """How plans are asked for: the environment's settings under the chosen preset."""
        from stepgraph.planner import PlannerSettings

        try:
            return PlannerSettings(preset=self.preset) if self.preset else PlannerSettings()
        except ValidationError as error:  # a variable with no flag: typer does not check it
            # a variable of two kinds (1, 0 or auto) fails once per kind: one line for it
            failed: dict[str, list[str]] = {}
            value_of: dict[str, object] = {}
            for e in error.errors():
                name = f"STEPGRAPH_{str(e['loc'][0]).upper()}"
                failed.setdefault(name, []).append(e["msg"])
                value_of[name] = e.get("input")
            wrong = "; ".join(
                f"{name}={value_of[name]!r}: {' or '.join(msgs)}" for name, msgs in failed.items()
            )
            raise click.UsageError(f"invalid environment: {wrong}") from None

    def planner(self) -> Planner | None:
        """The planner the options describe, or None when no model is configured."""
        from stepgraph.planner import SMALL_MODEL_MAX_TOKENS, LLMSettings, OpenAIClient, Planner
        from stepgraph.testing import ScriptedLLM

        shape = self.settings()
        asked: dict[str, Any] = {
            **shape.planner_arguments(),
            "plan_retries": self.plan_retries,
            "syntax": self.plan_syntax or shape.plan_syntax,
        }
        if self.scripted is not None:
            return Planner(ScriptedLLM.from_file(self.scripted), **asked)
        # The flags or, as typer resolved them, their variables; what is unset or empty is
        # left to LLMSettings (model gpt-4o-mini; neither endpoint nor key: not configured).
        flags: dict[str, Any] = {
            "base_url": self.base_url,
            "model": self.model,
            "api_key": self.api_key,
            "response_format": self.response_format,
            "timeout": self.timeout,
            "max_tokens": self.max_tokens,
            "max_retries": self.max_retries,
        }
        given = {key: value for key, value in flags.items() if value not in (None, "")}
        if shape.small_model and "max_tokens" not in given:
            given["max_tokens"] = SMALL_MODEL_MAX_TOKENS
        settings = LLMSettings(**given)
        if not settings.configured:
            return None
        return Planner(OpenAIClient(settings), **asked)


MODEL_DEFAULTS = ModelOptions()  # every option unset: a command's default (it is frozen)


def with_model_options(command: Callable[..., R]) -> Callable[..., R]:
    """Give `command` every model option in place of its `model_options: ModelOptions`.

    typer reads the signature: the wrapper shows it the fields of `ModelOptions` (where
    the command's `model_options` stood, so --help keeps its order) and hands the command
    the one `ModelOptions` they make. Apply it under `handle_errors`.
    """
    hints = get_type_hints(ModelOptions, include_extras=True)
    names = [field.name for field in fields(ModelOptions)]
    options = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=field.default,
            annotation=hints[field.name],
        )
        for field in fields(ModelOptions)
    ]
    signature = inspect.signature(command, eval_str=True)
    if "model_options" not in signature.parameters:
        raise TypeError(f"{command.__name__} takes no model_options parameter")
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        parameters.extend(options if parameter.name == "model_options" else [parameter])

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> R:  # typer passes every parameter by name
        chosen = ModelOptions(**{name: kwargs.pop(name) for name in names if name in kwargs})
        return command(*args, **kwargs, model_options=chosen)

    # inspect (and so typer) reads a function's __signature__; mypy knows no such attribute.
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
