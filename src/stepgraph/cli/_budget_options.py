"""The budget options shared by `run` and `resume`."""

from __future__ import annotations

from typing import Annotated

import click
import typer
from pydantic import ValidationError

from stepgraph.model import Budget, Price

MaxModelCallsOpt = Annotated[
    int | None, typer.Option("--max-model-calls", min=0, help="Budget: requests to the model.")
]
MaxPromptTokensOpt = Annotated[
    int | None, typer.Option("--max-prompt-tokens", min=0, help="Budget: prompt tokens.")
]
MaxCompletionTokensOpt = Annotated[
    int | None,
    typer.Option("--max-completion-tokens", min=0, help="Budget: completion tokens."),
]
MaxToolCallsOpt = Annotated[
    int | None,
    typer.Option("--max-tool-calls", min=0, help="Budget: tool attempts, retries included."),
]
MaxWallTimeOpt = Annotated[
    str | None,
    typer.Option("--max-wall-time", help="Budget: seconds, or a duration such as '5 min'."),
]
MaxCostOpt = Annotated[
    float | None, typer.Option("--max-cost", min=0, help="Budget: US dollars for the model.")
]
PriceOpt = Annotated[
    str | None,
    typer.Option(
        "--price-per-mtok",
        help="The model's price in dollars per million tokens, 'input=0.15,output=0.6' "
        "(default: genai-prices' data for the model's name).",
    ),
]


def parse_price(text: str) -> Price:
    """``input=0.15,output=0.6`` as a `Price`; anything else is a usage error (exit 2)."""
    try:
        pairs = dict(part.split("=", 1) for part in text.split(",") if part.strip())
        return Price.model_validate({key.strip(): value.strip() for key, value in pairs.items()})
    except (ValueError, ValidationError) as e:
        raise click.UsageError(
            f"--price-per-mtok {text!r}: write it as input=DOLLARS,output=DOLLARS "
            f"(per million tokens), e.g. input=0.15,output=0.6 ({e})"
        ) from e


def budget_from_options(
    *,
    model_calls: int | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    tool_calls: int | None = None,
    wall_time: str | None = None,
    cost: float | None = None,
    price: str | None = None,
) -> Budget | None:
    """The limits given on the command line, or None when none is."""
    given = {
        "model_calls": model_calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "tool_calls": tool_calls,
        "wall_time": wall_time,
        "cost": cost,
        "price": parse_price(price) if price else None,
    }
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return None
    if wall_time is not None and _plain_number(wall_time):  # --help promises plain seconds
        given["wall_time"] = f"{wall_time} s"
    try:
        return Budget.model_validate(given)
    except ValidationError as e:
        problems = "; ".join(
            f"{_option(error['loc'])}: {error['msg'].removeprefix('Value error, ')}"
            for error in e.errors()
        )
        raise click.UsageError(f"a budget option is not valid: {problems}") from e


def _option(location: tuple[int | str, ...]) -> str:
    """The command-line option a budget field comes from: wall_time -> --max-wall-time."""
    field = str(location[0]) if location else "budget"
    return "--price-per-mtok" if field == "price" else f"--max-{field.replace('_', '-')}"


def _plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
