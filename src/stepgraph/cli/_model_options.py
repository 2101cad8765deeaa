"""The options that say which model plans, shared by `run`, `plan` and `eval`.

typer reads the variables and lists them in --help as plain text ("[env var: ...]"),
which a "[env: ...]" inside help= is not: rich takes it for markup and drops it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

if TYPE_CHECKING:  # imported when a command builds its planner, not for --help
    from stepgraph.planner import Planner

# The planner's `ResponseFormat`, spelled here so the options exist before the planner is
# imported (a test keeps the two equal).
ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]
PlanSyntax = Literal["json", "lines"]

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
CrossCheckOpt = Annotated[
    bool,
    typer.Option(
        "--cross-check",
        help="Verified only if a second plan, by its own route, agrees (about twice the calls).",
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


def build_planner(
    *,
    scripted: Path | None,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    plan_retries: int,
    response_format: ResponseFormat | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    plan_syntax: PlanSyntax | None = None,
) -> Planner | None:
    """The planner the options describe, or None when no model is configured."""
    from stepgraph.planner import LLMSettings, OpenAIClient, Planner, PlannerSettings
    from stepgraph.testing import ScriptedLLM

    shape = PlannerSettings()
    asked: dict[str, Any] = {
        "plan_retries": plan_retries,
        "syntax": plan_syntax or shape.plan_syntax,
        "read_goal": shape.read_goal,
        "reason_first": shape.reason_first,
    }
    if scripted is not None:
        return Planner(ScriptedLLM.from_file(scripted), **asked)
    # The flags or, as typer resolved them, their variables; what is unset or empty is
    # left to LLMSettings (model gpt-4o-mini; neither endpoint nor key: not configured).
    flags: dict[str, Any] = {
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "response_format": response_format,
        "timeout": timeout,
        "max_retries": max_retries,
    }
    given = {key: value for key, value in flags.items() if value not in (None, "")}
    settings = LLMSettings(**given)
    if not settings.configured:
        return None
    return Planner(OpenAIClient(settings), **asked)
