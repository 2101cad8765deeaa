"""Evaluation: run a suite of goals with hand-computed answers and measure the planner.

A suite (YAML, see `examples/eval/suite.yaml`) lists goals in plain language, each
with its expected answer. Every goal runs through the same `Engine` as
`stepgraph run` (plan, approve read-only, execute, verify, repair, answer), one
journal per goal per run. The figures come from the journal (``llm.request``,
``llm.response`` usage, ``plan.proposed`` with purpose and attempt, ``plan.repair``)
and from the `RunResult`:

- *first plan valid*: the first plan attempt gave a valid plan; *valid*: one came
  within the planner's retries;
- *verified*: the engine said so; *correct*: the expected answer was found;
- a run that raises (no valid plan, the model endpoint failed) is neither verified
  nor correct, and keeps its error kind (``invalid`` = exit 3, ``model_failed`` = 7).

Correct, decided in this order: with ``step:`` only that step's value counts;
otherwise the value of the last step of the final plan (in the plan's order, among
the steps that produced a value), else any number of the answer text that is not
also a number of the question. Values are compared with a relative tolerance
(default 1e-3) after unit conversion: a quantity must have the expected dimension
(a bare number is taken in the expected unit), a count compares as a bare number,
a percentage matches as the figure (25) or as the fraction (0.25). Dicts, lists and
text are compared only through the answer's numbers. Correctness is judged for
unverified runs too, so "unverified but right" and "verified but wrong" are both
visible; the headline figures are the verified-but-wrong count (must be 0) and the
verified-correct rate.

External benchmarks (GSM8K, SVAMP) are read from their JSONL files as suites, sampled
with a seed (`load_dataset`); an answer given without stepgraph is read by `final_number`
and judged by the same comparison.
"""

from stepgraph.evaluation._correct import Expected, parse_expected
from stepgraph.evaluation._datasets import DATASETS, detect_dataset, load_dataset
from stepgraph.evaluation._report import Totals, report_document, totals
from stepgraph.evaluation._runner import GoalOutcome, run_goal, run_suite
from stepgraph.evaluation._suite import ExpectedAnswer, Suite, SuiteGoal, load_suite
from stepgraph.exceptions import failure_kind as error_kind
from stepgraph.planner._worked import final_number

__all__ = [
    "DATASETS",
    "Expected",
    "ExpectedAnswer",
    "GoalOutcome",
    "Suite",
    "SuiteGoal",
    "Totals",
    "detect_dataset",
    "error_kind",
    "final_number",
    "load_dataset",
    "load_suite",
    "parse_expected",
    "report_document",
    "run_goal",
    "run_suite",
    "totals",
]
