"""Verifiers: after a run, each tool's reverse check, declared checks and unit checks."""

from stepgraph.verifiers._clock import ClockRange, clock_ranges, lone_times
from stepgraph.verifiers._coverage import goal_coverage
from stepgraph.verifiers._effect import effect_verdict, inert_inputs
from stepgraph.verifiers._grounding import NOT_STATED, grounding_problems, task_input_problems
from stepgraph.verifiers._numbers import (
    ReadNumber,
    is_percent,
    literal_numbers,
    matches,
    read_numbers,
    word_numbers,
    worded_fraction,
)
from stepgraph.verifiers._states import STEP_STATES, answer_checked, step_states
from stepgraph.verifiers._trace import check_answer_template, trace_answer
from stepgraph.verifiers._verify import check_verdict, verify
from stepgraph.verifiers._words import SaidWord, said_words, write_said_units

__all__ = [
    "NOT_STATED",
    "STEP_STATES",
    "ClockRange",
    "ReadNumber",
    "SaidWord",
    "answer_checked",
    "check_answer_template",
    "check_verdict",
    "clock_ranges",
    "effect_verdict",
    "goal_coverage",
    "grounding_problems",
    "inert_inputs",
    "is_percent",
    "literal_numbers",
    "lone_times",
    "matches",
    "read_numbers",
    "said_words",
    "step_states",
    "task_input_problems",
    "trace_answer",
    "verify",
    "word_numbers",
    "worded_fraction",
    "write_said_units",
]
