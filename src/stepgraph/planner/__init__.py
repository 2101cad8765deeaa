"""The planner: goals become validated step graphs through any OpenAI-compatible endpoint."""

from stepgraph.planner._ahead import WorkedAhead
from stepgraph.planner._client import (
    MODES,
    LLMClient,
    LLMReply,
    LLMSettings,
    Message,
    OpenAIClient,
    ResponseMode,
    StreamingClient,
)
from stepgraph.planner._lines_shown import plan_lines
from stepgraph.planner._parse import ParsedPlan, extract_json, parse_plan
from stepgraph.planner._plan_stream import PlanStream, PlanWatcher
from stepgraph.planner._planner import CheckedPlan, Planner
from stepgraph.planner._prompt import MAX_PLAN_STEPS, system_prompt, tool_guide
from stepgraph.planner._read_goal import asked_time_of_day, asked_unit, goal_shape, read_inputs
from stepgraph.planner._schema import plan_schema
from stepgraph.planner._settings import (
    SMALL_MODEL,
    SMALL_MODEL_MAX_TOKENS,
    CrossRoute,
    PlannerSettings,
    PlanSyntax,
    Preset,
    RetryWith,
)

__all__ = [
    "MAX_PLAN_STEPS",
    "MODES",
    "SMALL_MODEL",
    "SMALL_MODEL_MAX_TOKENS",
    "CheckedPlan",
    "CrossRoute",
    "LLMClient",
    "LLMReply",
    "LLMSettings",
    "Message",
    "OpenAIClient",
    "ParsedPlan",
    "PlanStream",
    "PlanSyntax",
    "PlanWatcher",
    "Planner",
    "PlannerSettings",
    "Preset",
    "ResponseMode",
    "RetryWith",
    "StreamingClient",
    "WorkedAhead",
    "asked_time_of_day",
    "asked_unit",
    "extract_json",
    "goal_shape",
    "parse_plan",
    "plan_lines",
    "plan_schema",
    "read_inputs",
    "system_prompt",
    "tool_guide",
]
