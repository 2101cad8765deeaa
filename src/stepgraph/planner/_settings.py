"""How plans are asked for: the planner's choices, and their settings from the environment."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from stepgraph.planner._program import PROGRAM_ONLY_TRIES

PlanSyntax = Literal["json", "lines"]
# How the cross-check reaches the answer a second time: another plan, or the model's own
# worked answer in words (`_worked`).
CrossRoute = Literal["plan", "worked", "worked-code", "auto"]
# What a refused plan's next attempt is asked with: the problems fed back, or the opening
# request again, sampled more widely (a small model rarely acts on feedback).
RetryWith = Literal["feedback", "fresh"]
# Programs and no plan: always, never, or where the words are the witness (`_route`).
ProgramOnly = bool | Literal["auto"]
# A set of settings chosen together: "small-model" is what the GSM8K and suite runs with a
# 1.5B model on a CPU measured best (docs/performance.md); "none" leaves each default.
Preset = Literal["none", "small-model"]
# Which fixed worked examples a plan-lines prompt shows: the first ones, or those whose
# quantities are of the goal's kinds (`_nearest`).
ExampleChoice = Literal["first", "nearest"]

# The small-model preset: plans in lines, counts and money named with their numbers, fresh
# retries (a small model sends a refused plan back unchanged), programs where the words
# check the answer, the words as the witness, a greedy loop stopped as it streams, the
# worked examples nearest the goal's kinds. A setting given by its own variable or flag
# wins over the preset. Not the words asked again nor a fresh plan on a disagreement:
# what they agree on no longer verifies (but for a second sample its own code backs, 6 in
# 500 held-out questions), and they cost a tenth of the median time and 12 s of the p90.
SMALL_MODEL: MappingProxyType[str, Any] = MappingProxyType(
    {
        "plan_syntax": "lines",
        "numbered_names": True,
        "cross_route": "auto",
        "retry_with": "fresh",
        "program_only": "auto",
        "stop_loops": True,
        "examples": "nearest",
    }
)
# The two settings of the preset that are not the planner's: one answer's token cap (it
# ends a sampled retry that repeats itself), and the cross-check, which the words need.
SMALL_MODEL_MAX_TOKENS = 1024
PRESETS: MappingProxyType[str, MappingProxyType[str, Any]] = MappingProxyType(
    {"none": MappingProxyType({}), "small-model": SMALL_MODEL}
)


class PlannerSettings(BaseSettings):
    """How plans are asked for, from the environment (STEPGRAPH_PLAN_SYNTAX, ..._READ_GOAL)."""

    model_config = SettingsConfigDict(env_prefix="STEPGRAPH_", extra="ignore")

    preset: Preset = Field(
        "none",
        description="small-model: the settings measured best with a 1.5B model on a CPU "
        "(plans in lines, numbered names, fresh retries, programs where the words check, "
        "greedy loops stopped, the nearest examples); each setting given by its own variable "
        "still wins.",
    )
    plan_syntax: PlanSyntax = Field(
        "json", description="json: the plan's JSON schema; lines: one Python-like line a step."
    )
    read_goal: bool = Field(
        True, description="Read the goal's quantities and show them as named, quoted inputs."
    )
    reason_first: bool = Field(
        False, description="Ask for a short plain-text reasoning before the plan, and show it."
    )
    numbered_names: bool = Field(
        False,
        description="Name each count and sum of money the goal states with its number as "
        "well (eggs_16, usd_10), and read a plan line's literal that is one read input's "
        "number as that input.",
    )
    cross_route: CrossRoute = Field(
        "plan",
        description="The cross-check's second route: another plan, or the model's worked "
        "answer in words (its final number and the numbers on the way must agree); "
        "worked-code: the same, with the answer's Python, where it writes some, worked out "
        "by the engine instead of the output the model imagines for it; auto: another plan "
        "where the answer needs units converted (data, or a unit of measure asked for), "
        "else worked-code.",
    )
    worked_ahead: bool = Field(
        False,
        description="Ask the worked answer of a worked cross-check while the plan is made, "
        "not after it verified: faster where the endpoint answers requests in parallel "
        "(a hosted API, a GPU server); no faster on a CPU llama.cpp server, which shares "
        "its cores between the two.",
    )
    afresh_on_disagreement: bool = Field(
        False,
        description="With fresh retries and a worked route: when the worked answer "
        "disagrees with a plan that passed its own checks, ask a fresh plan from the goal "
        "alone (in a repair round) and hold it against the same words; agreeing, its "
        "answer is given unverified (the first plan still disagrees).",
    )
    tool_schemas: bool = Field(
        True,
        description="JSON plans: the response format holds each step to one of the tools, "
        "by name, with that tool's own arguments (where the server constrains output); off: "
        "the step graph's schema alone.",
    )
    retry_with: RetryWith = Field(
        "feedback",
        description="A refused plan's next attempt: feedback (the problems shown) or fresh "
        "(the same request again, sampled more widely, the refused answer not shown).",
    )
    program_plan: bool = Field(
        False,
        description="When no plan is valid, ask the model for a short Python program and "
        "read it as a plan in lines (never executed as Python), checked as any plan.",
    )
    program_first: bool = Field(
        False,
        description="Ask first for a short Python program, read as a plan in lines (never "
        "executed as Python); only where it is no valid plan is a plan asked for.",
    )
    program_tries: int = Field(
        PROGRAM_ONLY_TRIES,
        ge=1,
        le=5,
        description="Programs only: how many programs a goal gets, the first greedy and "
        "the others sampled more widely (a third verified none of 97 GSM8K train questions).",
    )
    second_words: bool = Field(
        False,
        description="When the worked answer disagrees with a plan that passed its own "
        "checks, ask it once more, sampled: where that one agrees with the plan and its own "
        "code backs its words, the plan's answer verifies (the dissent stays in the "
        "verdict); agreeing in words alone, the answer stays unverified.",
    )
    examples: ExampleChoice = Field(
        "first",
        description="Plans in lines: the worked examples shown. first: the first three of "
        "the prompt's list; nearest: the three whose quantities are of the goal's kinds (a "
        "data size, a rate, a clock range, a share, the kind asked for), best first.",
    )
    stop_loops: bool = Field(
        False,
        description="Stream plans, programs and worked answers, and stop one whose last "
        "lines are one block written four times in a row (a greedy loop) instead of at the "
        "token cap; what came before the loop is read as any answer.",
    )
    program_only: ProgramOnly = Field(
        False,
        description="Programs and no plan: up to two programs (the first greedy, the "
        "other sampled more widely) and, where none is valid, no plan; a fresh attempt "
        "(fresh retries, afresh on disagreement) is a fresh program. auto: only for a goal "
        "whose answer the words check (counts and money) and whose tools are arithmetic; "
        "where units convert or other tools are needed, the program first, then plans.",
    )

    @model_validator(mode="after")
    def _apply_preset(self) -> PlannerSettings:
        # Only what was not given: STEPGRAPH_RETRY_WITH=feedback beside the preset stays.
        for name, value in PRESETS[self.preset].items():
            if name not in self.model_fields_set:
                setattr(self, name, value)
        return self

    @property
    def small_model(self) -> bool:
        """Whether the small-model preset is chosen (it also caps tokens, cross-checks)."""
        return self.preset == "small-model"

    def planner_arguments(self) -> dict[str, Any]:
        """These settings as `Planner`'s keyword arguments (its `syntax` is `plan_syntax`)."""
        chosen = self.model_dump(exclude={"preset", "plan_syntax"})
        return {"syntax": self.plan_syntax, **chosen}
