"""Verifiers: reverse calculation, declared checks and unit checks after a run."""

from stepgraph.tools import reverse_calculate, reverse_convert
from stepgraph.tools.expression import TOLERANCE, close
from stepgraph.verifiers._coverage import goal_coverage
from stepgraph.verifiers._grounding import grounding_problems
from stepgraph.verifiers._trace import TRACE_TOLERANCE, check_answer_template, trace_answer
from stepgraph.verifiers._verify import check_verdict, verify
from stepgraph.verifiers._words import SaidWord, said_words, write_said_units

__all__ = [
    "TOLERANCE",
    "TRACE_TOLERANCE",
    "SaidWord",
    "check_answer_template",
    "check_verdict",
    "close",
    "goal_coverage",
    "grounding_problems",
    "reverse_calculate",
    "reverse_convert",
    "said_words",
    "trace_answer",
    "verify",
    "write_said_units",
]
