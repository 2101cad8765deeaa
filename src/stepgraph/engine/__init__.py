"""The engine: one run, stage by stage (plan, approve, execute, verify, repair, answer).

Replay and resume drive the same pipeline from a journal, through `Engine.run`.
"""

from stepgraph.engine._approval import (
    HOW_TO_APPROVE,
    Approver,
    Decision,
    ParkingApprover,
    PlanFile,
    PlanView,
    RunParked,
    effective_policy,
    plan_view,
)
from stepgraph.engine._budget import (
    BUDGET_LABELS,
    BudgetKeeper,
    journal_budget,
    journal_usage,
    model_cost,
)
from stepgraph.engine._compare import Divergence, compare
from stepgraph.engine._engine import Engine, check_journal_free, run
from stepgraph.engine._given import check_given_plan
from stepgraph.engine._park import ParkedRun, check_decision, decide, parked
from stepgraph.engine._replay import ReplayReport, replay
from stepgraph.engine._resume import resume
from stepgraph.engine._session import RunConfig, RunOptions, tool_fingerprints

__all__ = [
    "BUDGET_LABELS",
    "HOW_TO_APPROVE",
    "Approver",
    "BudgetKeeper",
    "Decision",
    "Divergence",
    "Engine",
    "ParkedRun",
    "ParkingApprover",
    "PlanFile",
    "PlanView",
    "ReplayReport",
    "RunConfig",
    "RunOptions",
    "check_given_plan",
    "RunParked",
    "check_decision",
    "check_journal_free",
    "compare",
    "decide",
    "effective_policy",
    "journal_budget",
    "journal_usage",
    "model_cost",
    "parked",
    "plan_view",
    "replay",
    "resume",
    "run",
    "tool_fingerprints",
]
